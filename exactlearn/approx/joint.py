"""Vector answers: every parameter refined at once from every whole answer (Gauss-Newton).

The vector path (:mod:`exactlearn.approx.values`) learns ``W_h`` and ``w_h`` from one readout
``r . f`` and then ``V_h`` and ``c0`` linearly with those heads fixed. Both steps leave information
unused: the heads see one number per answer where the oracle gave ``D``, and the value fit inherits
the heads' error (a model misfit, not noise, in its residuals). On float64 torch layers that staged
result is 1e-7 to 1e-5 off, while the answers are good to 1e-16.

:func:`refine_jointly` takes that result as its starting point and minimises the sum of squared
residuals of every coordinate of every logged answer over all parameters together
(``f(X) = c0 + sum_h V_h phi_h(X)``, ``phi_h(X) = sum_i a_{h,i}(X) x_i``), by Gauss-Newton steps whose
normal equations are accumulated a block of answers at a time from the Jacobian's structure (columns
scaled to unit norm). It asks
no query. Its error estimate is the usual one of a least-squares fit: the residuals' scatter
``sigma`` (``rss / (n - p)``, never below the answers' float64 rounding) times the square root of
the diagonal of ``(J^T J)^-1``, and
``ApproxSettings.estimate_deviations`` of those standard deviations (an estimate, not a bound).
:func:`~exactlearn.approx.learn_approx` keeps the refinement when its estimate is below the staged one.
Scalar answers are the case ``D = 1``, ``V_h = v_h^T`` (:func:`~exactlearn.approx.values.refine_scalar`:
a default run refined from every answer it remembers).

Floats (numpy) by design: the answers are floats, and the fit converges in a few steps from a start
1e-5 off (its step equations need only a few correct digits).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..settings import DEFAULT_SETTINGS, ApproxSettings

__all__ = ["JointFit", "affordable", "refine_jointly"]


@dataclass(frozen=True)
class JointFit:
    """Every parameter of a vector attention refined together (floats), with per-entry estimated errors
    (``estimate_deviations`` standard deviations): ``W`` (``H x d x d``), ``w`` (``H x d``; zeros unless
    affine), ``V`` (``H x D x d``), ``c0`` (``D``; zeros unless affine); the residuals' scatter ``noise``,
    ``rss`` before (``start_rss``) and after, and the Gauss-Newton ``steps`` taken."""

    W: np.ndarray
    w: np.ndarray
    V: np.ndarray
    c0: np.ndarray
    W_error: np.ndarray
    w_error: np.ndarray
    V_error: np.ndarray
    c0_error: np.ndarray
    noise: float
    start_rss: float
    rss: float
    steps: int

    @property
    def error(self) -> float:
        """The largest estimated error of a ``W_h`` or ``w_h`` entry."""
        return float(max(self.W_error.max(), self.w_error.max()))

    @property
    def value_error(self) -> float:
        """The largest estimated error of a ``V_h`` or ``c0`` entry."""
        return float(max(self.V_error.max(), self.c0_error.max()))


class _Answers:
    """The log as float arrays: distinct tokens ``T`` (queries x tokens x d, zero-padded), their
    multiplicities ``n`` (0 for padding), final tokens ``last`` and whole answers ``Y``."""

    def __init__(self, log: Sequence) -> None:
        Q, M = len(log), max(len(q.points) for q in log)
        d, D = len(log[0].last), len(log[0].values)
        self.T, self.n = np.zeros((Q, M, d)), np.zeros((Q, M))
        self.last, self.Y = np.zeros((Q, d)), np.zeros((Q, D))
        for i, query in enumerate(log):
            for j, (token, count) in enumerate(query.points):
                self.T[i, j] = [float(x) for x in token]
                self.n[i, j] = count
            self.last[i] = [float(x) for x in query.last]
            self.Y[i] = [float(y) for y in query.values]
        #: the configuration of each answer: the index of its set of distinct tokens (``(z,)*k + (x,)*m``
        #: for every ``k, m`` share one)
        keys = [frozenset(tuple(float(x) for x in token) for token, _ in query.points) for query in log]
        index: dict[frozenset, int] = {}
        self.group = np.array([index.setdefault(key, len(index)) for key in keys])


def _model(T: np.ndarray, n: np.ndarray, last: np.ndarray, W: np.ndarray, w: np.ndarray, V: np.ndarray,
           c0: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Softmax weights ``a`` (queries x H x tokens), features ``phi`` (queries x H x d), answers ``f``."""
    u = np.einsum("hab,qb->qha", W, last) + w[None]
    scores = np.einsum("qmd,qhd->qhm", T, u)
    scores = np.where(n[:, None, :] > 0, scores, -np.inf)
    scores = scores - scores.max(axis=2, keepdims=True)
    e = n[:, None, :] * np.exp(scores)
    a = e / e.sum(axis=2, keepdims=True)
    phi = np.einsum("qhm,qmd->qhd", a, T)
    return a, phi, c0[None] + np.einsum("hkd,qhd->qk", V, phi)


def _jacobian(T: np.ndarray, n: np.ndarray, last: np.ndarray, W: np.ndarray, w: np.ndarray, V: np.ndarray,
              c0: np.ndarray, affine: bool) -> tuple[np.ndarray, np.ndarray]:
    """The answers' Jacobian (rows: query by output coordinate; columns as :func:`_pack`) and the answers."""
    a, phi, f = _model(T, n, last, W, w, V, c0)
    Q, H, d = phi.shape
    D = V.shape[1]
    spread = T[:, None, :, :] - phi[:, :, None, :]
    G = np.einsum("qhm,qhmd,qme->qhde", a, spread, T)  # d phi_h / d u_h, u_h = W_h x_N + w_h
    VG = np.einsum("hkd,qhde->qhke", V, G)  # d f / d u_h
    parts = [np.einsum("qhka,qb->qkhab", VG, last).reshape(Q, D, H * d * d)]
    if affine:
        parts.append(VG.transpose(0, 2, 1, 3).reshape(Q, D, H * d))
    parts.append(np.einsum("kl,qhd->qkhld", np.eye(D), phi).reshape(Q, D, H * D * d))
    if affine:
        parts.append(np.broadcast_to(np.eye(D), (Q, D, D)))
    return np.concatenate(parts, axis=2).reshape(Q * D, -1), f


def _pack(W: np.ndarray, w: np.ndarray, V: np.ndarray, c0: np.ndarray, affine: bool) -> np.ndarray:
    parts = [W.ravel()] + ([w.ravel()] if affine else []) + [V.ravel()] + ([c0] if affine else [])
    return np.concatenate(parts)


def _unpack(x: np.ndarray, H: int, d: int, D: int, affine: bool
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    W = x[: H * d * d].reshape(H, d, d)
    i = H * d * d
    w = x[i: i + H * d].reshape(H, d) if affine else np.zeros((H, d))
    i += H * d if affine else 0
    V = x[i: i + H * D * d].reshape(H, D, d)
    i += H * D * d
    c0 = x[i: i + D] if affine else np.zeros(D)
    return W, w, V, c0


def _normal(answers: _Answers, x: np.ndarray, shape: tuple[int, int, int, bool], block: int
            ) -> tuple[np.ndarray, np.ndarray, float]:
    """``J^T J``, ``J^T r`` and ``r^T r`` at ``x`` (columns as :func:`_pack`), a block of queries at a
    time, from the Jacobian's structure rather than from :func:`_jacobian` itself: with
    ``U = d f / d u_h`` (``D x Hd`` per query), a ``W_h`` column is ``U`` times an entry of ``x_N``, a
    ``w_h`` column is ``U``, a ``V_h`` column is ``phi_h`` in one output coordinate, a ``c0`` column is
    one. So every block is a product of ``U^T U``, ``phi`` and ``x_N`` summed over the queries (BLAS
    products), never the ``(answers x outputs) x parameters`` matrix."""
    H, d, D, affine = shape
    W, w, V, c0 = _unpack(x, H, d, D, affine)
    Hd, p = H * d, x.size
    nW, nw, nV = Hd * d, Hd if affine else 0, H * D * d
    o, c = nW + nw, nW + nw + nV  # where the V_h and the c0 columns start
    JtJ, Jtr, rss = np.zeros((p, p)), np.zeros(p), 0.0
    for start in range(0, answers.Y.shape[0], max(1, block // (Hd * (Hd + d)))):
        part = slice(start, start + max(1, block // (Hd * (Hd + d))))
        T, X = answers.T[part], answers.last[part]
        a, phi, f = _model(T, answers.n[part], X, W, w, V, c0)
        Q = len(X)
        G = np.einsum("qhm,qhmd,qme->qhde", a, T[:, None, :, :] - phi[:, :, None, :], T)
        U = np.einsum("hkd,qhde->qkhe", V, G).reshape(Q, D, Hd)
        P = phi.reshape(Q, Hd)
        r = answers.Y[part] - f
        rss += float(np.sum(r * r))
        M = np.einsum("qki,qkj->qij", U, U).reshape(Q, Hd * Hd)
        xx = np.einsum("qb,qc->qbc", X, X).reshape(Q, d * d)
        JtJ[:nW, :nW] += (M.T @ xx).reshape(Hd, Hd, d, d).transpose(0, 2, 1, 3).reshape(nW, nW)
        Ur = np.einsum("qki,qk->qi", U, r)
        Jtr[:nW] += (Ur.T @ X).reshape(nW)
        if affine:
            Ww = (M.T @ X).reshape(Hd, Hd, d).transpose(0, 2, 1).reshape(nW, Hd)
            JtJ[:nW, nW:o] += Ww
            JtJ[nW:o, :nW] += Ww.T
            JtJ[nW:o, nW:o] += M.sum(axis=0).reshape(Hd, Hd)
            Jtr[nW:o] += Ur.sum(axis=0)
        gram = (P.T @ P).reshape(H, d, H, d)
        VV = np.zeros((H, D, d, H, D, d))
        for k in range(D):
            VV[:, k, :, :, k, :] = gram
            cols = (o + np.arange(H)[:, None] * D * d + k * d + np.arange(d)[None, :]).ravel()
            R = (U[:, k, :, None] * X[:, None, :]).reshape(Q, nW)
            WV = R.T @ P
            JtJ[:nW, cols] += WV
            JtJ[cols, :nW] += WV.T
            if affine:
                wV = U[:, k, :].T @ P
                JtJ[nW:o, cols] += wV
                JtJ[cols, nW:o] += wV.T
                for rows, column in ((slice(0, nW), R.sum(axis=0)), (slice(nW, o), U[:, k, :].sum(axis=0)),
                                     (cols, P.sum(axis=0))):
                    JtJ[rows, c + k] += column
                    JtJ[c + k, rows] += column
        JtJ[o:c, o:c] += VV.reshape(nV, nV)
        Jtr[o:c] += (P.T @ r).reshape(H, d, D).transpose(0, 2, 1).reshape(nV)
        if affine:
            JtJ[c:, c:] += Q * np.eye(D)
            Jtr[c:] += r.sum(axis=0)
    return JtJ, Jtr, rss


def _design_effect(answers: _Answers, x: np.ndarray, shape: tuple[int, int, int, bool]) -> float:
    """How much the answers of one configuration share their errors, as a factor (at least 1) on the
    standard deviations: ``sqrt(mean_c(n_c m_c^2) / mean(r^2))`` over the configurations ``c`` of at
    least two answers (``n_c`` of them, mean residual ``m_c``), which independent residuals put near 1.
    The answers of ``(z,)*k + (x,)*m`` share the oracle's rounding of the two scores (torch
    ``d = 8, H = 8``: means 2.3x what independent answers give), so they count for less than their
    number."""
    W, w, V, c0 = _unpack(x, *shape)
    r = answers.Y - _model(answers.T, answers.n, answers.last, W, w, V, c0)[2]
    sizes = np.bincount(answers.group)
    several = sizes[answers.group] >= 2
    if not several.any() or not np.any(r[several]):
        return 1.0
    groups = np.flatnonzero(sizes >= 2)
    sums = np.zeros((len(sizes), r.shape[1]))
    np.add.at(sums, answers.group, r)  # per configuration and output
    means = sums[groups] / sizes[groups, None]
    ratio = float(np.mean(sizes[groups, None] * means**2) / np.mean(r[several] ** 2))
    return max(1.0, float(np.sqrt(ratio)))


def _solve(JtJ: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """``JtJ^-1 rhs`` with the columns scaled to unit norm; ``None`` when singular or not finite."""
    scale = np.sqrt(np.diag(JtJ))
    if not np.all(np.isfinite(scale)) or np.any(scale == 0):
        return None
    try:
        out = np.linalg.solve(JtJ / np.outer(scale, scale), rhs / scale) / scale
    except np.linalg.LinAlgError:
        return None
    return out if np.all(np.isfinite(out)) else None


def affordable(answers: int, heads: int, d: int, outputs: int, affine: bool,
               settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> bool:
    """Whether the refinement stays within ``ApproxSettings.joint_work`` multiply-adds: one step's normal
    equations (:func:`_normal`: about ``answers (Hd)^2 (D + 2 d^2)``) and the inverse of their
    ``p x p`` matrix."""
    p = heads * (d * d + (d if affine else 0) + outputs * d) + (outputs if affine else 0)
    Hd = heads * d
    return answers * Hd * Hd * (outputs + 2 * d * d) + p**3 <= settings.joint_work


def refine_jointly(log: Sequence, W: np.ndarray, w: np.ndarray, V: np.ndarray, c0: np.ndarray, affine: bool,
                   settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> JointFit | None:
    """Gauss-Newton on every coordinate of every answer in ``log``
    (:class:`~exactlearn.approx.values.Answered`) from the staged parameters (float arrays shaped as in
    :class:`JointFit`). ``None`` when the answers leave no residual degree of freedom, the normal
    equations are singular at the start, or a step would cost more than :func:`affordable` allows."""
    H, d, D = V.shape[0], V.shape[2], V.shape[1]
    if not affordable(len(log), H, d, D, affine, settings):
        return None
    answers = _Answers(log)
    shape = (H, d, D, affine)
    x = _pack(np.asarray(W, float), np.asarray(w, float), np.asarray(V, float), np.asarray(c0, float), affine)
    n = answers.Y.size
    if n <= x.size:
        return None
    JtJ, Jtr, rss = _normal(answers, x, shape, settings.joint_block)
    start_rss, steps = rss, 0
    for _ in range(settings.joint_steps):
        step = _solve(JtJ, Jtr)
        if step is None:
            break
        trial = x + step
        JtJ_t, Jtr_t, rss_t = _normal(answers, trial, shape, settings.joint_block)
        if not rss_t < rss:  # no longer decreasing: at the floor of the answers' rounding
            break
        x, JtJ, Jtr, rss, steps = trial, JtJ_t, Jtr_t, rss_t, steps + 1
    scale = np.sqrt(np.diag(JtJ))
    if not np.all(np.isfinite(scale)) or np.any(scale == 0):
        return None
    try:
        inverse = np.linalg.inv(JtJ / np.outer(scale, scale)) / np.outer(scale, scale)
    except np.linalg.LinAlgError:
        return None
    # never below the answers' float64 rounding: a fit that reproduces every float answer exactly (rss 0,
    # a few answers of a small layer) has not shown that they are exact
    floor = float(np.finfo(float).eps * np.sqrt(np.mean(answers.Y**2)))
    sigma = max(float(np.sqrt(rss / (n - x.size))), floor)
    deviation = np.sqrt(np.abs(np.diag(inverse))) * sigma * settings.estimate_deviations
    deviation *= _design_effect(answers, x, shape)
    if not np.all(np.isfinite(deviation)):
        return None
    fitted, errors = _unpack(x, *shape), _unpack(deviation, *shape)
    return JointFit(*fitted, *errors, noise=sigma, start_rss=start_rss, rss=rss, steps=steps)
