"""Elements of ``Q(E, V)``: reduced fractions of python-flint ``fmpq_mpoly``.

An :class:`Element` carries an optional ``label`` (what it is, for the ledger's
"where") and its field, a :class:`~exactlearn.symbolic.field.SymbolicField`,
which divides (recording the divisor) and compares.

>>> from exactlearn.symbolic.field import SymbolicField
>>> F = SymbolicField(1, 1)
>>> E = F.E[0][0][0]
>>> (E * E / E == E, str(E + 1), (E - F.V[0][0]).label)
(True, 'E_0_0_0 + 1', 'E_0_0_0 - V_0_0')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flint import fmpq, fmpq_mpoly, fmpz

if TYPE_CHECKING:  # annotations only: the field module imports this one
    from .field import SymbolicField

__all__ = ["Element"]

_LABEL_LIMIT = 240


def _join_labels(a: Element, op: str, b: Element) -> str | None:
    if a.label is None or b.label is None:
        return None
    text = f"{a.label} {op} {b.label}"
    return text if len(text) <= _LABEL_LIMIT else None


class Element:
    """An element ``num / den`` of ``Q(E, V)``, reduced, ``den`` with leading coefficient 1.

    Supports ``+``, ``-``, ``*`` (with elements, ints and ``fmpq``) and ``/``
    (which records the divisor in the field's ledger, kind ``"division"``).
    ``==`` is exact structural equality and records nothing; the schedule
    compares through :meth:`SymbolicField.equal`, which records.

    ``label`` (what the element is, e.g. ``"c[1] of (x=(1,), z=(0,))"``) and
    ``source`` (the query tokens whose answer it is) are bookkeeping for
    reports only; they do not take part in equality.
    """

    __slots__ = ("field", "num", "den", "label", "source")

    def __init__(self, field: SymbolicField, num: fmpq_mpoly, den: fmpq_mpoly | None = None, *,
                 reduced: bool = False, label: str | None = None, source: Any = None):
        self.field = field
        self.label = label
        self.source = source
        if den is None:
            self.num, self.den = num, field.ctx.constant(1)
            return
        if den.is_zero():
            raise ZeroDivisionError("an element of Q(E, V) cannot have denominator zero")
        if num.is_zero():
            self.num, self.den = num, field.ctx.constant(1)
            return
        if not reduced:
            g = num.gcd(den)
            if not g.is_one():
                num, den = num / g, den / g
        lc = den.leading_coefficient()
        if lc != 1:
            num, den = num / lc, den / lc
        self.num, self.den = num, den

    # -- conversions ------------------------------------------------------------
    def _coerce(self, other: Any) -> Element | None:
        if isinstance(other, Element):
            if other.field is not self.field:
                raise TypeError("elements of different symbolic fields cannot be combined")
            return other
        if isinstance(other, (int, fmpz, fmpq)) and not isinstance(other, bool):
            return self.field.constant(other)
        return None

    def is_zero(self) -> bool:
        return self.num.is_zero()

    def is_constant(self) -> bool:
        return self.num.is_constant() and self.den.is_constant()

    def evaluate(self, values: Sequence) -> fmpq:
        """The rational number at the point ``values`` (one per generator of ``field.ctx``, in order)."""
        den = self.den(*values)
        if den == 0:
            raise ZeroDivisionError("the denominator vanishes at this point")
        return self.num(*values) / den

    # -- arithmetic (Henrici's gcd-economical formulas, Knuth TAOCP 4.5.1) ------
    def __add__(self, other: Any) -> Element:
        b = self._coerce(other)
        if b is None:
            return NotImplemented
        return self._add(b, 1)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Element:
        b = self._coerce(other)
        if b is None:
            return NotImplemented
        return self._add(b, -1)

    def __rsub__(self, other: Any) -> Element:
        b = self._coerce(other)
        if b is None:
            return NotImplemented
        return b._add(self, -1)

    def _add(self, b: Element, sign: int) -> Element:
        F = self.field
        label = _join_labels(self, "+" if sign > 0 else "-", b)
        bnum = b.num if sign > 0 else -b.num
        if b.num.is_zero():
            return Element(F, self.num, self.den, reduced=True, label=label)
        if self.num.is_zero():
            return Element(F, bnum, b.den, reduced=True, label=label)
        d1 = self.den.gcd(b.den)
        if d1.is_one():
            return Element(F, self.num * b.den + bnum * self.den, self.den * b.den, reduced=True, label=label)
        t = self.num * (b.den / d1) + bnum * (self.den / d1)
        if t.is_zero():
            return Element(F, t, None, label=label)
        d2 = t.gcd(d1)
        return Element(F, t / d2, (self.den / d1) * (b.den / d2), reduced=True, label=label)

    def __neg__(self) -> Element:
        return Element(self.field, -self.num, self.den, reduced=True, label=None)

    def __mul__(self, other: Any) -> Element:
        F = self.field
        if isinstance(other, (int, fmpz, fmpq)) and not isinstance(other, bool):
            return Element(F, self.num * other, self.den, reduced=True) if other != 0 else F.zero()
        b = self._coerce(other)
        if b is None:
            return NotImplemented
        if self.num.is_zero() or b.num.is_zero():
            return F.zero()
        g1 = self.num.gcd(b.den)
        g2 = b.num.gcd(self.den)
        return Element(F, (self.num / g1) * (b.num / g2), (self.den / g2) * (b.den / g1), reduced=True,
                       label=_join_labels(self, "*", b))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Element:
        b = self._coerce(other)
        if b is None:
            return NotImplemented
        return self.field.divide(self, b, "division")

    def __rtruediv__(self, other: Any) -> Element:
        b = self._coerce(other)
        if b is None:
            return NotImplemented
        return self.field.divide(b, self, "division")

    def __pow__(self, e: int) -> Element:
        if not isinstance(e, int) or e < 0:
            raise ValueError("only non-negative integer powers")
        return Element(self.field, self.num**e, self.den**e, reduced=True)

    # -- comparison and display -------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, (int, fmpz, fmpq)) and not isinstance(other, bool):
            other = self.field.constant(other)
        if not isinstance(other, Element):
            return NotImplemented
        return other.field is self.field and self.num == other.num and self.den == other.den

    def __hash__(self) -> int:
        return hash((str(self.num), str(self.den)))

    def key(self) -> tuple[str, str]:
        """A deterministic sort key (the printed numerator and denominator)."""
        return (str(self.num), str(self.den))

    def __str__(self) -> str:
        if self.den.is_one():
            return str(self.num)
        return f"({self.num})/({self.den})"

    def __repr__(self) -> str:
        return f"Element({self})"
