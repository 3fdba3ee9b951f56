"""Known vector layers: their heads ``(W_h, w_h, V_h)`` and offset ``c0`` (:class:`VectorParameters`),
as a float oracle (:class:`RealVectorOracle`), and how far a vector recovery
(:class:`~exactlearn.approx.values.VectorApproxRecovery`) is from them, matrix by matrix
(:func:`vector_parameter_error`).

>>> from exactlearn.vector import VectorMultiHeadAttention, VectorHead
>>> truth = VectorParameters.of_model(VectorMultiHeadAttention([VectorHead([[1, 2], [2, 1]], [[3, 0]])]))
>>> [[float(x) for x in row] for row in truth.heads[0][2]]
[[3.0, 0.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import mpmath
from flint import arb

from ..errors import InvalidArgumentError
from ..querylog import QueryLog
from .core.balls import DEFAULT_PRECISION, to_arb, to_mpf, working_precision
from .core.models import RealMultiHeadAttention, RealOracle, exact_tokens
from .core.recovery import least_error_matching
from .values import VectorApproxRecovery

__all__ = ["RealVectorOracle", "VectorParameters", "VectorParameterError", "vector_parameter_error"]

Matrix = list[list[mpmath.mpf]]


class VectorParameters(NamedTuple):
    """A known vector layer: ``heads[h] = (W_h, w_h, V_h)`` (``w_h`` ``None`` without score vectors)
    and the offset ``c0`` (``D`` numbers, or ``None``)."""

    heads: list[tuple[Matrix, list[mpmath.mpf] | None, Matrix]]
    c0: list[mpmath.mpf] | None = None

    def shape(self) -> tuple[int, int]:
        """``(d, D)``; :class:`~exactlearn.InvalidArgumentError` unless every ``W_h`` is ``d x d``, every
        ``w_h`` (when given) has ``d`` entries, every ``V_h`` is ``D x d`` and ``c0`` (when given) ``D``."""
        if not self.heads:
            raise InvalidArgumentError("a vector layer needs at least one head")
        d, D = len(self.heads[0][0]), len(self.heads[0][2])
        for h, (W, w, V) in enumerate(self.heads):
            if ([len(row) for row in W] != [d] * d or (w is not None and len(w) != d)
                    or [len(row) for row in V] != [d] * D):
                raise InvalidArgumentError(f"head {h}: W_h must be {d} x {d}, w_h of length {d} and "
                                           f"V_h {D} x {d}, as in head 0")
        if self.c0 is not None and len(self.c0) != D:
            raise InvalidArgumentError(f"c0 must have D = {D} entries, got {len(self.c0)}")
        return d, D

    @classmethod
    def of_model(cls, model: Any, precision: int = DEFAULT_PRECISION) -> VectorParameters:
        """The canonical heads of an exact :class:`~exactlearn.vector.VectorMultiHeadAttention`
        (``W = log exp_W`` at ``precision`` bits)."""
        with working_precision(precision):
            return cls([([[to_mpf(arb(e).log()) for e in row] for row in h.exp_W], None,
                         [[to_mpf(to_arb(e)) for e in row] for row in h.V]) for h in model.canonical().heads])


class RealVectorOracle(QueryLog):
    """A known vector layer answering in mpmath at ``precision`` bits (53 ~ float64): a tuple of ``D``
    numbers, coordinate ``j`` that of the scalar layer whose ``v_h`` is row ``j`` of ``V_h``
    (a :class:`~exactlearn.approx.RealOracle` each, which checks every answer against ``eps``).
    Declares ``d``, ``outputs``, ``eps`` and ``affine``; keeps its own log."""

    def __init__(self, truth: VectorParameters, precision: int = 53, *, eps: Any = None):
        Ws, ws = [W for W, _, _ in truth.heads], [w for _, w, _ in truth.heads]
        self.outputs = truth.shape()[1]
        scores = None if all(w is None for w in ws) else [w if w is not None else [0] * len(W)
                                                          for W, w in zip(Ws, ws)]
        self.rows = [RealOracle(RealMultiHeadAttention(Ws, [V[j] for _, _, V in truth.heads], scores,
                                                       0 if truth.c0 is None else truth.c0[j]),
                                precision, eps=eps) for j in range(self.outputs)]
        self.d, self.eps = self.rows[0].d, self.rows[0].eps
        self.affine = any(row.affine for row in self.rows)
        self.reset()

    def __call__(self, tokens: Sequence[Sequence[Any]]) -> tuple[mpmath.mpf, ...]:
        query = exact_tokens(tokens, self.d)
        with self.answering(query):
            return tuple(row(query) for row in self.rows)


@dataclass(frozen=True)
class VectorParameterError:
    """``max_abs``: the largest ``|error|`` of any entry of ``W_h``, ``w_h``, ``V_h``, ``c0`` (a
    ``w_h`` or ``c0`` absent on one side counts as zero); ``relative``: the largest
    ``max |error| / max |entry|`` over those matrices (a matrix that is zero in the layer against
    the layer's largest entry); ``permutation[i]``: the layer's head matched to recovered head
    ``i``; ``values_max_abs``: the largest ``|error|`` of a ``V_h`` or ``c0`` entry (what
    ``value_error_estimate`` estimates)."""

    max_abs: mpmath.mpf
    relative: mpmath.mpf
    permutation: tuple[int, ...]
    values_max_abs: mpmath.mpf = mpmath.mpf(0)


def _flat(matrix: Sequence[Sequence[Any]] | None) -> list:
    return [] if matrix is None else [x for row in matrix for x in row]


def _or_zero(got: Sequence[Any] | None, ref: Sequence[Any] | None, n: int) -> list[tuple[list, list]]:
    """``[(got, ref)]`` with an absent side as ``n`` zeros; ``[]`` when both are absent."""
    if got is None and ref is None:
        return []
    zero = [mpmath.mpf(0)] * n
    return [(zero if got is None else list(got), zero if ref is None else list(ref))]


def _match(rec: VectorApproxRecovery, truth: VectorParameters) -> tuple[int, ...]:
    """The matching of heads by the least largest ``W`` error (:func:`least_error_matching`)."""
    return least_error_matching([[max(abs(a - b) for a, b in zip(_flat(head.W), _flat(W)))
                                  for W, _, _ in truth.heads] for head in rec.heads])


def vector_parameter_error(rec: VectorApproxRecovery, truth: VectorParameters) -> VectorParameterError:
    """Compare a vector recovery with a known layer, matrix by matrix."""
    if len(truth.heads) != rec.num_heads:
        raise InvalidArgumentError(f"the recovery has {rec.num_heads} heads but the layer has "
                                   f"{len(truth.heads)}")
    if truth.shape() != (rec.d, rec.outputs):
        raise InvalidArgumentError(f"the recovery has d = {rec.d}, D = {rec.outputs} but the layer has "
                                   "d = {}, D = {}".format(*truth.shape()))
    with mpmath.mp.workprec(rec.precision):
        best = _match(rec, truth)
        scores: list[tuple[list, list]] = []
        values = _or_zero(rec.c0_vector, truth.c0, rec.outputs)
        for i, j in enumerate(best):
            W, w, V = truth.heads[j]
            scores += [(_flat(rec.heads[i].W), _flat(W))] + _or_zero(rec.heads[i].w, w, len(W))
            values.append((_flat(rec.V[i]), _flat(V)))
        top = max(abs(x) for _, ref in scores + values for x in ref)
        errors = [max(abs(a - b) for a, b in zip(got, ref)) for got, ref in scores + values]
        relative = max(e / (max(abs(x) for x in ref) or top) for e, (_, ref) in zip(errors, scores + values))
    return VectorParameterError(+max(errors), +relative, tuple(best), +max(errors[len(scores):]))
