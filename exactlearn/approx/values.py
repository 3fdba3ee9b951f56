"""Vector outputs on the approximate path: the heads from one readout, the value matrices from every answer.

A vector oracle answers, at the final token, ``f(X) = c0 + sum_h sum_i a_{h,i}(X) V_h x_i`` in
``R^D``, where ``a_{h,i}`` is the softmax of the scores ``x_i^T W_h x_N (+ w_h^T x_i)`` and ``V_h`` is
``D x d`` (docs/approximate.md, "Vector outputs"). :func:`~exactlearn.approx.learn_approx` learns it
from one set of queries in two steps:

1. the scalar learner (:func:`~exactlearn.approx.learn_approx`) runs on ``r . f`` for a readout
   ``r`` drawn from the seed (:class:`ReadoutOracle`, which keeps every whole answer): it recovers
   ``W_h`` (and ``w_h``) and ``v_h = V_h^T r``;
2. with ``W_h`` known, every answer is linear in the unknowns: ``f(X) = c0 + sum_h V_h phi_h(X)`` with
   ``phi_h(X) = sum_i a_{h,i}(X) x_i``. One least-squares solve over all the answers (the normal
   equations in arb at the run's precision) gives every ``V_h`` and ``c0`` (:func:`fit_values`).

Step 2 asks no query. The value matrices inherit the heads' error and the answers' noise; the result
estimates their error from the fit's residuals (an estimate, not a bound).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import mpmath
import numpy as np
from flint import arb, arb_mat, fmpq

from .. import display
from ..errors import OracleOutputError, UndeterminedFitError
from ..exact import rational_str
from ..settings import DEFAULT_SETTINGS, ApproxSettings
from ..validate import is_sequence
from .bounds.estimate import matrix_scale
from .core.balls import as_fmpq, to_arb, to_mpf, working_precision
from .core.recovery import ApproxHead, ApproxRecovery, approx_head_latex
from .joint import JointFit, refine_jointly

__all__ = ["Answered", "ReadoutOracle", "VectorApproxRecovery", "distinct_answers", "draw_readout",
           "fit_values", "refine_scalar", "refine_vector"]


def draw_readout(outputs: int, seed: Any, settings: ApproxSettings = DEFAULT_SETTINGS.approx
                 ) -> tuple[fmpq, ...]:
    """The readout ``r`` of a seed: ``outputs`` rationals ``+-k/q``, ``q/2 <= k <= q``
    (``q = ApproxSettings.readout_denominator``).

    >>> [str(x) for x in draw_readout(3, 0)] == [str(x) for x in draw_readout(3, 0)]
    True
    """
    rng = random.Random(f"exactlearn.readout:{seed!r}")
    q = settings.readout_denominator
    return tuple(fmpq(rng.choice((-1, 1)) * rng.randint(q // 2, q), q) for _ in range(outputs))


@dataclass(frozen=True)
class Answered:
    """A query as the value fit needs it: its distinct tokens with their multiplicities, its final
    token, and the whole answer."""

    points: tuple[tuple[tuple, int], ...]
    last: tuple
    values: tuple[Any, ...]

    @classmethod
    def of(cls, tokens: Sequence[Sequence[Any]], values: Sequence[Any]) -> Answered:
        """Group ``tokens`` (a copy query repeats one token object ``k`` times: grouped by identity
        first, then by value)."""
        by_id: dict[int, list] = {}
        for t in tokens:
            entry = by_id.get(id(t))
            if entry is None:
                by_id[id(t)] = [t, 1]
            else:
                entry[1] += 1
        merged: dict[tuple, int] = {}
        for t, count in by_id.values():
            key = tuple(t)
            merged[key] = merged.get(key, 0) + count
        return cls(tuple(merged.items()), tuple(tokens[-1]), tuple(values))


class ReadoutOracle:
    """A vector oracle seen through the readout ``r``: answers ``r . f(X)`` exactly (rationals) and
    keeps every query with its whole answer (``log``) for :func:`fit_values`.

    Declares ``d`` and ``affine`` as the vector oracle does, and ``eps = |r|_1 eps_f`` when
    ``eps_f`` bounds the error of every coordinate."""

    def __init__(self, oracle: Callable[[list], Any], readout: Sequence[fmpq], eps: fmpq | None,
                 d: Any = None, affine: Any = None):
        self.oracle, self.readout = oracle, tuple(readout)
        self.eps = None if eps is None else eps * sum(abs(r) for r in self.readout)
        self.d, self.affine = d, affine
        self.log: list[Answered] = []

    def __call__(self, tokens: list) -> fmpq:
        answer = self.oracle(tokens)
        D = len(self.readout)
        if not is_sequence(answer) or len(answer) != D:
            raise OracleOutputError(f"the oracle declares outputs = {D} but answered {type(answer).__name__}"
                                    f"{'' if not is_sequence(answer) else f' of length {len(answer)}'}")
        values = tuple(as_fmpq(y, "an entry of the oracle's answer", OracleOutputError) for y in answer)
        self.log.append(Answered.of(tokens, values))
        return sum((r * y for r, y in zip(self.readout, values)), fmpq(0))


@dataclass(frozen=True)
class ValueFit:
    """What :func:`fit_values` returns: ``V[h]`` (``D x d``), the offset ``c0`` (``D``; ``None``
    unless affine), the answers' residual scatter ``noise`` and the implied largest error ``error``."""

    V: tuple[list[list[mpmath.mpf]], ...]
    c0: list[mpmath.mpf] | None
    noise: float
    error: float


def _features(query: Answered, Ws: arb_mat, ws: arb_mat, H: int, d: int) -> list[arb]:
    """``phi_h(X) = sum_i a_{h,i}(X) x_i`` for every head, concatenated (a query's row of the fit).

    ``Ws`` stacks the heads' ``W_h`` (``Hd x d``), ``ws`` their ``w_h`` (``Hd x 1``)."""
    T = arb_mat([[to_arb(x, "a token entry") for x in token] for token, _ in query.points])
    last = arb_mat([[to_arb(x, "a token entry")] for x in query.last])
    u = Ws * last + ws
    S = T * arb_mat([[u[h * d + a, 0] for h in range(H)] for a in range(d)])  # scores, m x H
    A = []
    for h in range(H):
        top = max((S[j, h] for j in range(len(query.points))), key=lambda x: x.mid())
        column = [count * (S[j, h] - top).exp() for j, (_, count) in enumerate(query.points)]
        total = sum(column, arb(0))
        A.append([c / total for c in column])
    Phi = T.transpose() * arb_mat([[A[h][j] for h in range(H)] for j in range(len(query.points))])
    return [Phi[a, h] for h in range(H) for a in range(d)]


def fit_values(log: Sequence[Answered], heads: Sequence[ApproxHead], affine: bool,
               precision: int) -> ValueFit:
    """Least squares for ``V_h`` (and ``c0``) over every logged answer, given the recovered heads.

    Raises :class:`~exactlearn.UndeterminedFitError` when the answers do not determine them."""
    with working_precision(precision):
        H, d = len(heads), len(heads[0].W) if heads else 0
        Ws = arb_mat([[to_arb(e) for e in row] for h in heads for row in h.W])
        ws = arb_mat([[to_arb(e) if h.w is not None else arb(0)] for h in heads for e in (h.w or [0] * d)])
        rows = [([arb(1)] if affine else []) + _features(query, Ws, ws, H, d) for query in log]
        F = arb_mat([[x.mid() for x in row] for row in rows])
        Y = arb_mat([[arb(y) for y in query.values] for query in log])
        Ft = F.transpose()
        try:
            gram_inverse = (Ft * F).inv()
        except (ZeroDivisionError, ValueError):
            raise UndeterminedFitError(
                f"the {len(log)} answers do not determine the value matrices of {len(heads)} heads "
                f"(their normal equations are singular at {precision} bits)") from None
        B = gram_inverse * (Ft * Y)
        R = Y - F * B
        n, p, D = F.nrows(), F.ncols(), Y.ncols()
        rss = [sum(float(R[i, k].mid()) ** 2 for i in range(n)) for k in range(D)]
        noise = math.sqrt(sum(rss) / max(1, (n - p) * D))
        spread = max(float(gram_inverse[j, j].mid()) for j in range(p))
        off = 1 if affine else 0
        V = tuple([[to_mpf(B[off + h * d + a, k].mid()) for a in range(d)] for k in range(D)]
                  for h in range(len(heads)))
        c0 = [to_mpf(B[0, k].mid()) for k in range(D)] if affine else None
    # answers off by a vector as long as the residual move a coefficient by at most |its row of the
    # pseudo-inverse| |residual| (the residual itself is orthogonal to the fit: a scale, not a bound)
    return ValueFit(V, c0, noise, math.sqrt(max(rss) * max(spread, 0.0)))


@dataclass(repr=False)
class VectorApproxRecovery(ApproxRecovery):
    """The result of :func:`~exactlearn.approx.learn_approx` on a vector oracle: the scalar run on
    the readout ``readout`` (its heads carry ``W``, ``w`` and ``v = V_h^T r``, ``c0`` is ``r . c0``,
    its counts are the oracle's: no other query was asked), and the value matrices.

    ``V[h]`` is head ``h``'s value matrix (``D x d`` mpmath numbers), ``c0_vector`` the offset
    (affine attention; else ``None``). ``value_noise`` / ``value_error_estimate``: the answers'
    residual scatter in the value fit and the largest error of a ``V`` entry it implies (an
    estimate, not a bound). ``model()`` is the readout's scalar model ``r . f``."""

    readout: tuple[fmpq, ...] = ()
    V: tuple[list[list[mpmath.mpf]], ...] = ()
    c0_vector: list[mpmath.mpf] | None = None
    value_noise: float = 0.0
    value_error_estimate: float = 0.0

    @classmethod
    def of(cls, scalar: ApproxRecovery, readout: tuple[fmpq, ...], fit: ValueFit) -> VectorApproxRecovery:
        base = {f.name: getattr(scalar, f.name) for f in fields(ApproxRecovery)}
        return cls(**base, readout=readout, V=fit.V, c0_vector=fit.c0, value_noise=fit.noise,
                   value_error_estimate=fit.error)

    @property
    def outputs(self) -> int:
        """``D``: the length of an answer."""
        return len(self.readout)

    def summary(self) -> str:
        """The scalar run's summary, and the value matrices' estimated error."""
        return (super().summary() + f". Value matrices V_h: the answers scatter by about "
                f"{self.value_noise:.1e} around their fit, which puts their error near "
                f"{self.value_error_estimate:.1e} (an estimate, not a bound)")

    def __repr__(self) -> str:
        return super().__repr__().replace("ApproxRecovery d=", f"VectorApproxRecovery D={self.outputs} d=", 1)

    def _lines(self) -> list[str]:
        out = display.wrapped(repr(self)) + display.wrapped(f"readout r = {display.text(self.readout)}")
        for i, (head, V) in enumerate(zip(self.heads, self.V)):
            out += display.block(f"heads[{i}].", [("W", head.W), ("w", head.w), ("V", V)])
        return out + (display.block("", [("c0", self.c0_vector)]) if self.c0_vector is not None else [])

    def _latex_lines(self) -> list[str]:
        out = [r"\text{" + repr(self)[1:-1] + "}"]
        out += [approx_head_latex(h, i) + rf",\quad V_{{{i}}} = {display.pmatrix(V)}"
                for i, (h, V) in enumerate(zip(self.heads, self.V))]
        return out + ([f"c_0 = {display.pmatrix([self.c0_vector])}"] if self.c0_vector is not None else [])

    def to_dict(self) -> dict:
        def s(x):
            return mpmath.nstr(x, mpmath.mp.dps, strip_zeros=False)
        out = super().to_dict()
        out["format"] = "exactlearn.approx-vector-recovery/1"
        out["readout"] = [rational_str(r) for r in self.readout]
        for head, V in zip(out["heads"], self.V):
            head["V"] = [[s(e) for e in row] for row in V]
        if self.c0_vector is not None:
            out["c0_vector"] = [s(e) for e in self.c0_vector]
        out["value_noise"], out["value_error_estimate"] = self.value_noise, self.value_error_estimate
        return out


def distinct_answers(log: Sequence[Answered]) -> list[Answered]:
    """``log`` with every repeat of a query answered identically left out (a float oracle asked the same
    single token twice): the same answer twice is one observation, not two independent residuals, so
    counting it twice would shrink the refinement's estimate. A query answered differently is kept."""
    return list(dict.fromkeys(log))


def _adopt(rec: ApproxRecovery, log: Sequence[Answered], V: np.ndarray, c0: np.ndarray,
           readout: Sequence[Any], staged: float, settings: ApproxSettings, scalar: bool = False
           ) -> JointFit | None:
    """Refine ``rec``'s heads with value matrices ``V`` (``H x D x d``) and offset ``c0`` (``D``) jointly
    from ``log`` (:func:`~exactlearn.approx.joint.refine_jointly`) and, when the refinement's estimated
    error is below ``staged``, put it in ``rec``: the heads' ``W``, ``w``, ``v = V_h^T r`` (``r`` the
    ``readout``), ``c0 = r . c0``, ``error_estimate`` and ``relative_error_estimate`` (the refinement's:
    of ``W_h`` and ``w_h``, and with ``scalar`` of ``v_h`` and ``c0`` too).
    Every radius becomes the staged radius plus the entry's change (the triangle inequality: the staged
    radius bounds the staged entry's error under ``eps``, to first order, so the sum bounds the refined
    entry's; ``error_bound`` stays a bound, not the refinement's estimate). Returns the refinement kept,
    or ``None`` (``rec`` unchanged)."""
    if not log or not rec.heads:
        return None
    d = rec.d

    def floats(rows: Any) -> np.ndarray:
        return np.array([[float(x) for x in row] for row in rows])

    W = np.array([floats(h.W) for h in rec.heads])
    w = np.array([[float(x) for x in (h.w or [0] * d)] for h in rec.heads])
    joint = refine_jointly(log, W, w, V, c0, rec.affine, settings)
    if joint is None or not joint.rss <= joint.start_rss or not max(joint.error, joint.value_error) < staged:
        return None
    r = np.array([float(x) for x in readout])
    v = np.einsum("k,hkd->hd", r, joint.V)

    def mp(rows: Any) -> list:
        return [mpmath.mpf(float(x)) for x in rows]

    def radii(old: Any, new: np.ndarray, radius: Any) -> list:  # staged radius + |refined - staged|
        return [mpmath.mpf(float(q)) + abs(mpmath.mpf(float(x)) - p) for p, x, q in zip(old, new, radius)]

    rec.heads = tuple(ApproxHead(W=[mp(row) for row in joint.W[h]], v=mp(v[h]),
                                 W_radius=[radii(old, new, q) for old, new, q in zip(head.W, joint.W[h],
                                                                                     head.W_radius)],
                                 v_radius=radii(head.v, v[h], head.v_radius),
                                 w=mp(joint.w[h]) if rec.affine else None,
                                 w_radius=radii(head.w or [], joint.w[h], head.w_radius or [])
                                 if rec.affine else None) for h, head in enumerate(rec.heads))
    if rec.affine:
        c0_refined = mpmath.mpf(float(r @ joint.c0))
        rec.c0_radius = (rec.c0_radius or mpmath.mpf(0)) + abs(c0_refined - (rec.c0 or 0))
        rec.c0 = c0_refined
    top = max(float(np.abs(joint.W).max()), float(np.abs(v).max()), float(np.abs(joint.w).max()))
    rec.error_estimate = max(joint.error, joint.value_error) if scalar else joint.error
    rec.relative_error_estimate = rec.error_estimate / top if top else None
    rec.matrix_error_estimate = _per_matrix(joint, top) if top else None
    return joint


def _per_matrix(joint: JointFit, top: float) -> float:
    """The refinement's estimated error per matrix: the largest over the heads of a ``W_h``'s or ``V_h``'s
    (``v_h^T`` for scalar answers) estimated error over its own largest entry; ``w_h`` and ``c0``, and a
    matrix whose entries are all within its estimated error of zero (a zero matrix, learned as noise),
    over ``top``, the largest of the ``W_h``, ``w_h`` and readout values ``v_h``."""
    def own(error: np.ndarray, entries: np.ndarray) -> float:
        worst = float(error.max(initial=0.0))
        return worst / matrix_scale(float(np.abs(entries).max(initial=0.0)), worst, top)

    heads = [max(own(joint.W_error[h], joint.W[h]), own(joint.V_error[h], joint.V[h]))
             for h in range(len(joint.W))]
    rest = max(float(joint.w_error.max(initial=0.0)), float(joint.c0_error.max(initial=0.0))) / top
    return max(heads + [rest])


def refine_vector(rec: VectorApproxRecovery, log: Sequence[Answered],
                  settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> bool:
    """Refine every parameter of ``rec`` at once from every whole answer in ``log``
    (:func:`~exactlearn.approx.joint.refine_jointly`, no query) and keep the result when its estimated
    error is below the staged one (the larger of the readout run's ``error_estimate`` and
    ``value_error_estimate``; without a readout estimate, below ``value_error_estimate``). ``rec`` is
    changed in place (:func:`_adopt`): the heads' ``W``, ``w``, ``v = V_h^T r`` and their radii (staged
    radius plus change), ``V``, ``c0_vector``, ``c0 = r . c0``, the estimates and a note. Returns whether
    it was kept."""
    log = distinct_answers(log)
    V = np.array([[[float(x) for x in row] for row in Vh] for Vh in rec.V])
    c0 = np.array([float(x) for x in (rec.c0_vector or [0] * rec.outputs)])
    staged = max(rec.error_estimate or 0.0, rec.value_error_estimate)
    joint = _adopt(rec, log, V, c0, rec.readout, staged, settings)
    if joint is None:
        return False

    def mp(rows: Any) -> list:
        return [mpmath.mpf(float(x)) for x in rows]

    rec.V = tuple([mp(row) for row in joint.V[h]] for h in range(rec.num_heads))
    if rec.affine:
        rec.c0_vector = mp(joint.c0)
    rec.value_noise, rec.value_error_estimate = joint.noise, joint.value_error
    rec.notes.append(
        f"refined jointly: every W_h, w_h, V_h and c0 fitted to all {len(log)} distinct whole answers at "
        f"once ({joint.steps} Gauss-Newton steps, residuals {math.sqrt(joint.start_rss):.1e} -> "
        f"{math.sqrt(joint.rss):.1e}); estimated errors {joint.error:.1e} (heads) and "
        f"{joint.value_error:.1e} (values), where the staged fit's was {staged:.1e}")
    return True


def refine_scalar(rec: ApproxRecovery, log: Sequence[Answered],
                  settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> bool:
    """Scalar answers: refine every ``W_h``, ``w_h``, ``v_h`` and ``c0`` of ``rec`` at once from every
    answer in ``log`` (the vector model with ``D = 1``, ``V_h = v_h^T``;
    :func:`~exactlearn.approx.joint.refine_jointly`, no query) and keep the result when its estimated
    error is below the run's ``error_estimate`` (never without one). ``rec`` is changed in place
    (:func:`_adopt`): the heads, ``c0``, their radii (staged radius plus change: ``error_bound`` stays a
    first-order bound under ``eps``), ``error_estimate``, ``relative_error_estimate`` and a note. Returns
    whether it was kept."""
    if rec.error_estimate is None or not rec.heads:
        return False
    log = distinct_answers(log)
    V = np.array([[[float(x) for x in h.v]] for h in rec.heads])
    c0 = np.array([float(rec.c0) if rec.affine and rec.c0 is not None else 0.0])
    staged = rec.error_estimate
    joint = _adopt(rec, log, V, c0, (1,), staged, settings, scalar=True)
    if joint is None:
        return False
    rec.notes.append(
        f"refined jointly: every W_h, w_h, v_h and c0 fitted to all {len(log)} distinct answers at once "
        f"({joint.steps} Gauss-Newton steps, residuals {math.sqrt(joint.start_rss):.1e} -> "
        f"{math.sqrt(joint.rss):.1e}); estimated error {rec.error_estimate:.1e}, where the "
        f"run's was {staged:.1e} (error_bound: the run's first-order bound plus each entry's change)")
    return True
