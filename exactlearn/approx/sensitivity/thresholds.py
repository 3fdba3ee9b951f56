"""The conditions that come with ``C`` and the first-order noise thresholds.

docs/approximate.md states them. Thresholds are stated for the learner's balls:
a copy-function output carries the radius ``F`` times its first-order error
(``F = FIRST_ORDER_SAFETY``, copyfun's non-rigorous mode), sums add radii,
products ``x y`` have radius ``|x| r_y + |y| r_x`` (arb, to first order). A gap
``g`` between two quantities whose radii per unit ``eps`` add up to ``r`` closes
-- the balls may overlap -- at ``eps = g / r``.

>>> wrong_matching_threshold([[[0, 5], [2, 9]], [[3, 1], [7, 0]]], 2)   # h0 -> (1, 0), h1 -> (0, 1)
2
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mpmath
from flint import fmpq

from ...matching import perfect_matchings
from ...schedule import linked_tokens, matching_points
from ...states import LinkKind
from ..core.copyfun import FIRST_ORDER_SAFETY
from .jacobian import Jacobian, upper_abs, value

__all__ = ["conditions", "wrong_matching_threshold"]

FIRST_ORDER = ("residue vs zero", "pole separation", "pole positivity", "matching (wrong pairing)")


def conditions(jac: Jacobian, links: Sequence[tuple[int, str]]) -> tuple[dict, dict, str]:
    """``(conditions, thresholds, binding)`` for the configurations of ``jac`` and its ``links``."""
    F = mpmath.mpf(FIRST_ORDER_SAFETY)
    inf = mpmath.inf
    H, n_meas, m = jac.H, len(jac.measurements), len(jac.points)
    cond = {"min_pole_gap": inf, "min_score_gap": inf, "min_residue": inf, "rho_min": inf,
            "rho_max": mpmath.mpf(0)}
    thr = {name: inf for name in FIRST_ORDER} | {"second order (measurements)": inf,
                                                 "second order (matchings)": inf}
    # second order: beyond this eps the error is no longer linear in the noise
    for j, (_, cs, rhos) in enumerate(jac.data):
        thr["second order (measurements)"] = min(
            thr["second order (measurements)"],
            jac.second_order(jac.jac[j], cs, rhos, jac.points, [1] * m, 1))
    # ball radii per unit eps of the measurements' terms and of their R(0), R(oo) balls
    radii = {
        "c": [[F * upper_abs(jac.S_c[j][h]) for h in range(H)] for j in range(n_meas)],
        "rho": [[F * upper_abs(jac.S_rho[j][h]) for h in range(H)] for j in range(n_meas)],
        "zero": [mpmath.mpf(1)] * n_meas,  # an answer
    }
    # R(oo): the fitted ball a of each measurement (exactlearn.approx.run), not R(0) - sum_h c_h
    radii["inf"] = [F * upper_abs(jac.rowsum(J, 0, range(m))) for J in jac.jac]
    for j, (_, cs, rhos) in enumerate(jac.data):
        _separate(cond, thr, cs, rhos, radii["c"][j], radii["rho"][j], True)
    cond["copy_condition"] = max(max(upper_abs(jac.rowsum(J, i, range(m))) for i in range(m))
                                 for J in jac.jac)
    d = jac.d
    weight_norms = _norm_inf(jac.D, n_meas, d * d) * _norm_inf(jac.Dinv_q, d * d, n_meas)
    cond["weight_design_condition"] = _mpf(weight_norms)
    cond["value_design_condition"] = _mpf(_norm_inf(jac.A, n_meas, d) * _norm_inf(jac.P_q, d, n_meas))
    gaps = {"score": inf, "residue": inf}
    for j, link in links:
        _link(jac, j, LinkKind(link), radii, cond, thr, gaps, F)
    cond["link_score_gap"] = gaps["score"]
    cond["link_residue_gap"] = gaps["residue"]
    first = {k: v for k, v in thr.items() if not k.startswith("second order")}
    binding = min(first, key=lambda k: first[k])
    cond["noise_threshold"] = first[binding]
    # only the measured configurations feed the parameters; the matchings' curvature only
    # moves their terms (the pairing decision, covered by its own threshold)
    cond["linearity_threshold"] = thr["second order (measurements)"]
    return cond, thr, binding


def _separate(cond: dict, thr: dict, cs, rhos, r_c, r_rho, record: bool) -> None:
    """Residues away from 0, poles apart and negative, for one configuration's terms."""
    for h in range(len(cs)):
        rho, c = value(rhos[h]), value(cs[h])
        if record:
            cond["min_residue"] = min(cond["min_residue"], abs(c))
            cond["rho_min"] = min(cond["rho_min"], rho)
            cond["rho_max"] = max(cond["rho_max"], rho)
        thr["residue vs zero"] = min(thr["residue vs zero"], abs(c) / r_c[h])
        thr["pole positivity"] = min(thr["pole positivity"], rho / r_rho[h])
        for g in range(h):
            rg = value(rhos[g])
            if record:
                cond["min_pole_gap"] = min(cond["min_pole_gap"], abs(1 / rho - 1 / rg))
                cond["min_score_gap"] = min(cond["min_score_gap"], abs(mpmath.log(rho) - mpmath.log(rg)))
            thr["pole separation"] = min(thr["pole separation"], abs(rho - rg) / (r_rho[h] + r_rho[g]))


def _link(jac: Jacobian, j: int, link: LinkKind, radii: dict, cond: dict, thr: dict, gaps: dict, F) -> None:
    """The matching configuration of link ``(j-1, j)``: its terms' separation and the pairing margin.

    Its ``R_C(0)``, ``R_C(oo)`` are known by linearity and its samples are
    ``k = 1..2H-1`` (docs/algorithm.md section 4).
    """
    H = jac.H
    r_zero, r_inf = radii["zero"], radii["inf"]
    mpts = [0] + matching_points(H)  # row 0 is the known value R(0)
    xm, zm = linked_tokens(link, jac.measurements[j - 1], jac.measurements[j])
    # the model's heads in canonical order: the true pairing is the identity
    _, cm, rm = jac.head_data(xm, zm)
    Jm = jac.local(cm, rm, mpts, True)
    if link is LinkKind.X:   # R_C(0) = R_j(0), R_C(oo) = R_{j-1}(oo) + R_j(oo) - R_j(0)
        w_zero, w_inf = r_zero[j], r_inf[j - 1] + r_inf[j] + r_zero[j]
    else:                    # R_C(0) = R_{j-1}(0) + R_j(0), R_C(oo) = R_{j-1}(oo) + R_j(0)
        w_zero, w_inf = r_zero[j - 1] + r_zero[j], r_inf[j - 1] + r_zero[j]
    r_m = []  # radii of (c_C, rho_C) per unit eps: F |Jm| w, R(oo) entering every row with -1
    for i in range(2 * H):
        total_row = jac.num(fmpq(0))
        for k in range(len(mpts)):
            total_row += Jm[i, k]
        r_m.append(F * (upper_abs(Jm[i, 0]) * w_zero
                        + sum((upper_abs(Jm[i, k]) for k in range(1, len(mpts))), mpmath.mpf(0))
                        + upper_abs(total_row) * w_inf))
    _separate(cond, thr, cm, rm, r_m[:H], r_m[H:], False)
    thr["second order (matchings)"] = min(
        thr["second order (matchings)"],
        jac.second_order(Jm, cm, rm, mpts, [w_zero + w_inf] + [1 + w_inf] * (len(mpts) - 1), 0))
    edge = _edges(jac, j, link, radii, cm, rm, r_m[:H], r_m[H:], gaps)
    thr["matching (wrong pairing)"] = min(thr["matching (wrong pairing)"], wrong_matching_threshold(edge, H))


def _edges(jac: Jacobian, j: int, link: LinkKind, radii: dict, cm, rm, rm_c, rm_rho,
           gaps: dict) -> list:
    """``edge[h][h'][t]``: the ``eps`` at which head ``h`` of ``j-1`` and ``h'`` of ``j``
    could fit term ``t``.

    The learner keeps an edge when the pole product overlaps ``rho_C,t`` AND the
    residue combination overlaps ``c_C,t``, so it appears once ``eps`` reaches
    the largest of those gap/radius ratios; true edges have gap 0.
    """
    H = jac.H
    r_c, r_rho = radii["c"], radii["rho"]
    cp, rp = [value(x) for x in jac.data[j - 1][1]], [value(x) for x in jac.data[j - 1][2]]
    cc, rc = [value(x) for x in jac.data[j][1]], [value(x) for x in jac.data[j][2]]
    cM, rM = [value(x) for x in cm], [value(x) for x in rm]
    edge = [[[mpmath.mpf(0)] * H for _ in range(H)] for _ in range(H)]
    for h in range(H):
        for hp in range(H):
            for t in range(H):
                if hp == h and t == h:
                    continue
                product = rp[h] * rc[hp]
                need = abs(product - rM[t]) / (rc[hp] * r_rho[j - 1][h] + rp[h] * r_rho[j][hp] + rm_rho[t])
                gaps["score"] = min(gaps["score"], abs(mpmath.log(product / rM[t])))
                if link is LinkKind.X:
                    gap = abs(cp[h] + cc[hp] - cM[t])
                    need = max(need, gap / (r_c[j - 1][h] + r_c[j][hp] + rm_c[t]))
                else:
                    same, target = abs(cp[h] - cc[hp]), abs(cp[h] - cM[t])
                    gap = max(same, target)
                    need = max(need, same / (r_c[j - 1][h] + r_c[j][hp]), target / (r_c[j - 1][h] + rm_c[t]))
                gaps["residue"] = min(gaps["residue"], gap)
                edge[h][hp][t] = need
    return edge


def wrong_matching_threshold(edge, H: int) -> mpmath.mpf:
    """The smallest level ``L`` at which the edges ``edge[h][h'][t] <= L`` admit a perfect pairing
    ``h -> (sigma[h], tau[h])`` other than the identity (the true one, whose edges are 0).

    A bottleneck problem, solved by bisection over the distinct edge levels: the set of
    pairings grows with ``L``. ``inf`` when no other pairing exists at any level (``H = 1``).
    """
    identity = (list(range(H)), list(range(H)))

    def another(level) -> bool:
        edges = [[(hp, t) for hp in range(H) for t in range(H) if edge[h][hp][t] <= level] for h in range(H)]
        return any(found != identity for found in perfect_matchings(edges, limit=2))

    levels = sorted({edge[h][hp][t] for h in range(H) for hp in range(H) for t in range(H)})
    if not another(levels[-1]):
        return mpmath.inf
    lo, hi = 0, len(levels) - 1  # another(levels[hi]) holds
    while lo < hi:
        mid = (lo + hi) // 2
        if another(levels[mid]):
            hi = mid
        else:
            lo = mid + 1
    return levels[lo]


def _mpf(q: fmpq) -> mpmath.mpf:
    return mpmath.mpf(int(q.p)) / int(q.q)


def _norm_inf(M: Any, r: int, c: int) -> fmpq:
    return max(sum((abs(M[i, j]) for j in range(c)), fmpq(0)) for i in range(r))
