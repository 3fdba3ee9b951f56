"""A number field ``K = Q(a)`` with a chosen real embedding.

``NumberField("a^3 - 2")`` (or coefficients from the constant term up,
``[-2, 0, 0, 1]``) and the real root ``a`` stands for: ``root=`` an isolating
interval ``(lo, hi)`` or an approximation (nearer to that root than half its
distance to the other real roots); it may be left out when there is one real
root. The polynomial must be irreducible over ``Q`` (python-flint's
``fmpq_poly.factor``) and within the size limits
(:class:`~exactlearn.Limits`: ``field_degree``, ``field_bits``). Elements are
:class:`~exactlearn.numberfield.element.NumberFieldElement`; ``K(x)`` reads an
element from a rational, another element or a text such as ``"3/2 - a/5"``.

>>> K = NumberField("a^2 - 2", root=1.414)
>>> print(K)
Q(a) with a^2 - 2 = 0, a ~ 1.414214
>>> K("3/2 - a/5") * 5 == K("15/2 - a")
True
>>> print(K.root, K.gen ** 2)
1.41421356237310 2
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from flint import arb, arb_poly, ctx, fmpq, fmpq_poly, fmpz

from ..errors import NumberFieldError
from ..exact import as_rational, rational_str
from ..limits import DEFAULT_LIMITS, Limits
from .element import NumberFieldElement
from .embedding import RealRoot
from .syntax import POLYNOMIALS, Ring, parse

__all__ = ["NumberField", "FIELD_FORMAT"]

FIELD_FORMAT = "exactlearn.numberfield/1"


def _defining(polynomial: Any) -> tuple[str | None, fmpq_poly]:
    """The generator's name (if the text gives one) and the polynomial."""
    if isinstance(polynomial, str):
        return parse(polynomial, POLYNOMIALS)
    if isinstance(polynomial, fmpq_poly):
        return None, polynomial
    if isinstance(polynomial, (str, bytes)) or not isinstance(polynomial, Sequence):
        raise NumberFieldError(f"a number field is given by a polynomial such as 'a^3 - 2' or its "
                               f"coefficients from the constant term up, got {type(polynomial).__name__}")
    return None, fmpq_poly([as_rational(c, "coefficient", NumberFieldError) for c in polynomial])


def _check(poly: fmpq_poly, limits: Limits, name: str) -> None:
    """Degree, size and irreducibility (python-flint's factorisation over ``Q``)."""
    n = poly.degree()
    if n < 1:
        raise NumberFieldError(f"the polynomial {poly} is constant; a number field needs degree >= 1")
    if n > limits.field_degree:
        raise NumberFieldError(f"the polynomial has degree {n}, above the limit {limits.field_degree} of a "
                               f"number field; pass limits=Limits(field_degree=...) to lift it")
    bits = max(int(c.bit_length()) for c in poly.numer().coeffs())
    if bits > limits.field_bits:
        raise NumberFieldError(f"a coefficient of the polynomial has {bits} bits, above the limit "
                               f"{limits.field_bits}; pass limits=Limits(field_bits=...) to lift it")
    _, factors = poly.factor()
    if len(factors) != 1 or factors[0][1] != 1:
        shown = " * ".join(f"({_text(g, name)})" + (f"^{m}" if m > 1 else "") for g, m in factors)
        raise NumberFieldError(f"the polynomial is reducible over Q: {shown}; give one irreducible factor "
                               f"(the minimal polynomial of the root you mean)")


def _text(poly: fmpq_poly, name: str) -> str:
    """``"a^3 - 2"``: highest power first (readable by :func:`~exactlearn.numberfield.syntax.parse`)."""
    out = []
    for k in range(poly.degree(), -1, -1):
        c = poly.coeffs()[k]
        if c == 0:
            continue
        mag = -c if c < 0 else c
        mono = "" if k == 0 else (name if k == 1 else f"{name}^{k}")
        text = rational_str(mag) if not mono else (mono if mag == 1 else f"{rational_str(mag)}*{mono}")
        out.append(("-" if c < 0 else "+", text))
    first = ("-" if out[0][0] == "-" else "") + out[0][1]
    return first + "".join(f" {s} {t}" for s, t in out[1:])


class NumberField:
    """``K = Q(a)``, ``a`` a chosen real root of an irreducible polynomial (see the module docstring).

    Attributes: ``name`` (of the generator), ``degree``, ``polynomial`` (the
    minimal polynomial, monic, ``fmpq_poly``), ``root`` (a
    :class:`~exactlearn.numberfield.embedding.RealRoot`), ``gen`` (``a`` as an element).
    """

    def __init__(self, polynomial: Any, root: Any = None, *, name: str | None = None,
                 limits: Limits = DEFAULT_LIMITS):
        found, poly = _defining(polynomial)
        if name is not None and found is not None and name != found:
            raise NumberFieldError(f"the polynomial is written in {found!r} but name={name!r}")
        self.name = name or found or "a"
        _check(poly, limits, self.name)
        self.degree = poly.degree()
        self.polynomial = poly / poly.leading_coefficient()
        self.modulus = self.polynomial
        self.root = RealRoot.choose(self.polynomial, root, _text(self.polynomial, self.name))
        self.interval = (self.root.lo, self.root.hi)  # the isolating interval as chosen (for JSON)
        self._ring = Ring(self._constant, lambda: self.gen, lambda x, y: x / y, negative_powers=True)

    # -- elements ---------------------------------------------------------------
    def reduce(self, poly: fmpq_poly) -> fmpq_poly:
        """``poly`` modulo the minimal polynomial."""
        return poly if poly.degree() < self.degree else poly % self.modulus

    def _constant(self, q: fmpq) -> NumberFieldElement:
        return NumberFieldElement(self, fmpq_poly([q]))

    def from_coordinates(self, coordinates: Sequence[Any]) -> NumberFieldElement:
        """``sum coordinates[k] a^k``."""
        return NumberFieldElement(self, self.reduce(fmpq_poly(list(coordinates))))

    @property
    def gen(self) -> NumberFieldElement:
        """The generator ``a``."""
        return NumberFieldElement(self, self.reduce(fmpq_poly([0, 1])))

    def zero(self) -> NumberFieldElement:
        return self._constant(fmpq(0))

    def __call__(self, value: Any) -> NumberFieldElement:
        """``value`` as an element: an element of this field, a rational, ``fmpq_poly`` or a text."""
        if isinstance(value, NumberFieldElement):
            if value.field is self or value.field == self:
                return value
            if value.is_rational():
                return self._constant(value.rational())
            raise NumberFieldError(f"{value} is an element of {value.field}, not of {self}")
        if isinstance(value, str):
            return parse(value, self._ring, name=self.name)[1] + 0  # (+ 0: a constant text gives an element)
        if isinstance(value, fmpq_poly):
            return NumberFieldElement(self, self.reduce(value))
        if isinstance(value, (int, fmpz, fmpq, Fraction)) and not isinstance(value, bool):
            return self._constant(as_rational(value))
        if type(value).__module__.startswith("sympy") and getattr(value, "is_Rational", False):
            return self._constant(as_rational(value))
        raise NumberFieldError(f"cannot read {type(value).__name__} {value!r} as an element of {self}; give "
                               f"an element, a rational, or a text such as '3/2 - {self.name}/5'")

    def approximate(self, poly: fmpq_poly, digits: int = 15) -> str:
        """The value of ``poly`` at the root, to ``digits`` digits (display only)."""
        if poly.degree() <= 0:
            return rational_str(poly.coeffs()[0] if not poly.is_zero() else fmpq(0))
        prec = int(digits * 3.33) + 32
        with ctx.workprec(prec):
            value = arb_poly([arb(c) for c in poly.coeffs()])(self.root.ball(prec))
            return value.str(digits, radius=False)

    # -- identity, display, JSON --------------------------------------------------
    def key(self) -> tuple:
        """What makes two fields the same: the minimal polynomial, the generator's name, the root."""
        return (tuple(str(c) for c in self.polynomial.coeffs()), self.name, self.root.index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NumberField):
            return NotImplemented
        return other is self or other.key() == self.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def polynomial_text(self) -> str:
        """The minimal polynomial in the generator's name, highest power first (``"a^2 - 2"``)."""
        return _text(self.polynomial, self.name)

    def __str__(self) -> str:
        return f"Q({self.name}) with {self.polynomial_text()} = 0, {self.name} ~ {self.root.approximation(7)}"

    def __repr__(self) -> str:
        lo, hi = (rational_str(x) for x in self.interval)
        return f"NumberField({self.polynomial_text()!r}, root=({lo!r}, {hi!r}))"

    def to_dict(self) -> dict:
        """JSON-ready: the minimal polynomial and an isolating interval of the root (exact rationals)."""
        return {"format": FIELD_FORMAT, "polynomial": self.polynomial_text(),
                "root_interval": [rational_str(x) for x in self.interval]}

    @classmethod
    def from_dict(cls, data: Any, limits: Limits = DEFAULT_LIMITS) -> NumberField:
        if not isinstance(data, dict) or "polynomial" not in data or "root_interval" not in data:
            raise NumberFieldError("a number field is a JSON object with 'polynomial' and 'root_interval'")
        if data.get("format", FIELD_FORMAT) != FIELD_FORMAT:
            raise NumberFieldError(f"unknown number field format {data.get('format')!r}; "
                                   f"expected {FIELD_FORMAT!r}")
        interval = data["root_interval"]
        if not isinstance(interval, list) or not all(isinstance(x, str) for x in interval):
            raise NumberFieldError("'root_interval' is a list of two rationals written as strings")
        return cls(data["polynomial"], root=tuple(interval), limits=limits)

    def __reduce__(self) -> tuple:
        return (NumberField.from_dict, (self.to_dict(),))
