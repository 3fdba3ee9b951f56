"""The conditions that come with ``C`` and the first-order noise thresholds.

docs/approximate.md states them. Thresholds are stated for the learner's balls:
a copy-function output carries the radius ``F`` times its first-order error
(``F = FIRST_ORDER_SAFETY``, copyfun's non-rigorous mode), sums add radii,
products ``x y`` have radius ``|x| r_y + |y| r_x`` (arb, to first order). A gap
``g`` between two quantities whose radii per unit ``eps`` add up to ``r`` closes
-- the balls may overlap -- at ``eps = g / r``.

>>> wrong_matching_threshold([[[0, 5], [2, 9]], [[3, 1], [7, 0]]], 2)   # h0 -> (1, 0), h1 -> (0, 1)
2
>>> Threshold("residue vs zero").first_order, Threshold.SECOND_ORDER_MATCHINGS.first_order
(True, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import mpmath
from flint import fmpq

from ...matching import perfect_matchings
from ...schedule import linked_tokens, matching_points
from ...states import LinkKind, StrEnum
from ..core.balls import abs_upper, to_mpf
from ..core.copyfun import FIRST_ORDER_SAFETY
from .jacobian import Jacobian

__all__ = ["conditions", "wrong_matching_threshold", "Threshold", "ConditionName"]


class Threshold(StrEnum):
    """A noise level at which a decision of the learner could change (``Sensitivity.thresholds``)."""

    RESIDUE = "residue vs zero"  # a residue's ball could contain 0
    POLE_SEPARATION = "pole separation"  # two poles' balls could meet
    POLE_POSITIVITY = "pole positivity"  # a rho's ball could leave the positive axis
    WRONG_PAIRING = "matching (wrong pairing)"  # a wrong perfect pairing of a link could fit
    SECOND_ORDER_MEASUREMENTS = "second order (measurements)"  # second-order terms reach half the first
    SECOND_ORDER_MATCHINGS = "second order (matchings)"

    @property
    def first_order(self) -> bool:
        """Whether it is one of the first-order thresholds (the noise threshold is their smallest)."""
        return self not in (Threshold.SECOND_ORDER_MEASUREMENTS, Threshold.SECOND_ORDER_MATCHINGS)


class ConditionName(StrEnum):
    """A condition reported with ``C`` (``Sensitivity.conditions``, described there)."""

    MIN_POLE_GAP = "min_pole_gap"
    MIN_SCORE_GAP = "min_score_gap"
    MIN_RESIDUE = "min_residue"
    RHO_MIN = "rho_min"
    RHO_MAX = "rho_max"
    COPY_CONDITION = "copy_condition"
    WEIGHT_DESIGN_CONDITION = "weight_design_condition"
    VALUE_DESIGN_CONDITION = "value_design_condition"
    LINK_SCORE_GAP = "link_score_gap"
    LINK_RESIDUE_GAP = "link_residue_gap"
    NOISE_THRESHOLD = "noise_threshold"
    LINEARITY_THRESHOLD = "linearity_threshold"


class _Radii(NamedTuple):
    """Ball radii per unit ``eps`` of the measurements: ``residue[j][h]``, ``rho[j][h]``, and the
    answer ``R_j(0)`` and the fitted ``R_j(oo)`` of each."""

    residue: list[list[mpmath.mpf]]
    rho: list[list[mpmath.mpf]]
    at_zero: list[mpmath.mpf]
    at_infinity: list[mpmath.mpf]


@dataclass
class _Found:
    """The conditions and thresholds found so far (each lowered, or raised, as configurations come)."""

    conditions: dict[ConditionName, Any] = field(default_factory=lambda: {
        ConditionName.MIN_POLE_GAP: mpmath.inf, ConditionName.MIN_SCORE_GAP: mpmath.inf,
        ConditionName.MIN_RESIDUE: mpmath.inf, ConditionName.RHO_MIN: mpmath.inf,
        ConditionName.RHO_MAX: mpmath.mpf(0)})
    thresholds: dict[Threshold, Any] = field(default_factory=lambda: {t: mpmath.inf for t in Threshold})
    score_gap: Any = mpmath.inf  # smallest link score gap over the wrong edges
    residue_gap: Any = mpmath.inf  # smallest link residue gap over the wrong edges

    def lower(self, threshold: Threshold, value: Any) -> None:
        self.thresholds[threshold] = min(self.thresholds[threshold], value)

    def at_most(self, condition: ConditionName, value: Any) -> None:
        self.conditions[condition] = min(self.conditions[condition], value)


def conditions(jac: Jacobian, links: Sequence[tuple[int, LinkKind | str]]
               ) -> tuple[dict[ConditionName, Any], dict[Threshold, Any], Threshold]:
    """``(conditions, thresholds, binding)`` for the configurations of ``jac`` and its ``links``."""
    safety = mpmath.mpf(FIRST_ORDER_SAFETY)
    H, n_meas, m = jac.H, len(jac.measurements), len(jac.points)
    found = _Found()
    # second order: beyond this eps the error is no longer linear in the noise
    for j, (_, cs, rhos) in enumerate(jac.data):
        found.lower(Threshold.SECOND_ORDER_MEASUREMENTS,
                    jac.second_order(jac.jac[j], cs, rhos, jac.points, [1] * m, 1))
    # ball radii per unit eps of the measurements' terms and of their R(0), R(oo) balls; R(oo) is the fitted
    # ball of each measurement (exactlearn.approx.core.run), not R(0) - sum_h c_h
    radii = _Radii(
        residue=[[safety * abs_upper(jac.S_c[j][h]) for h in range(H)] for j in range(n_meas)],
        rho=[[safety * abs_upper(jac.S_rho[j][h]) for h in range(H)] for j in range(n_meas)],
        at_zero=[mpmath.mpf(1)] * n_meas,  # an answer
        at_infinity=[safety * abs_upper(jac.rowsum(J, 0, range(m))) for J in jac.jac],
    )
    for j, (_, cs, rhos) in enumerate(jac.data):
        _separate(found, cs, rhos, radii.residue[j], radii.rho[j], True)
    found.conditions[ConditionName.COPY_CONDITION] = max(
        max(abs_upper(jac.rowsum(J, i, range(m))) for i in range(m)) for J in jac.jac)
    d = jac.d
    weight_norms = _norm_inf(jac.D, n_meas, d * d) * _norm_inf(jac.Dinv_q, d * d, n_meas)
    found.conditions[ConditionName.WEIGHT_DESIGN_CONDITION] = to_mpf(weight_norms)
    found.conditions[ConditionName.VALUE_DESIGN_CONDITION] = to_mpf(
        _norm_inf(jac.A, n_meas, d) * _norm_inf(jac.P_q, d, n_meas))
    for j, link in links:
        _link(jac, j, LinkKind(link), radii, found, safety)
    found.conditions[ConditionName.LINK_SCORE_GAP] = found.score_gap
    found.conditions[ConditionName.LINK_RESIDUE_GAP] = found.residue_gap
    first = {k: v for k, v in found.thresholds.items() if k.first_order}
    binding = min(first, key=lambda k: first[k])
    found.conditions[ConditionName.NOISE_THRESHOLD] = first[binding]
    # only the measured configurations feed the parameters; the matchings' curvature only
    # moves their terms (the pairing decision, covered by its own threshold)
    linearity = found.thresholds[Threshold.SECOND_ORDER_MEASUREMENTS]
    found.conditions[ConditionName.LINEARITY_THRESHOLD] = linearity
    return found.conditions, found.thresholds, binding


def _separate(found: _Found, cs, rhos, r_c, r_rho, record: bool) -> None:
    """Residues away from 0, poles apart and negative, for one configuration's terms."""
    for h in range(len(cs)):
        rho, c = to_mpf(rhos[h]), to_mpf(cs[h])
        if record:
            found.at_most(ConditionName.MIN_RESIDUE, abs(c))
            found.at_most(ConditionName.RHO_MIN, rho)
            found.conditions[ConditionName.RHO_MAX] = max(found.conditions[ConditionName.RHO_MAX], rho)
        found.lower(Threshold.RESIDUE, abs(c) / r_c[h])
        found.lower(Threshold.POLE_POSITIVITY, rho / r_rho[h])
        for g in range(h):
            rg = to_mpf(rhos[g])
            if record:
                found.at_most(ConditionName.MIN_POLE_GAP, abs(1 / rho - 1 / rg))
                found.at_most(ConditionName.MIN_SCORE_GAP, abs(mpmath.log(rho) - mpmath.log(rg)))
            found.lower(Threshold.POLE_SEPARATION, abs(rho - rg) / (r_rho[h] + r_rho[g]))


def _link(jac: Jacobian, j: int, link: LinkKind, radii: _Radii, found: _Found, safety) -> None:
    """The matching configuration of link ``(j-1, j)``: its terms' separation and the pairing margin.

    Its ``R_C(0)``, ``R_C(oo)`` are known by linearity and its samples are
    ``k = 1..2H-1`` (docs/algorithm.md section 4).
    """
    H = jac.H
    r_zero, r_inf = radii.at_zero, radii.at_infinity
    points = [0] + matching_points(H)  # row 0 is the known value R(0)
    x_link, z_link = linked_tokens(link, jac.measurements[j - 1], jac.measurements[j])
    # the model's heads in canonical order: the true pairing is the identity
    _, c_link, rho_link = jac.head_data(x_link, z_link)
    J_link = jac.local(c_link, rho_link, points, True)
    if link is LinkKind.X:   # R_C(0) = R_j(0), R_C(oo) = R_{j-1}(oo) + R_j(oo) - R_j(0)
        w_zero, w_inf = r_zero[j], r_inf[j - 1] + r_inf[j] + r_zero[j]
    else:                    # R_C(0) = R_{j-1}(0) + R_j(0), R_C(oo) = R_{j-1}(oo) + R_j(0)
        w_zero, w_inf = r_zero[j - 1] + r_zero[j], r_inf[j - 1] + r_zero[j]
    link_radii = []  # radii of (c_C, rho_C) per unit eps: F |J_link| w, R(oo) entering every row with -1
    for i in range(2 * H):
        total_row = jac.num(fmpq(0))
        for k in range(len(points)):
            total_row += J_link[i, k]
        link_radii.append(safety * (abs_upper(J_link[i, 0]) * w_zero
                             + sum((abs_upper(J_link[i, k]) for k in range(1, len(points))), mpmath.mpf(0))
                             + abs_upper(total_row) * w_inf))
    _separate(found, c_link, rho_link, link_radii[:H], link_radii[H:], False)
    weights = [w_zero + w_inf] + [1 + w_inf] * (len(points) - 1)
    second_order = jac.second_order(J_link, c_link, rho_link, points, weights, 0)
    found.lower(Threshold.SECOND_ORDER_MATCHINGS, second_order)
    edge = _edges(jac, j, link, radii, c_link, rho_link, link_radii[:H], link_radii[H:], found)
    found.lower(Threshold.WRONG_PAIRING, wrong_matching_threshold(edge, H))


def _edges(jac: Jacobian, j: int, link: LinkKind, radii: _Radii, c_link, rho_link, r_c_link, r_rho_link,
           found: _Found) -> list:
    """``edge[h][h'][t]``: the ``eps`` at which head ``h`` of ``j-1`` and ``h'`` of ``j``
    could fit term ``t``.

    The learner keeps an edge when the pole product overlaps ``rho_C,t`` AND the
    residue combination overlaps ``c_C,t``, so it appears once ``eps`` reaches
    the largest of those gap/radius ratios; true edges have gap 0.
    """
    H = jac.H
    r_c, r_rho = radii.residue, radii.rho
    c_prev, rho_prev = [to_mpf(x) for x in jac.data[j - 1][1]], [to_mpf(x) for x in jac.data[j - 1][2]]
    c_cur, rho_cur = [to_mpf(x) for x in jac.data[j][1]], [to_mpf(x) for x in jac.data[j][2]]
    c_target, rho_target = [to_mpf(x) for x in c_link], [to_mpf(x) for x in rho_link]
    edge = [[[mpmath.mpf(0)] * H for _ in range(H)] for _ in range(H)]
    for h in range(H):
        for hp in range(H):
            for t in range(H):
                if hp == h and t == h:
                    continue
                product = rho_prev[h] * rho_cur[hp]
                r_product = rho_cur[hp] * r_rho[j - 1][h] + rho_prev[h] * r_rho[j][hp]
                need = abs(product - rho_target[t]) / (r_product + r_rho_link[t])
                found.score_gap = min(found.score_gap, abs(mpmath.log(product / rho_target[t])))
                if link is LinkKind.X:
                    gap = abs(c_prev[h] + c_cur[hp] - c_target[t])
                    need = max(need, gap / (r_c[j - 1][h] + r_c[j][hp] + r_c_link[t]))
                else:
                    same, target = abs(c_prev[h] - c_cur[hp]), abs(c_prev[h] - c_target[t])
                    gap = max(same, target)
                    need = max(need, same / (r_c[j - 1][h] + r_c[j][hp]),
                               target / (r_c[j - 1][h] + r_c_link[t]))
                found.residue_gap = min(found.residue_gap, gap)
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


def _norm_inf(M: Any, r: int, c: int) -> fmpq:
    return max(sum((abs(M[i, j]) for j in range(c)), fmpq(0)) for i in range(r))
