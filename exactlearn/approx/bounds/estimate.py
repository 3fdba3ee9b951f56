"""An error estimate a user can act on: the answers' observed scatter, carried to the parameters.

A recovery's radii (:attr:`~exactlearn.approx.ApproxRecovery.error_bound`) are
the first-order worst case under the *declared* ``eps``: every answer off by
``eps``, every error conspiring. Two things make that bound loose for a float
oracle: ``eps`` is declared with a margin (1e-13 for float64 answers whose
errors are about 1e-16), and rounding errors do not conspire. On the torch
layers the bound was 500 to 10^4 times the true error.

The estimate here uses what the answers themselves show. The value vectors are
a least-squares solution over ``d^2`` configurations for ``d`` unknowns per
head, so ``d^2 - d`` residuals per head measure the noise actually present:

* per measurement configuration ``j`` and head ``h``, the fitted residue moves
  with the answers ``y_k`` by ``g_{jh} = d c_{jh} / d y`` (a row of the copy
  function's inverse Jacobian, :mod:`~exactlearn.approx.core.copyfun`), and its
  score by ``l_{jh} = d log rho_{jh} / d y``;
* with independent answer errors of root-mean-square ``sigma``, a residual
  ``r_{jh} = c_{jh} - v_h^T (x_j - z_j)`` has variance about
  ``sigma^2 |g_{jh}|^2 (1 - leverage_j)``; so
  ``sigma^2 = sum r^2 / sum |g|^2 (1 - leverage)`` (:attr:`ErrorEstimate.noise`);
* each parameter's standard deviation follows by the chain rule:
  ``sd(W_h) = s^-2 sqrt((D^-1)^2 |l_h|^2) sigma`` and ``sd(v_h) = s^-1 sqrt((A^+)^2 |g_h|^2) sigma``
  (squares entrywise); the estimate is ``ApproxSettings.estimate_deviations`` (8)
  times the largest. It is a statistical estimate, not a bound: it assumes the
  errors are independent and no larger in the other answers than in these.

The estimate is a root of a sum of squares over the configurations; :func:`configuration_shares`
gives each configuration's own term, which is how :func:`~exactlearn.approx.learn_approx` finds the
configurations to ask again (docs/approximate.md, "Repairing a run").

Floats (numpy) are used by design; nothing here changes a returned value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...schedule import affine_weight_row, bias_rows, value_row, weight_row
from ...settings import DEFAULT_SETTINGS, ApproxSettings
from ..core.balls import to_mpf
from ..core.counts import pseudo_inverse
from ..core.recovery import ApproxRecovery

__all__ = ["ErrorEstimate", "estimate_error", "configuration_shares", "estimates_without", "matrix_scale"]


@dataclass(frozen=True)
class ErrorEstimate:
    """The answers' observed noise and the parameter error it implies (floats)."""

    noise: float  # root-mean-square answer error, from the value residuals
    residuals: int  # the residuals it was estimated from
    deviation: float  # the largest standard deviation of a parameter
    error: float  # estimate_deviations times that: the estimated largest parameter error
    relative: float  # error / the largest |entry| of the parameters
    floor: float = 0.0  # the noise float64 rounding of the residues alone would show: below it, no evidence
    #: the largest estimated error of a ``W_h`` or ``v_h`` over that matrix's largest ``|entry|`` (``w_h``
    #: over the largest parameter: a zero bias is no scale), the relative error per matrix
    per_matrix: float = 0.0


def _sensitivities(cfg, H: int) -> tuple[np.ndarray, np.ndarray]:
    """Per head (by label), ``|d c_h / d y|`` and ``|d log rho_h / d y|`` (2-norms over the answers) of a
    measurement configuration, at its fitted midpoints."""
    terms = [(float(to_mpf(rho)), float(to_mpf(c))) for rho, c in cfg.terms]
    rho = np.array([t[0] for t in terms])
    c = np.array([t[1] for t in terms])
    ks = np.array(cfg.points, dtype=float)[:, None]
    den = 1 + ks * rho[None, :]
    J = np.hstack([np.ones((len(ks), 1)), 1 / den, -(c[None, :] * ks) / den**2])
    G = pseudo_inverse(J)
    order = [cfg.labels[h] for h in range(H)]
    by_residue = np.linalg.norm(G[1 : H + 1], axis=1)[order]
    by_score = (np.linalg.norm(G[H + 1 :], axis=1) / rho)[order]
    return by_residue, by_score


def estimate_error(rec: ApproxRecovery, settings: ApproxSettings = DEFAULT_SETTINGS.approx
                   ) -> ErrorEstimate | None:
    """The :class:`ErrorEstimate` of a recovery, or ``None`` when its answers leave no residual
    (``d = 1``) or a configuration kept no fit. Affine runs: the weight design is the augmented one
    (:func:`~exactlearn.schedule.affine_weight_row` and :func:`~exactlearn.schedule.bias_rows`)."""
    parts = _parts(rec)
    if parts is None:
        return None
    sigma, floor, residuals, weights, values, top = parts
    sd_W, sd_v = _deviations(sigma, weights, values)  # an infinite sensitivity: no estimate (below)
    deviation = float(max(sd_W.max(), sd_v.max()))
    if not np.isfinite(deviation):
        return None
    error = settings.estimate_deviations * deviation
    if not top:
        return ErrorEstimate(sigma, residuals, deviation, error, float("inf"), floor, float("inf"))
    weight_scale, value_scale = _scales(rec, top, sd_W, sd_v, settings)
    per_matrix = settings.estimate_deviations * float(max(np.max(sd_W / weight_scale),
                                                          np.max(sd_v / value_scale[None, :])))
    return ErrorEstimate(sigma, residuals, deviation, error, error / top, floor, per_matrix)


def _deviations(sigma: float, weights: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each parameter's standard deviation, per head: ``(entries of W_h and w_h, heads)`` and
    ``(entries of v_h, heads)``, from every configuration's terms."""
    with np.errstate(invalid="ignore"):  # an infinite sensitivity times no noise: nan
        return np.sqrt(np.sum(weights**2, axis=1)) * sigma, np.sqrt(np.sum(values**2, axis=1)) * sigma


def matrix_scale(largest: float, error: float, top: float) -> float:
    """What a matrix's error is relative to per matrix: its largest ``|entry|``, or ``top`` (the largest
    parameter) when every entry is within the matrix's estimated ``error`` of zero: a zero matrix,
    learned as noise, has no scale of its own.

    >>> matrix_scale(0.05, 1e-9, 0.7), matrix_scale(6e-14, 1e-13, 0.7)
    (0.05, 0.7)
    """
    return largest if largest > error else top


def _scales(rec: ApproxRecovery, top: float, sd_W: np.ndarray, sd_v: np.ndarray,
            settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> tuple[np.ndarray, np.ndarray]:
    """The scale each parameter's error is relative to per matrix (``per_matrix``): per weight entry (the
    rows of :func:`_weight_terms`) and head, :func:`matrix_scale` of that head's ``W_h`` (the largest
    parameter for a ``w_h`` entry); per head, :func:`matrix_scale` of ``v_h``. ``sd_W``, ``sd_v``:
    :func:`_deviations`; a matrix's estimated error is ``estimate_deviations`` of its largest."""
    d = rec.d
    in_W = np.array([a < d and b < d for a in range(d + 1) for b in range(d + 1)]) if rec.affine else (
        np.ones(d * d, dtype=bool))
    W_error = settings.estimate_deviations * np.max(np.where(in_W[:, None], sd_W, 0), axis=0)
    v_error = settings.estimate_deviations * np.max(sd_v, axis=0)

    def largest(entries: list[float]) -> float:
        return max(map(abs, entries), default=0.0)

    heads = list(enumerate(rec.heads))
    W_top = np.array([matrix_scale(largest([float(x) for row in head.W for x in row]), W_error[h], top)
                      for h, head in heads])
    v_top = np.array([matrix_scale(largest([float(x) for x in head.v]), v_error[h], top)
                      for h, head in heads])
    return np.where(in_W[:, None], W_top[None, :], top), v_top


def _terms(rec: ApproxRecovery, per_matrix: bool) -> tuple[float, np.ndarray, np.ndarray, float] | None:
    """:func:`_parts`' scatter, per-configuration terms and the scale they are relative to: the largest
    parameter, or with ``per_matrix`` 1, the terms divided by each entry's :func:`_scales`. ``None``
    without an estimate or a nonzero largest parameter."""
    parts = _parts(rec)
    if parts is None or not parts[5]:
        return None
    sigma, _, _, weights, values, top = parts
    if not per_matrix:
        return sigma, weights, values, top
    weight_scale, value_scale = _scales(rec, top, *_deviations(sigma, weights, values))
    return sigma, weights / weight_scale[:, None, :], values / value_scale[None, None, :], 1.0


def configuration_shares(rec: ApproxRecovery, settings: ApproxSettings = DEFAULT_SETTINGS.approx,
                         per_matrix: bool = False) -> np.ndarray | None:
    """Per measurement configuration (chain order), the largest parameter error its own answers alone
    would make, on the scale of :func:`estimate_error`'s ``relative`` (``estimate_deviations`` standard
    deviations, over the largest parameter; with ``per_matrix``, of its ``per_matrix``, each over its
    matrix's largest entry): the terms the estimate adds up, one configuration at a time. ``None`` when
    there is no estimate. A configuration far above the rest is one the estimate blames: asking another
    in its place lowers the estimate (:func:`~exactlearn.approx.learn_approx`).

    >>> configuration_shares(type("NoFit", (), {"d": 1, "num_heads": 1, "configurations": []})()) is None
    True
    """
    terms = _terms(rec, per_matrix)
    if terms is None:
        return None
    sigma, weights, values, top = terms
    with np.errstate(invalid="ignore"):
        worst = np.maximum(np.max(weights, axis=(0, 2)), np.max(values, axis=(0, 2))) * sigma
    return settings.estimate_deviations * worst / top


def estimates_without(rec: ApproxRecovery, order: Sequence[int],
                      settings: ApproxSettings = DEFAULT_SETTINGS.approx, per_matrix: bool = False
                      ) -> np.ndarray | None:
    """The relative estimate (:func:`estimate_error`'s ``relative``, or ``per_matrix``) with the terms of
    the first ``i``
    configurations of ``order`` left out, for ``i = 0 .. len(order)``: what asking them again would leave
    if their new answers added nothing (the noise and every other configuration's terms as they are). A
    prediction for a repair (:func:`~exactlearn.approx.learn_approx`), not an estimate of a run.
    ``None`` when there is no estimate.

    >>> estimates_without(type("NoFit", (), {"d": 1, "num_heads": 1, "configurations": []})(), []) is None
    True
    """
    terms = _terms(rec, per_matrix)
    if terms is None:
        return None
    sigma, weights, values, top = terms
    with np.errstate(invalid="ignore"):  # inf * 0 (a singular configuration): nan, no prediction below
        squares = [terms**2 for terms in (weights, values)]  # (parameters, configurations, heads)
    out = []
    for i in range(len(order) + 1):
        kept = np.ones(weights.shape[1], dtype=bool)
        kept[list(order[:i])] = False
        worst = max(float(np.sqrt(np.max(np.sum(sq[:, kept], axis=1), initial=0.0))) for sq in squares)
        out.append(settings.estimate_deviations * worst * sigma / top)
    return np.array(out)


def _parts(rec: ApproxRecovery) -> tuple[float, float, int, np.ndarray, np.ndarray, float] | None:
    """What the estimate is made of: the noise ``sigma`` and its float64 floor, the residuals' count,
    per parameter, configuration and head the standard deviation one configuration adds per unit noise
    (``weights``: every entry of ``W_h`` (and ``w_h``); ``values``: of ``v_h``), and the largest
    parameter. ``None`` when there is no estimate."""
    d, H = rec.d, rec.num_heads
    configs = rec.configurations
    if d * d <= d or any(c.fit is None or c.labels is None for c in configs):
        return None
    s = float(to_mpf(rec.scale)) if not isinstance(rec.scale, float) else rec.scale
    sens = [_sensitivities(c, H) for c in configs]
    g = np.array([x[0] for x in sens])  # (configurations, heads)
    ell = np.array([x[1] for x in sens])
    A = np.array([value_row(c.x, c.z) for c in configs], dtype=float)
    pinv = np.linalg.pinv(A)
    leverage = np.einsum("ij,ji->i", A, pinv)
    residues = np.array([[float(to_mpf(c.term_of(h)[1])) for h in range(H)] for c in configs])
    values = np.array([[float(x) for x in head.v] for head in rec.heads]).T * s  # scaled units, (d, H)
    r = residues - A @ values
    scale = np.sum(g**2 * (1 - leverage)[:, None])
    if not scale > 0:
        return None
    sigma = float(np.sqrt(np.sum(r**2) / scale))
    if not np.isfinite(sigma):  # a singular configuration's sensitivities (inf): no estimate
        return None
    floor = float(np.finfo(float).eps * np.sqrt(np.sum(residues**2) / scale))
    with np.errstate(invalid="ignore"):  # an infinite sensitivity: no estimate (the caller's isfinite)
        per_v = np.abs(pinv)[:, :, None] * g[None, :, :] / s  # (d, configurations, heads)
    top = max(float(abs(x)) for head in rec.heads
              for x in [e for row in head.W for e in row] + list(head.v) + list(head.w or []))
    return sigma, floor, int(r.size - d * H), _weight_terms(rec, ell, s), per_v, top


def _weight_terms(rec: ApproxRecovery, ell: np.ndarray, s: float) -> np.ndarray:
    """Per weight entry, configuration and head, the standard deviation that configuration's answers add
    per unit answer noise: ``W_h`` (``s^-2``), and for affine runs ``w_h`` (``s^-1``) too; the bias rows
    of the augmented design are exact."""
    configs, d = rec.configurations, rec.d
    if not rec.affine:
        D = np.array([weight_row(c.x, c.z) for c in configs], dtype=float)
        with np.errstate(invalid="ignore"):
            return np.abs(np.linalg.inv(D))[:, :, None] * ell[None, :, :] / (s * s)
    D = np.array([affine_weight_row(c.x, c.z) for c in configs] + bias_rows(d), dtype=float)
    inverse = np.abs(np.linalg.inv(D))[:, : len(configs)]  # entries of [[W, w], [0, 0]], row-major
    unit = np.array([1 / (s * s) if b < d else 1 / s for a in range(d + 1) for b in range(d + 1)])
    with np.errstate(invalid="ignore"):
        return inverse[:, :, None] * ell[None, :, :] * unit[:, None, None]
