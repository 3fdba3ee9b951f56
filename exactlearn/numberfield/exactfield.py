"""The schedule's field seam over a number field: :class:`ExactNumberField`, and ``K`` taken from the answers.

:class:`ExactNumberField` is to a :class:`~exactlearn.NumberField` ``K`` what
:class:`~exactlearn.exactfield.ExactRationals` is to ``Q``: the one schedule of
:mod:`exactlearn.learn` runs over it unchanged. The value vectors are solved by
the algebra shared with every exact field (:class:`~exactlearn.exactfield.ExactField`);
copy functions, poles and residues by :mod:`~exactlearn.numberfield.copyfun`; ``exp(W_h)`` by
:mod:`~exactlearn.numberfield.exp` (an :class:`ExpMatrix`, exact in ``K``).

:class:`FieldFromAnswers` is the field of :func:`exactlearn.learn` when no
``field=`` is given: ``Q`` (exactly :class:`~exactlearn.exactfield.ExactRationals`)
until an answer is an element of a number field ``K``, then ``K``.

>>> from exactlearn import NumberField
>>> K = NumberField("a^2 - 2", root=1.414)
>>> F = FieldFromAnswers()
>>> F.element(3), F.number_field is None
(3, True)
>>> F.element(K("1 + a")), F.number_field == K
(1 + a, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flint import fmpq_mat

from ..errors import OracleOutputError
from ..exact import Token, oracle_value
from ..exactfield import ExactField, ExactRationals
from ..fastlink import PredictedLink
from ..field import Field
from ..limits import DEFAULT_LIMITS, Limits
from ..ratfun import CopyTerms
from ..states import LinkKind, Why
from ..vector.field import VectorAnswers
from .copyfun import copy_terms
from .element import NumberFieldElement
from .exp import exp_matrix
from .field import NumberField
from .models import power_product

__all__ = ["ExactNumberField", "FieldFromAnswers", "ExpMatrix"]


@dataclass(frozen=True)
class ExpMatrix:
    """A learned ``W`` over a number field, held as ``exp(W)`` (entries exact in ``field``, positive).

    The number-field counterpart of :class:`~exactlearn.logspace.LogMatrix`:
    ``exp()`` gives the entries, :meth:`rho` the score ratio of two tokens.
    """

    field: NumberField
    entries: tuple[tuple[NumberFieldElement, ...], ...]

    @property
    def d(self) -> int:
        return len(self.entries)

    @property
    def is_rational(self) -> bool:
        """Always true: ``exp(W)`` is exact in the field (as RecoveredHead asks)."""
        return True

    def exp(self) -> tuple[tuple[NumberFieldElement, ...], ...]:
        return self.entries

    def rho(self, left: Token, right: Token) -> NumberFieldElement:
        """``exp(left^T W right) = prod E[a][b]^(left[a] right[b])``."""
        return power_product(self.entries, left, right)

    def to_dict(self) -> dict:
        return {"field": self.field.to_dict(), "exp_W": [[str(e) for e in row] for row in self.entries]}

    def __str__(self) -> str:
        rows = ("[" + ", ".join(str(e) for e in row) + "]" for row in self.entries)
        return "log [" + ",\n     ".join(rows) + "]"


class ExactNumberField(ExactField):
    """A number field ``K`` behind the :class:`~exactlearn.field.Field` seam; every comparison is exact."""

    name = "a number field (python-flint fmpq_poly modulo the minimal polynomial)"

    def __init__(self, K: NumberField, limits: Limits = DEFAULT_LIMITS):
        self.K = K
        self.exp_bits = limits.exp_bits

    def __repr__(self) -> str:
        return f"ExactNumberField({self.K!r})"

    def size_bits(self, a: NumberFieldElement) -> int:
        """Bits of the coordinates of ``a`` over the power basis (numerators and one denominator)."""
        poly = a.poly
        return poly.denom().bit_length() + sum(c.bit_length() for c in poly.numer().coeffs())

    def element(self, raw: Any) -> NumberFieldElement:
        """An answer in ``K``: an element of ``K`` or an exact rational (anything else: OracleOutputError)."""
        if isinstance(raw, NumberFieldElement):
            if raw.field is self.K or raw.field == self.K:
                return raw
            raise OracleOutputError(f"the oracle answered {raw}, an element of {raw.field}, but the answers "
                                    f"are in {self.K}: an oracle answers in one field (pass the field it "
                                    f"answers in as field=...)")
        try:
            return self.K(oracle_value(raw))
        except OracleOutputError as exc:
            raise OracleOutputError(f"{exc}; over {self.K} an element of the field is expected, "
                                    f"or an exact rational") from None

    def zero(self) -> NumberFieldElement:
        return self.K.zero()

    def equal(self, a: Any, b: Any, why: Why = Why.DISTINCT) -> bool:
        return bool(a == b)

    def copy_terms(self, points, values, n, *, at_zero=None, at_infinity=None) -> CopyTerms:
        return copy_terms(self.K, points, values, n, at_zero=at_zero, at_infinity=at_infinity)

    def solve_weights(self, design: fmpq_mat,  # type: ignore[override]  # ExpMatrix, not a log base
                      rhos: Sequence[Sequence[Any]]) -> list[ExpMatrix]:
        """``exp(W_h)`` exactly in ``K`` for every head (:func:`~exactlearn.numberfield.exp.exp_matrix`)."""
        return [ExpMatrix(self.K, exp_matrix(self.K, design, [self.K(r) for r in per_head], self.exp_bits))
                for per_head in rhos]

    def rho(self, W: ExpMatrix, left: Token, right: Token) -> NumberFieldElement:  # type: ignore[override]
        return W.rho(left, right)


class FieldFromAnswers(Field):
    """``Q`` until an answer is an element of a number field ``K``, then ``K`` (``number_field``).

    Every operation is the active field's: before an element of ``K`` arrives
    that is :class:`~exactlearn.exactfield.ExactRationals`, so a run over
    rational answers is the rational run. Numbers computed before ``K`` arrived
    are rationals, which ``K``'s operations accept.
    """

    def __init__(self, limits: Limits = DEFAULT_LIMITS):
        self.limits = limits
        self.active: Field = ExactRationals()
        self.number_field: NumberField | None = None
        self.name = self.active.name

    def element(self, raw: Any) -> Any:
        if isinstance(raw, (tuple, list)) and raw and self.number_field is None:
            raise VectorAnswers(len(raw))  # the run starts again over Q^D (exactlearn.learn)
        if isinstance(raw, NumberFieldElement) and self.number_field is None:
            self.number_field = raw.field
            self.active = ExactNumberField(raw.field, self.limits)
            self.name = self.active.name
        return self.active.element(raw)

    def zero(self) -> Any:
        return self.active.zero()

    def sample_excess(self, heads: int) -> int:
        return self.active.sample_excess(heads)

    def size_bits(self, a: Any) -> int | None:
        return self.active.size_bits(a)

    def equal(self, a: Any, b: Any, why: Why) -> bool:
        return self.active.equal(a, b, why)

    def dot(self, token: Token, vector: Sequence[Any]) -> Any:
        return self.active.dot(token, vector)

    def copy_terms(self, points, values, n, *, at_zero=None, at_infinity=None) -> CopyTerms:
        return self.active.copy_terms(points, values, n, at_zero=at_zero, at_infinity=at_infinity)

    def link_terms(self, kind: LinkKind, prev: Sequence, cur: Sequence, points: Sequence[int],
                   values: Sequence[Any], n: int, *, at_zero: Any, at_infinity: Any) -> PredictedLink | None:
        return self.active.link_terms(kind, prev, cur, points, values, n, at_zero=at_zero,
                                      at_infinity=at_infinity)

    def solve_values(self, rows: Sequence[Token], residues: Sequence[Sequence[Any]]) -> list[tuple]:
        return self.active.solve_values(rows, residues)

    def solve_weights(self, design: fmpq_mat, rhos: Sequence[Sequence[Any]]) -> list[Any]:
        return self.active.solve_weights(design, rhos)

    def rho(self, W: Any, left: Token, right: Token) -> Any:
        return self.active.rho(W, left, right)
