"""Checks of the learned heads against the answers (docs/algorithm.md section 6).

Written once over a :class:`~exactlearn.field.Field`: the learner calls them
after solving, whatever numbers it computes with.

>>> from flint import fmpq
>>> from exactlearn.exactfield import ExactRationals
>>> F = ExactRationals()
>>> vector_sum(F, [(fmpq(1), fmpq(2)), (fmpq(3), fmpq(-1))], 2)
[4, 1]
>>> distinct(F, [fmpq(1), fmpq(2)]), distinct_vectors(F, [(fmpq(1),), (fmpq(1),)])
(True, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import ReconstructionError
from .exact import Token
from .field import Field
from .ratfun import known_value_at_zero
from .schedule import Configuration, full_rank, sub_tokens, value_row
from .states import Linearity, Why

__all__ = ["vector_sum", "distinct", "distinct_vectors", "predicts", "single_tokens_linear",
           "single_token_linearity", "LinearityGate"]


def vector_sum(field: Field, vectors: Sequence[Sequence[Any]], d: int) -> list:
    """``sum_h v_h`` (``u``), the field's zero vector when there are no heads."""
    if not vectors:
        return [field.element(0) for _ in range(d)]
    out = list(vectors[0])
    for v in vectors[1:]:
        out = [a + b for a, b in zip(out, v)]
    return out


def distinct(field: Field, values: Sequence[Any]) -> bool:
    """Are the numbers pairwise different?"""
    return all(not field.equal(values[a], values[b], Why.DISTINCT)
               for a in range(len(values)) for b in range(a))


def distinct_vectors(field: Field, vectors: Sequence[Sequence[Any]]) -> bool:
    """Are the vectors pairwise different (in some entry)?"""
    return all(any(not field.equal(p, q, Why.DISTINCT) for p, q in zip(vectors[a], vectors[b]))
               for a in range(len(vectors)) for b in range(a))


def predicts(field: Field, weights: Sequence, values: Sequence, u: Sequence, cfg: Configuration,
             c0: Any = None) -> bool:
    """Do the learned heads reproduce every answer of ``cfg`` (``R(k)`` for its ``k``)?

    ``c0`` given: affine attention, each weight the ``(d + 1) x (d + 1)`` matrix ``[[W, w], [0, 0]]``
    (``rho = exp([a; 0]^T M [x; 1])``) and ``R(oo) = c0 + u^T z``.
    """
    left, right = sub_tokens(cfg.z, cfg.x), cfg.x
    if c0 is not None:
        left, right = (*left, 0), (*right, 1)
    terms = []
    for W, v in zip(weights, values):
        try:
            rho = field.rho(W, left, right)
        except ReconstructionError:
            return False  # the learned W predicts an answer outside the field
        terms.append((rho, field.dot(value_row(cfg.x, cfg.z), v)))
    at_inf = field.dot(cfg.z, u) if c0 is None else c0 + field.dot(cfg.z, u)
    for k, value in zip(cfg.points, cfg.values):
        predicted = at_inf
        for rho, c in terms:
            if isinstance(k, int):
                predicted = predicted + c / (rho * k + 1)
            else:  # a copy ratio k = p/m of an approximate field: c m / (rho p + m)
                predicted = predicted + c * k.denominator / (rho * k.numerator + k.denominator)
        if not field.equal(predicted, value, Why.CONSISTENT):
            return False
    return True


def single_tokens_linear(field: Field, d: int, configurations: Sequence[Configuration], *,
                         affine: bool = False) -> bool:
    """Necessary for any attention: ``f([x]) = u^T x`` is linear in ``x`` (``affine``: ``c0 + u^T x``
    is affine in ``x``). False only when the answers rule it out."""
    return single_token_linearity(field, d, configurations, affine=affine) is not Linearity.NOT_LINEAR


def single_token_linearity(field: Field, d: int, configurations: Sequence[Configuration], *,
                           affine: bool = False) -> Linearity:
    """Whether the answered single tokens fit one linear (``affine``: affine) map of ``x``, or cannot tell."""
    seen: dict[Token, Any] = {}
    for c in configurations:
        if c.values and 0 in c.points:
            seen[(*c.x, 1) if affine else c.x] = known_value_at_zero(c.points, c.values, None)
    rows = list(seen)
    width = d + 1 if affine else d
    if len(rows) <= width or not full_rank(rows, width):
        return Linearity.UNDECIDED
    try:
        field.solve_values(rows, [[seen[r] for r in rows]])
    except ReconstructionError:
        return Linearity.NOT_LINEAR
    return Linearity.LINEAR


class LinearityGate:
    """When a run repeats :func:`single_token_linearity`: once the answered single tokens have grown by
    ``growth`` since the last conclusive check, or at a ``last`` chance; otherwise the check is skipped
    (``UNDECIDED``), so a long run solves its growing system a logarithmic number of times."""

    def __init__(self, growth: int) -> None:
        self.growth, self.checked = growth, 0  # single tokens at the last conclusive check

    def check(self, field: Field, d: int, configurations: Sequence[Configuration], *, affine: bool = False,
              last: bool = False) -> Linearity:
        singles = sum(1 for c in configurations if c.values and 0 in c.points)
        if not last and singles < self.growth * self.checked:
            return Linearity.UNDECIDED
        linearity = single_token_linearity(field, d, configurations, affine=affine)
        if linearity is Linearity.LINEAR:
            self.checked = singles
        return linearity
