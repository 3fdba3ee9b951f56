"""Low-rank weights: the sketch's ``W_h`` once a rank-``r`` fit explains its rows.

In a torch ``MultiheadAttention`` layer ``W_h = W_Q,h W_K,h^T / sqrt(d_k)`` has
rank ``d_k = d / H`` (one for ``d = H``). A rank-``r`` matrix ``W = Q K^T``
(``Q``, ``K`` of shape ``d x r``) has ``r (2d - r)`` parameters, fewer than the
``d^2`` scores a full solve needs. The sketch (:mod:`.sketch`) therefore tries,
before each further configuration, whether one rank ``r < d`` explains every
row ``s_i = a_i^T W_h x_i`` it has for every head:

* there are at least ``r (2d - r) + low_rank_spare`` rows, so the fit is
  tested by more independent rows than it has parameters (the sketch keeps its
  weight rows independent);
* the fit (alternating least squares polished by Levenberg-Marquardt steps,
  from the least-norm ``W_h`` and, if that misses, from two random starts; a
  few rows left out and the fit made again: first the one row whose absence
  lets it miss the others least, then the rows it misses most) is
  *identified*: its Jacobian has rank ``r (2d - r)``;
* it fits every row to ``low_rank_agreement`` of the largest score
  (the ``low_rank_*`` fields of :class:`~exactlearn.settings.GuideSettings`).

A full-rank ``W_h`` fails the last test (its rows are not on the rank-``r``
manifold), and the sketch goes on to all ``d^2`` rows. Like everything in a
sketch this is a guess that only chooses tokens: it never enters a returned
value. Floats (numpy) are used here by design.

>>> rng = np.random.default_rng(0)
>>> W = np.outer(rng.normal(size=3), rng.normal(size=3))       # rank one
>>> rows = [(x, a, a @ W @ x) for x, a in rng.integers(-2, 3, size=(8, 2, 3))]
>>> rank, (fitted,) = low_rank_weights(rows, 3)
>>> rank, bool(np.abs(fitted - W).max() < 1e-8)
(1, True)
>>> rows = [(x, a, a @ rng.normal(size=(3, 3)) @ x) for x, a in rng.integers(-2, 3, size=(8, 2, 3))]
>>> low_rank_weights(rows, 3) is None                           # a full-rank W fits no rank one
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ...settings import DEFAULT_SETTINGS, GuideSettings

__all__ = ["low_rank_weights", "LowRank", "rows_needed", "rank_guess"]


class LowRank(NamedTuple):
    """A low-rank fit that explains every row: its rank and one ``W_h`` per head."""

    rank: int
    weights: list[np.ndarray]


def _for_Q(X: np.ndarray, A: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Rows ``vec(a_i (K^T x_i)^T)``: with ``K`` fixed, ``s_i = a_i^T Q K^T x_i`` is linear in ``Q``."""
    return np.einsum("ip,il->ipl", A, X @ K).reshape(len(X), -1)


def _for_K(X: np.ndarray, A: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Rows ``vec(x_i (Q^T a_i)^T)``: with ``Q`` fixed, ``s_i`` is linear in ``K``."""
    return np.einsum("ip,il->ipl", X, A @ Q).reshape(len(X), -1)


def _residuals(X: np.ndarray, A: np.ndarray, W: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``a_i^T W x_i - s_i`` for every row."""
    return np.einsum("ip,ip->i", A @ W, X) - s


def _sweeps(X: np.ndarray, A: np.ndarray, s: np.ndarray, K: np.ndarray, settings: GuideSettings
            ) -> np.ndarray:
    """``W = Q K^T`` from ``K``: alternating least squares until a sweep no longer lowers the sum of
    squared misfits (at most ``low_rank_iterations`` sweeps), then :func:`_polished`."""
    d, rank = K.shape
    Q, squares = np.zeros((d, rank)), np.inf
    for _ in range(settings.low_rank_iterations):
        Q = _least_squares(_for_Q(X, A, K), s, settings).reshape(d, rank)
        K = _least_squares(_for_K(X, A, Q), s, settings).reshape(d, rank)
        before, squares = squares, float(np.sum(_residuals(X, A, Q @ K.T, s) ** 2))
        if squares >= before * (1 - settings.low_rank_progress):
            break
    return _polished(X, A, s, Q, K, settings)


def _polished(X: np.ndarray, A: np.ndarray, s: np.ndarray, Q: np.ndarray, K: np.ndarray,
              settings: GuideSettings) -> np.ndarray:
    """``W = Q K^T`` after Levenberg-Marquardt steps in ``Q`` and ``K`` together (at most
    ``low_rank_polish``, until one lowers the sum of squared misfits by less than
    ``low_rank_progress``): near a fit the alternating sweeps creep, these converge quadratically. The
    damping starts at ``low_rank_damping`` of the mean curvature, is multiplied by ``low_rank_damping_up``
    after a step that does not lower the misfits and divided by ``low_rank_damping_down`` after one that
    does; it is redone with more damping
    (``GL(r)`` leaves ``r^2`` directions flat, which the damping fixes)."""
    d, rank = K.shape
    misfits = _residuals(X, A, Q @ K.T, s)
    squares, damping = float(misfits @ misfits), None
    for _ in range(settings.low_rank_polish):
        J = np.hstack([_for_Q(X, A, K), _for_K(X, A, Q)])
        curvature, gradient = J.T @ J, J.T @ misfits
        mean = float(np.trace(curvature)) / len(curvature)
        damping = settings.low_rank_damping * mean if damping is None else damping
        while True:
            try:
                step = np.linalg.solve(curvature + damping * np.eye(len(curvature)), -gradient)
            except np.linalg.LinAlgError:  # pragma: no cover - damped curvature is positive definite
                return Q @ K.T
            Q2, K2 = Q + step[: d * rank].reshape(d, rank), K + step[d * rank:].reshape(d, rank)
            tried = _residuals(X, A, Q2 @ K2.T, s)
            if float(tried @ tried) < squares:
                break
            damping *= settings.low_rank_damping_up
            if not damping < settings.low_rank_flat * mean:
                return Q @ K.T  # no step lowers the misfits: a minimum
        damping /= settings.low_rank_damping_down
        before, squares, misfits, Q, K = squares, float(tried @ tried), tried, Q2, K2
        if squares >= before * (1 - settings.low_rank_progress):
            break
    return Q @ K.T


def _least_squares(M: np.ndarray, s: np.ndarray, settings: GuideSettings) -> np.ndarray:
    """``argmin |M w - s|``: by ``lstsq`` (SVD), or, with ``low_rank_normal_from`` unknowns or more and more
    rows than unknowns, by the normal equations (ten times faster; a singular system falls back to
    ``lstsq``). (An underdetermined ``M^T M`` is singular, but rounding may keep ``solve`` from saying so.)"""
    if settings.low_rank_normal_from <= M.shape[1] < M.shape[0]:
        try:
            return np.linalg.solve(M.T @ M, M.T @ s)
        except np.linalg.LinAlgError:
            pass
    return np.linalg.lstsq(M, s, rcond=None)[0]


def _identified(X: np.ndarray, A: np.ndarray, W: np.ndarray, rank: int, settings: GuideSettings) -> bool:
    """Whether the fit's Jacobian (in ``Q`` and ``K``, balanced: ``W = Q K^T`` with both factors
    ``U sqrt(S)``, ``V sqrt(S)``) has rank ``r (2d - r)``: ``GL(r)`` accounts for the other ``r^2``."""
    d = W.shape[0]
    U, sv, Vt = np.linalg.svd(W)
    root = np.sqrt(sv[:rank])
    Q, K = U[:, :rank] * root, Vt[:rank].T * root
    singular = np.linalg.svd(np.hstack([_for_Q(X, A, K), _for_K(X, A, Q)]), compute_uv=False)
    needed = rank * (2 * d - rank)
    return bool(len(singular) >= needed and singular[needed - 1] > settings.low_rank_identified * singular[0])


def _fit(X: np.ndarray, A: np.ndarray, s: np.ndarray, rank: int, settings: GuideSettings,
         tolerance: float = np.inf, outliers: int = 0) -> tuple[np.ndarray, bool, float]:
    """``(W, identified, largest misfit)`` of the rank-``rank`` least-squares fit of ``a_i^T W x_i = s_i``:
    the best of :func:`_trimmed` fits from the least-norm ``W`` and from ``low_rank_restarts`` random
    starts (fixed seeds: the fit is reproducible; the first that fits to ``tolerance`` ends them).
    Misfit and identification are those of the rows the fit keeps."""
    d = X.shape[1]
    design = np.einsum("ip,iq->ipq", A, X).reshape(len(X), d * d)
    start = np.linalg.lstsq(design, s, rcond=None)[0].reshape(d, d)
    rng = np.random.default_rng(rank)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for i in range(settings.low_rank_restarts + 1):
        K = np.linalg.svd(start)[2][:rank].T if i == 0 else rng.normal(size=(d, rank))
        misfit, W, keep = _trimmed(X, A, s, K, settings, tolerance, outliers)
        if best is None or misfit < best[0]:
            best = (misfit, W, keep)
        if misfit <= tolerance:
            break  # (a start that fits needs no other)
    assert best is not None
    misfit, W, keep = best
    return W, _identified(X[keep], A[keep], W, rank, settings), misfit


def _trimmed(X: np.ndarray, A: np.ndarray, s: np.ndarray, K: np.ndarray, settings: GuideSettings,
             tolerance: float, outliers: int) -> tuple[float, np.ndarray, np.ndarray]:
    """``(largest misfit, W, rows kept)`` of :func:`_sweeps` from ``K``; while it misses a row by more than
    ``tolerance``, the rows (at most ``outliers``) it misses most are left out and the fit is made again
    from it on the others, at most ``low_rank_trims`` times (a few rough scores pull a least-squares fit
    off the rest, so the worst rows of the first fit need not be the rough ones); the first time, from at
    most ``low_rank_leave_one_out`` rows, the one row :func:`_worst_row` finds."""
    rank = K.shape[1]
    keep = np.arange(len(s))
    W = _sweeps(X, A, s, K, settings)
    for trim in range(settings.low_rank_trims + 1):
        misses = np.abs(_residuals(X, A, W, s))
        misfit = float(np.max(misses[keep]))
        if misfit <= tolerance or not outliers or trim == settings.low_rank_trims:
            break
        kept = np.union1d(np.argsort(misses)[: len(s) - outliers], np.flatnonzero(misses <= tolerance))
        if trim == 0 and len(s) <= settings.low_rank_leave_one_out:  # first, the row leaving out fits best
            kept = np.delete(np.arange(len(s)), _worst_row(X, A, s, np.linalg.svd(W)[2][:rank].T, settings))
        if np.array_equal(kept, keep):
            break  # (the same rows again: the same fit)
        keep = kept
        W = _sweeps(X[keep], A[keep], s[keep], np.linalg.svd(W)[2][:rank].T, settings)
    return misfit, W, keep


def _worst_row(X: np.ndarray, A: np.ndarray, s: np.ndarray, K: np.ndarray, settings: GuideSettings) -> int:
    """The row whose leaving out lets the fit (:func:`_sweeps` from ``K``) miss the others least: each row
    left out in turn. A swapped label puts a row's score on the wrong head, and the least-squares fit
    through it misses other rows more than that one."""
    trials = []
    for i in range(len(s)):
        rest = np.delete(np.arange(len(s)), i)
        fitted = _sweeps(X[rest], A[rest], s[rest], K, settings)
        trials.append(float(np.max(np.abs(_residuals(X[rest], A[rest], fitted, s[rest])))))
    return int(np.argmin(trials))


def _outliers(rank: int, d: int, settings: GuideSettings) -> int:
    """Rows a rank-``rank`` fit may leave out: ``low_rank_outliers`` of its ``r (2d - r)`` parameters, at
    least ``low_rank_min_outliers``."""
    return max(settings.low_rank_min_outliers, int(settings.low_rank_outliers * rank * (2 * d - rank)))


def rows_needed(rank: int, d: int, settings: GuideSettings = DEFAULT_SETTINGS.guide) -> int:
    """Rows before a rank-``rank`` fit is tried: its ``r (2d - r)`` parameters, ``low_rank_spare`` plus
    ``low_rank_extra`` of them to test it, and the outliers it may leave out."""
    params = rank * (2 * d - rank)
    extra = int(settings.low_rank_extra * params)
    return params + settings.low_rank_spare + extra + _outliers(rank, d, settings)


def rank_guess(X: np.ndarray, A: np.ndarray, s: np.ndarray, start: np.ndarray, rank: int,
               settings: GuideSettings = DEFAULT_SETTINGS.guide) -> np.ndarray:
    """A rank-``rank`` ``W`` near the rows ``a_i^T W x_i = s_i`` (``X``, ``A`` one row each), from ``start``
    (the least-norm ``W``): alternating least squares and Levenberg-Marquardt, neither tested nor
    identified. With fewer rows than parameters it is one guess of many; what it adds to ``start`` is the
    structure (a rank-one ``W x`` is parallel to the ``W x_i`` already seen). A guess that misses a row by
    more than ``low_rank_agreement`` of the largest score (a local minimum) gives ``start`` back. For
    predictions only.

    >>> rng = np.random.default_rng(1)
    >>> W = np.outer(rng.normal(size=3), rng.normal(size=3))       # rank one: 5 parameters
    >>> x0, x1 = rng.normal(size=(2, 3))
    >>> X, A = np.array([x0, x0, x0, x1]), rng.normal(size=(4, 3))  # W x0 known, one row at x1
    >>> s = np.einsum("ip,ip->i", A @ W, X)
    >>> start = np.linalg.lstsq(np.einsum("ip,iq->ipq", A, X).reshape(4, 9), s, rcond=None)[0].reshape(3, 3)
    >>> guess, a = rank_guess(X, A, s, start, 1), rng.normal(size=3)
    >>> bool(abs(a @ guess @ x1 - a @ W @ x1) < 1e-8)              # a new a at x1: predicted
    True
    >>> bool(abs(a @ start @ x1 - a @ W @ x1) < 1e-8)              # (the least-norm W: not)
    False
    """
    guess = _sweeps(X, A, s, np.linalg.svd(start)[2][:rank].T, settings)
    tolerance = settings.low_rank_agreement * max(1.0, float(np.max(np.abs(s), initial=0.0)))
    misfit = float(np.max(np.abs(_residuals(X, A, guess, s)), initial=0.0))
    return guess if np.isfinite(misfit) and misfit <= tolerance else start  # (a local minimum: no guess)


def low_rank_weights(rows: Sequence[tuple[Sequence[float], Sequence[float], ArrayLike]], d: int,
                     settings: GuideSettings = DEFAULT_SETTINGS.guide,
                     failures: dict[int, list[int]] | None = None) -> LowRank | None:
    """The smallest rank ``r < d`` whose fits explain the rows ``(x_i, a_i, s_i)`` (``s_i`` a score per
    head, or one score) for every head, with its ``[W_h]``; ``None`` if none does yet.

    ``failures`` (kept by the caller across calls as rows are added) lists, per rank, the number of rows
    at each identified fit that missed them; a rank is tried again only once the rows have grown by
    ``low_rank_retry_growth`` since its last miss (a row more leaves a near miss near), and not after
    ``low_rank_tries`` misses (more rows cannot bring a matrix of higher rank onto it)."""
    X = np.array([x for x, _, _ in rows], dtype=float)
    A = np.array([a for _, a, _ in rows], dtype=float)
    S = np.array([np.atleast_1d(s) for _, _, s in rows], dtype=float)  # (rows, heads)
    if not np.all(np.isfinite(S)):
        return None
    failures = {} if failures is None else failures
    tolerances = settings.low_rank_agreement * np.maximum(1.0, np.max(np.abs(S), axis=0, initial=0.0))
    for rank in range(1, d):
        outliers = _outliers(rank, d, settings)
        if len(rows) < rows_needed(rank, d, settings):
            return None
        missed = failures.get(rank, [])
        if len(missed) >= settings.low_rank_tries or (
                missed and len(rows) < missed[-1] * (1 + settings.low_rank_retry_growth)):
            continue
        weights = []
        for h, tolerance in enumerate(tolerances):  # (a head that fails ends this rank's try)
            W, identified, misfit = _fit(X, A, S[:, h], rank, settings, tolerance, outliers)
            if not (identified and misfit <= tolerance):
                if identified:
                    failures.setdefault(rank, []).append(len(rows))
                break
            weights.append(W)
        else:
            return LowRank(rank, weights)
    return None
