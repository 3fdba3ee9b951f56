"""Elements of a number field ``K = Q(a)``: rational polynomials in ``a`` modulo the minimal polynomial.

Arithmetic is python-flint's ``fmpq_poly`` (products reduced modulo the monic
minimal polynomial, inverses by ``fmpq_poly.xgcd``), so ``==`` is exact; order
and sign are those of the chosen real embedding, decided exactly
(:meth:`~exactlearn.numberfield.embedding.RealRoot.sign_of`). Rationals (``int``,
``fmpq``, ``Fraction``) mix freely with elements; elements of two different
fields do not (:class:`~exactlearn.NumberFieldError`).

>>> from exactlearn import NumberField
>>> K = NumberField("a^2 - 2", root=1.414)
>>> x = K("1 + a")
>>> print(x * x, 1 / x, x > 2, x.sign())
3 + 2*a -1 + a True 1
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from flint import fmpq, fmpq_poly, fmpz

from ..errors import NumberFieldError
from ..exact import rational_str

if TYPE_CHECKING:  # annotations only: the field module imports this one
    from .field import NumberField

__all__ = ["NumberFieldElement"]

_RATIONAL = (int, fmpz, fmpq, Fraction)


class NumberFieldElement:
    """One element of a :class:`~exactlearn.NumberField`: ``poly`` (degree below the field's) at ``a``."""

    __slots__ = ("field", "poly")

    def __init__(self, field: NumberField, poly: fmpq_poly):
        self.field, self.poly = field, poly

    # -- coercion ---------------------------------------------------------------
    def _other(self, other: Any) -> fmpq_poly | None:
        """``other``'s polynomial in this field, ``None`` for a type that is not a number here."""
        if isinstance(other, NumberFieldElement):
            if other.field is not self.field and other.field != self.field:
                raise NumberFieldError(f"elements of two different fields are mixed: {self.field} and "
                                       f"{other.field}; convert one with K(str(x)), or use one field")
            return other.poly
        if isinstance(other, _RATIONAL) and not isinstance(other, bool):
            return fmpq_poly([fmpq(other.numerator, other.denominator) if isinstance(other, Fraction)
                              else other])
        return None

    def _new(self, poly: fmpq_poly) -> NumberFieldElement:
        return NumberFieldElement(self.field, poly)

    # -- arithmetic -------------------------------------------------------------
    def __add__(self, other: Any) -> NumberFieldElement:
        p = self._other(other)
        return NotImplemented if p is None else self._new(self.poly + p)

    __radd__ = __add__

    def __sub__(self, other: Any) -> NumberFieldElement:
        p = self._other(other)
        return NotImplemented if p is None else self._new(self.poly - p)

    def __rsub__(self, other: Any) -> NumberFieldElement:
        p = self._other(other)
        return NotImplemented if p is None else self._new(p - self.poly)

    def __neg__(self) -> NumberFieldElement:
        return self._new(-self.poly)

    def __pos__(self) -> NumberFieldElement:
        return self

    def __mul__(self, other: Any) -> NumberFieldElement:
        if isinstance(other, (int, fmpq, fmpz)) and not isinstance(other, bool):
            return self._new(self.poly * other)
        p = self._other(other)
        return NotImplemented if p is None else self._new(self.field.reduce(self.poly * p))

    __rmul__ = __mul__

    def inverse(self) -> NumberFieldElement:
        """``1 / self`` by the extended Euclidean algorithm (``ZeroDivisionError`` for zero)."""
        if self.poly.is_zero():
            raise ZeroDivisionError(f"division by zero in {self.field}")
        if self.poly.degree() == 0:
            return self._new(fmpq_poly([1 / self.poly.coeffs()[0]]))
        g, s, _ = self.poly.xgcd(self.field.modulus)
        if not g.is_one():  # pragma: no cover - the minimal polynomial is irreducible
            raise ZeroDivisionError(f"{self} is not invertible in {self.field}")
        return self._new(s)

    def __truediv__(self, other: Any) -> NumberFieldElement:
        if isinstance(other, (int, fmpq, fmpz)) and not isinstance(other, bool):
            if other == 0:
                raise ZeroDivisionError(f"division by zero in {self.field}")
            return self._new(self.poly / other)
        p = self._other(other)
        return NotImplemented if p is None else self * self._new(p).inverse()

    def __rtruediv__(self, other: Any) -> NumberFieldElement:
        p = self._other(other)
        return NotImplemented if p is None else self._new(p) * self.inverse()

    def __pow__(self, e: int) -> NumberFieldElement:
        if isinstance(e, bool) or not isinstance(e, (int, fmpz)):
            return NotImplemented
        e = int(e)
        base = self if e >= 0 else self.inverse()
        e = abs(e)
        result, square = fmpq_poly([1]), base.poly
        while e:
            if e & 1:
                result = self.field.reduce(result * square)
            e >>= 1
            if e:
                square = self.field.reduce(square * square)
        return self._new(result)

    # -- comparison -------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, NumberFieldElement) and other.field != self.field:
            return self.is_rational() and other.is_rational() and self.poly == other.poly
        p = self._other(other)
        return NotImplemented if p is None else self.poly == p

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        if self.is_rational():
            return hash(self.rational())  # equal to the hash of the rational it equals
        return hash((self.field.key(), tuple(self.poly.coeffs())))

    def sign(self) -> int:
        """``-1``, ``0`` or ``1``: the sign in the field's real embedding, decided exactly."""
        return self.field.root.sign_of(self.poly)

    def _compare(self, other: Any) -> int | None:
        p = self._other(other)
        return None if p is None else self._new(self.poly - p).sign()

    def __lt__(self, other: Any) -> bool:
        s = self._compare(other)
        return NotImplemented if s is None else s < 0

    def __le__(self, other: Any) -> bool:
        s = self._compare(other)
        return NotImplemented if s is None else s <= 0

    def __gt__(self, other: Any) -> bool:
        s = self._compare(other)
        return NotImplemented if s is None else s > 0

    def __ge__(self, other: Any) -> bool:
        s = self._compare(other)
        return NotImplemented if s is None else s >= 0

    def __bool__(self) -> bool:
        return not self.poly.is_zero()

    # -- reading it ---------------------------------------------------------------
    def is_rational(self) -> bool:
        return self.poly.degree() <= 0

    def rational(self) -> fmpq:
        """The element as an ``fmpq`` (``ValueError`` if it is not rational)."""
        if not self.is_rational():
            raise ValueError(f"{self} is not rational")
        return self.poly.coeffs()[0] if not self.poly.is_zero() else fmpq(0)

    def coordinates(self) -> list[fmpq]:
        """The ``n`` rational coordinates over ``1, a, ..., a^(n-1)``."""
        c = [fmpq(x) for x in self.poly.coeffs()]
        return c + [fmpq(0)] * (self.field.degree - len(c))

    def bits(self) -> int:
        """Bits of the numerators and the common denominator of the coordinates (a size measure)."""
        den = self.poly.denom()
        return int(den.bit_length()) + sum(int(c.bit_length()) for c in self.poly.numer().coeffs())

    def __float__(self) -> float:
        return float(self.approximation(20))

    def approximation(self, digits: int = 15) -> str:
        """The value in the real embedding to ``digits`` digits (display only)."""
        return self.field.approximate(self.poly, digits)

    def __str__(self) -> str:
        return _format(self.poly, self.field.name)

    __repr__ = __str__

    def __reduce__(self) -> tuple:
        return (_rebuild, (self.field, [rational_str(c) for c in self.poly.coeffs()]))


def _rebuild(field: NumberField, coefficients: list[str]) -> NumberFieldElement:
    """Unpickle an element (python-flint's polynomials do not pickle)."""
    return NumberFieldElement(field, fmpq_poly([fmpq(*map(int, c.split("/"))) for c in coefficients]))


def _format(poly: fmpq_poly, name: str) -> str:
    """``"3/2 - a/5"``, ``"1 + a"``, ``"2*a^2/5"``: constant term first, readable by the field's parser."""
    parts = []
    for k, c in enumerate(poly.coeffs()):
        if c == 0:
            continue
        sign, mag = ("-", -c) if c < 0 else ("+", c)
        if k == 0:
            text = rational_str(mag)
        else:
            mono = name if k == 1 else f"{name}^{k}"
            num = "" if mag.p == 1 else f"{mag.p}*"
            text = f"{num}{mono}" + ("" if mag.q == 1 else f"/{mag.q}")
        parts.append((sign, text))
    if not parts:
        return "0"
    first_sign, first = parts[0]
    out = ("-" if first_sign == "-" else "") + first
    return out + "".join(f" {s} {t}" for s, t in parts[1:])
