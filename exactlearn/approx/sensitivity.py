"""The sensitivity constant ``C``: how much an output error can move the parameters.

ALGORITHM.md section 7. The learner is a map ``F`` from the vector ``y`` of all
oracle answers to the parameters ``theta = (W_h, v_h)_h``. If every answer is
off by at most ``eps`` then, to first order::

    max |theta_hat - theta|  <=  C * eps,     C = ||DF(y)||_{inf -> inf}
                                                = max over parameters of sum_i |d theta / d y_i| .

``C`` is computed here at the exact data, for the configurations the learner
actually used, by the chain rule through the schedule:

* **copy function** of measurement configuration ``j`` (answers at ``k = 0..2H``):
  ``R(k) = a + sum_h c_h / (1 + k rho_h)``; the local Jacobian
  ``J_j = (d(a, c, rho) / dy)`` is the inverse of the ``(2H+1) x (2H+1)`` matrix
  ``M_j = d R(k_i) / d(a, c, rho)`` (the interpolant is locally unique, so any
  consistent reconstruction has this derivative);
* **weights**: ``vec(W_h) = s^-2 D^-1 (log rho_{j,h})_j`` with ``D`` the exact
  ``d^2 x d^2`` design, so ``d W = s^-2 D^-1 diag(1/rho) d rho``;
* **values**: ``v_h = s^-1 (A^T A)^-1 A^T (c_{j,h})_j`` (least squares over all
  ``d^2`` measurement rows, as :class:`~exactlearn.approx.field.RealBalls` solves);
* **the chain's matching configurations** (one per link ``(j-1, j)``, matrix
  ``M_{j-1} + M_j``) do not enter ``C``. Their poles ``rho_{j-1} rho_j`` and
  residues (``c_{j-1} + c_j`` or ``c_{j-1} = c_j``) are functions of what the
  two linked measurements already measure (a weight row ``vec(M_{j-1} + M_j)``
  that is the sum of two rows of ``D``), so they carry no new information on
  the parameters -- at most a little noise averaging, which the learner (the
  one schedule shared with the exact path) does not do: it uses them only to
  decide which head of ``j`` is which head of ``j - 1``, a discrete choice.
  ``DF`` therefore has zero columns for their answers. They do set part of the
  noise threshold: the pairing must stay unique (``matching (wrong pairing)``).

The columns of ``DF`` are the answers of *distinct* queries: a query the
schedule asks twice (the same token ``x`` in two configurations at ``k = 0``)
is answered identically, so its two entries are added before taking absolute
values. With that, ``C`` is attained: answer errors ``eps * sign(DF row)``
move the worst parameter by ``C * eps`` to first order
(:meth:`Sensitivity.worst_case_pattern`).

For an exp-parametrised model and an integer query scale every quantity above
is rational, so ``C`` is computed **exactly** (``flint.fmpq``). For a real
model it is computed in arb ball arithmetic (a rigorous enclosure).

The conditions that make the first-order bound meaningful are reported with
``C`` (:class:`Sensitivity`): pole separation, residue size, design
conditioning, the pairing margins of the links, and a first-order **noise
threshold**: the smallest ``eps`` at which the learner's balls could close one
of those gaps (a residue reaching zero, two poles meeting, a wrong pairing of
two linked configurations becoming possible). Below it the learner's decisions are those of the exact run and the
error is ``<= C * eps + O(eps^2)``; the learner itself certifies every decision
with balls at run time and refuses when it cannot (it does not rely on this
estimate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import mpmath
from flint import arb, arb_mat, fmpq, fmpq_mat

from ..errors import InvalidArgumentError
from ..field import ExactRationals
from ..learn import DEFAULT_TOKEN_BOUND, run_schedule
from ..model import MultiHeadAttention
from ..schedule import copies_query, linked_tokens, matching_points, measurement_points, value_row, weight_row
from .balls import abs_upper, as_fmpq, to_arb, to_mpf, working_precision
from .copyfun import FIRST_ORDER_SAFETY
from .learn import DEFAULT_PRECISION, ApproxRecovery, ScaledQueries, learn_approx
from .models import NoisyOracle, RealMultiHeadAttention, exact_tokens

__all__ = ["sensitivity", "Sensitivity", "choose_scale", "ScaleChoice", "DEFAULT_SCALES"]


class _Ring:
    """Exact rationals (fmpq / fmpq_mat) or arb balls (arb / arb_mat), behind one small interface."""

    def __init__(self, exact: bool):
        self.exact = exact

    def num(self, x):
        return x if self.exact else to_arb(x)

    def mat(self, rows: list[list]):
        r, c = len(rows), len(rows[0])
        entries = [self.num(x) for row in rows for x in row]
        return fmpq_mat(r, c, entries) if self.exact else arb_mat(r, c, entries)

    def hi(self, x) -> mpmath.mpf:
        """An upper bound of ``|x|`` as an mpf."""
        if self.exact:
            q = abs(x)
            return mpmath.fdiv(int(q.p), int(q.q), rounding="u")
        return abs_upper(x)

    def value(self, x) -> mpmath.mpf:
        if self.exact:
            return mpmath.mpf(int(x.p)) / int(x.q)
        return to_mpf(x)


@dataclass
class Sensitivity:
    """The first-order constant ``C`` and the conditions it comes with.

    ``C`` is exact (``fmpq``) for exp-parametrised models with an integer scale,
    an arb ball otherwise; ``C_upper`` is an mpf upper bound of it. ``C_W`` /
    ``C_v`` split it into the weight and value parts. All figures refer to the
    learner's parameters ``W`` (the real matrix) and ``v``, with the output
    error measured in absolute value and the parameter error as the maximum
    over all entries of all heads.

    ``conditions`` (mpf numbers):

    * ``min_pole_gap`` -- smallest ``|1/rho_h - 1/rho_h'|`` in a measurement configuration;
    * ``min_score_gap`` -- smallest ``|log rho_h - log rho_h'|`` (scores, scale-aware);
    * ``min_residue`` -- smallest ``|c_h|`` (a head's share in a configuration);
    * ``rho_min`` / ``rho_max`` -- the range of ``rho`` (poles at ``-1/rho``);
    * ``copy_condition`` -- largest ``||J_j||_inf`` (answers -> ``(a, c, rho)``);
    * ``weight_design_condition`` -- ``||D||_inf ||D^-1||_inf``;
    * ``value_design_condition`` -- ``||A||_inf ||(A^T A)^-1 A^T||_inf``;
    * ``link_score_gap`` -- smallest ``|log(rho_{j-1,h} rho_{j,h'}) - log rho_{C,t}|``
      over the wrong edges ``(h, h', t)`` of every link (pole products, in score units);
    * ``link_residue_gap`` -- smallest residue gap over the wrong edges: ``|c_{j-1,h} +
      c_{j,h'} - c_{C,t}|`` for a shared ``x``, ``max(|c_{j-1,h} - c_{j,h'}|, |c_{j-1,h} -
      c_{C,t}|)`` for a shared ``a`` (0 when two heads share ``v``: the poles must then
      separate them). A single wrong edge is harmless; the threshold below asks when a
      whole wrong perfect matching could fit;
    * ``noise_threshold`` -- the first-order threshold described in the module doc,
      with ``binding`` naming the condition that sets it: the smallest ``eps`` at
      which the learner's balls could make a residue vanish, two poles meet, a pole
      leave the negative axis (in a measurement or a matching configuration), or a
      wrong perfect pairing of two linked configurations fit. Each gap is divided by
      the sum of the first-order ball radii per unit ``eps`` of the quantities
      compared: ``FIRST_ORDER_SAFETY`` times the first-order error of a copy-function
      output, radii added as arb adds them (no correlation), products by
      ``|x| r_y + |y| r_x``;
    * ``linearity_threshold`` -- the ``eps`` at which second-order terms could
      reach half the first-order error (worst case over signs, componentwise;
      measured second-order terms are usually orders of magnitude smaller).

    All thresholds are conservative estimates (absolute values summed as if all
    errors conspired); ``thresholds`` lists each one. They describe the exact
    data; the learner does not use them -- it decides from its balls at run time.
    """

    C: Any
    C_upper: mpmath.mpf
    C_W: mpmath.mpf
    C_v: mpmath.mpf
    exact: bool
    scale: fmpq
    heads: int
    d: int
    conditions: dict[str, mpmath.mpf]
    binding: str
    thresholds: dict[str, mpmath.mpf]
    measurements: list[tuple[tuple[int, ...], tuple[int, ...]]]
    links: list[tuple[int, str]] = field(default_factory=list)  # (j, "x" | "a"): link (j-1, j)
    _predict: Callable = field(repr=False, default=None)
    worst_parameter: tuple = ()
    _worst_pattern: dict = field(repr=False, default_factory=dict)

    @property
    def noise_threshold(self) -> mpmath.mpf:
        return self.conditions["noise_threshold"]

    def predict(self, noise: Callable[[list], Any]) -> list[tuple[list[list[mpmath.mpf]], list[mpmath.mpf]]]:
        """First-order parameter deviations ``DF . n`` for a known noise function.

        ``noise(tokens)`` gives the output error of a query (real tokens, as the
        oracle received them), e.g. :meth:`NoisyOracle.noise`. Returns
        ``(dW, dv)`` per canonical head of the model, in the model's canonical order.
        """
        return self._predict(noise)

    def worst_case_pattern(self, tokens: Sequence[Sequence[Any]]) -> fmpq:
        """The sign (-1, 0 or 1) of the answer error that attains ``C``, for query ``tokens``.

        ``C`` is attained by the parameter :attr:`worst_parameter` (``("W", h, a, b)``
        or ``("v", h, a)``, canonical head ``h``) when every measurement answer is
        off by ``eps`` times this sign (other queries: 0). Use it as the
        ``pattern`` of a :class:`~exactlearn.approx.NoisyOracle` to see that ``C``
        is sharp: that parameter's error is then ``C * eps`` to first order.
        """
        return self._worst_pattern.get(exact_tokens(tokens, self.d), fmpq(0))

    def summary(self) -> str:
        """A few lines for reports (numbers printed with 4 significant digits)."""
        def f(x):
            return mpmath.nstr(x, 4)
        kind = "exact rational" if self.exact else "arb enclosure"
        lines = [
            f"C = {f(self.C_upper)} ({kind}; weights {f(self.C_W)}, values {f(self.C_v)}), "
            f"query scale s = {self.scale}",
            "conditions: " + ", ".join(f"{k} = {f(v)}" for k, v in self.conditions.items()
                                       if not k.endswith("threshold")),
            f"noise threshold (first order) = {f(self.noise_threshold)}, set by {self.binding}; "
            f"linearity threshold (second order, worst case) = {f(self.conditions['linearity_threshold'])}",
        ]
        return "\n".join(lines)


def _true_heads(model, precision: int):
    if isinstance(model, MultiHeadAttention):
        canon = model.canonical()
        return "exp", [(h.exp_W, h.v) for h in canon.heads]
    if isinstance(model, RealMultiHeadAttention):
        canon = model.canonical()
        return "real", ([] if canon is None else canon.heads)
    raise InvalidArgumentError(
        f"sensitivity needs a MultiHeadAttention or RealMultiHeadAttention, got {type(model).__name__}"
    )


def _links(links) -> list[tuple[int, str]]:
    """``[(j, kind)]`` for the matching configurations ``{j: Configuration}`` of a run."""
    return sorted((j, cfg.link) for j, cfg in links.items())


def _configurations(model, kind, H, d, s, seed, token_bound, precision):
    """The measurement tokens and the links of a noise-free run of the learner on ``model``."""
    if kind == "exp" and s.q == 1:
        oracle = ScaledQueries(lambda tokens: model.evaluate(tuple(tuple(int(t) for t in tok) for tok in tokens)), s)
        run = run_schedule(oracle, d, H, field=ExactRationals(), seed=seed, token_bound=token_bound)
        return [(c.x, c.z) for c in run.configs], _links(run.links)
    real = model if kind == "real" else RealMultiHeadAttention.from_exp_model(model, 2 * precision)
    rec = learn_approx(NoisyOracle(real, 0, precision=2 * precision), d, heads=H, precision=precision,
                       scale=s, seed=seed, token_bound=token_bound)
    return rec.measurements, _links(rec.links)


def sensitivity(
    model: MultiHeadAttention | RealMultiHeadAttention,
    *,
    recovery: ApproxRecovery | None = None,
    seed: Any = 0,
    scale: Any = None,
    token_bound: int = DEFAULT_TOKEN_BOUND,
    precision: int = DEFAULT_PRECISION,
) -> Sensitivity:
    """The first-order constant ``C`` of the recovery map at ``model``'s exact data.

    The constant depends on the queries. With ``recovery`` (a result of
    :func:`learn_approx` on this model) it is computed for the configurations
    and the scale that run used. Without it, the configurations are those of a
    noise-free run with ``seed``, ``scale`` (default 1) and ``token_bound``:
    the exact learner for an exp-parametrised model and an integer scale
    ("computed exactly from the exact run"), otherwise the approximate learner
    on exact answers.

    >>> from exactlearn import MultiHeadAttention
    >>> E = [[["11/10", "9/10"], ["4/5", "6/5"]], [["6/5", 1], ["9/10", "4/3"]]]
    >>> sens = sensitivity(MultiHeadAttention.from_lists(E, [[1, -2], [3, 1]]))
    >>> sens.exact, type(sens.C).__name__, 10**6 < sens.C < 10**7   # C is an exact rational here
    (True, 'fmpq', True)
    """
    kind, heads = _true_heads(model, precision)
    H, d = len(heads), model.d
    if H == 0:
        raise InvalidArgumentError("the model's canonical form has no heads")
    if recovery is not None:
        s = recovery.scale
        if scale is not None and as_fmpq(scale, "scale") != s:
            raise InvalidArgumentError("scale differs from the recovery's scale")
        if recovery.num_heads != H:
            raise InvalidArgumentError(f"the recovery has {recovery.num_heads} heads, the model {H}")
        measurements, links = recovery.measurements, _links(recovery.links)
    else:
        s = as_fmpq(1 if scale is None else scale, "scale")
        if s <= 0:
            raise InvalidArgumentError("scale must be positive")
        measurements, links = _configurations(model, kind, H, d, s, seed, token_bound, precision)
    with working_precision(precision):
        return _compute(kind, heads, H, d, s, measurements, links)


def _compute(kind, heads, H, d, s, measurements, links) -> Sensitivity:
    ring = _Ring(exact=(kind == "exp" and s.q == 1))
    prec = mpmath.mp.prec
    one = ring.num(fmpq(1))
    s2 = s * s

    def head_data(x, z):
        """(a, [c_h], [rho_h]) at the scaled tokens s*x, s*z, in the ring."""
        diff = [zb - xb for zb, xb in zip(z, x)]
        cs, rhos = [], []
        u = [fmpq(0)] * d
        for W, v in heads:
            cs.append(ring.num(s * sum((v[a] * (x[a] - z[a]) for a in range(d)), fmpq(0))))
            u = [ua + va for ua, va in zip(u, v)]
            if kind == "exp":
                if ring.exact:
                    rho = fmpq(1)
                    for a in range(d):
                        for b in range(d):
                            e = int((s2 * diff[a] * x[b]).p)  # an integer: s is an integer here
                            if e:
                                rho *= W[a][b] ** e
                else:
                    rho = arb(0)
                    for a in range(d):
                        for b in range(d):
                            if diff[a] * x[b]:
                                rho += (s2 * diff[a] * x[b]) * arb(W[a][b]).log()
                    rho = rho.exp()
            else:
                score = s2 * sum((diff[a] * W[a][b] * x[b] for a in range(d) for b in range(d)), fmpq(0))
                rho = to_arb(score).exp()
            rhos.append(rho)
        a_inf = ring.num(s * sum((u[a] * z[a] for a in range(d)), fmpq(0)))
        return a_inf, cs, rhos

    def local_jacobian(cs, rhos, points, known_a: bool):
        """Inverse of d R(k_i) / d(params); params (a, c, rho) or (c, rho) when a is known."""
        rows = []
        for k in points:
            line = [] if known_a else [one]
            dens = [one + k * r for r in rhos]
            line += [one / den for den in dens]
            line += [-(c * k) / (den * den) for c, den in zip(cs, dens)]
            rows.append(line)
        return ring.mat(rows).inv()

    def rowsum(J, i, cols):
        total = ring.num(fmpq(0))
        for k in cols:
            total += abs(J[i, k])
        return total

    def second_order(J, cs, rhos, points, weights, offset) -> mpmath.mpf:
        """The eps at which second-order terms reach half the first-order error, componentwise.

        First order: ``|d theta_i| <= S_i eps`` with ``S = |J| w`` (``w`` = the
        data errors in units of eps). The second-order residual of row ``k`` is
        at most ``Q_k eps^2`` with ``Q_k = S^T |R_k''| S``; it moves ``theta_i`` by
        ``sum_k |J[i, k]| Q_k eps^2``. Returns ``min_i S_i / (2 sum_k |J[i, k]| Q_k)``.
        ``offset`` is 1 when ``theta`` starts with ``a``, 0 when ``a`` is known.
        """
        size = len(points)
        S = [sum((ring.hi(J[i, k]) * weights[k] for k in range(size)), mpmath.mpf(0)) for i in range(size)]
        Q = []
        for k in points:
            total = mpmath.mpf(0)
            for h, (c, r) in enumerate(zip(cs, rhos)):
                den = abs(1 + k * ring.value(r))
                sc, sr = S[offset + h], S[offset + len(cs) + h]
                total += 2 * sc * sr * abs(k) / den**2 + 2 * abs(ring.value(c)) * k * k * sr**2 / den**3
            Q.append(total)
        out = mpmath.inf
        for i in range(size):
            push = sum((ring.hi(J[i, k]) * Q[k] for k in range(size)), mpmath.mpf(0))
            if push > 0:
                out = min(out, S[i] / (2 * push))
        return out

    n_meas = len(measurements)
    pts = measurement_points(H)
    data, jac = [], []
    for x, z in measurements:
        a_inf, cs, rhos = head_data(x, z)
        data.append((a_inf, cs, rhos))
        jac.append(local_jacobian(cs, rhos, pts, False))
    m = len(pts)
    S_c = [[rowsum(J, 1 + h, range(m)) for h in range(H)] for J in jac]
    S_rho = [[rowsum(J, 1 + H + h, range(m)) for h in range(H)] for J in jac]

    D = fmpq_mat(n_meas, d * d, [e for x, z in measurements for e in weight_row(x, z)])
    Dinv_q = D.inv()
    A = fmpq_mat(n_meas, d, [e for x, z in measurements for e in value_row(x, z)])
    P_q = (A.transpose() * A).inv() * A.transpose()
    Dinv = [[ring.num(Dinv_q[i, j]) for j in range(n_meas)] for i in range(d * d)]
    P = [[ring.num(P_q[i, j]) for j in range(n_meas)] for i in range(d)]

    def norm_inf(M, r, c):
        return max(sum((abs(M[i, j]) for j in range(c)), fmpq(0)) for i in range(r))

    # DF row of every parameter, with the answers of *distinct* queries as columns: a query
    # asked twice (e.g. the same token x in two configurations at k = 0) has one answer error
    scaled = ScaledQueries(lambda tokens: tokens, s)
    keys = [[exact_tokens(scaled(copies_query(x, z, k)), d) for k in pts] for x, z in measurements]
    inv_s2, inv_s = ring.num(1 / s2), ring.num(1 / s)

    def df_row(label) -> dict:
        row: dict = {}
        for j in range(n_meas):
            if label[0] == "W":
                _, h, a, b = label
                factor = Dinv[a * d + b][j] / data[j][2][h] * inv_s2
                line = 1 + H + h
            else:
                _, h, a = label
                factor = P[a][j] * inv_s
                line = 1 + h
            for k_index in range(m):
                key = keys[j][k_index]
                row[key] = row.get(key, ring.num(fmpq(0))) + factor * jac[j][line, k_index]
        return row

    labels = [("W", h, a, b) for h in range(H) for a in range(d) for b in range(d)] + \
             [("v", h, a) for h in range(H) for a in range(d)]
    rows = {}
    for label in labels:
        total = ring.num(fmpq(0))
        for coeff in df_row(label).values():
            total += abs(coeff)
        rows[label] = total
    worst_label = max(labels, key=lambda lab: ring.hi(rows[lab]))
    C = rows[worst_label]
    C_upper = ring.hi(C)
    C_W = max(ring.hi(rows[lab]) for lab in labels if lab[0] == "W")
    C_v = max(ring.hi(rows[lab]) for lab in labels if lab[0] == "v")

    # -- conditions -------------------------------------------------------------------
    # Thresholds are stated for the learner's balls: a copy-function output carries the radius
    # F * (its first-order error) (F = FIRST_ORDER_SAFETY, copyfun's non-rigorous mode), sums add
    # radii, products x*y have radius |x| r_y + |y| r_x (arb, to first order). A gap g between two
    # quantities whose radii per unit eps add up to r closes -- the balls may overlap -- at eps = g / r.
    F = mpmath.mpf(FIRST_ORDER_SAFETY)
    inf = mpmath.inf
    cond = {"min_pole_gap": inf, "min_score_gap": inf, "min_residue": inf, "rho_min": inf, "rho_max": mpmath.mpf(0)}
    thr = {"residue vs zero": inf, "pole separation": inf, "pole positivity": inf,
           "matching (wrong pairing)": inf, "second order (measurements)": inf,
           "second order (matchings)": inf}
    # second order: beyond this eps the error is no longer linear in the noise
    for j, (a_inf, cs, rhos) in enumerate(data):
        thr["second order (measurements)"] = min(
            thr["second order (measurements)"], second_order(jac[j], cs, rhos, pts, [1] * m, 1))

    def separate(cs, rhos, r_c, r_rho, record: bool) -> None:
        """Residues away from 0, poles apart and negative, for one configuration's terms."""
        for h in range(H):
            rho, c = ring.value(rhos[h]), ring.value(cs[h])
            if record:
                cond["min_residue"] = min(cond["min_residue"], abs(c))
                cond["rho_min"] = min(cond["rho_min"], rho)
                cond["rho_max"] = max(cond["rho_max"], rho)
            thr["residue vs zero"] = min(thr["residue vs zero"], abs(c) / r_c[h])
            thr["pole positivity"] = min(thr["pole positivity"], rho / r_rho[h])
            for g in range(h):
                rg = ring.value(rhos[g])
                if record:
                    cond["min_pole_gap"] = min(cond["min_pole_gap"], abs(1 / rho - 1 / rg))
                    cond["min_score_gap"] = min(cond["min_score_gap"], abs(mpmath.log(rho) - mpmath.log(rg)))
                thr["pole separation"] = min(thr["pole separation"], abs(rho - rg) / (r_rho[h] + r_rho[g]))

    # ball radii per unit eps of the measurements' terms and of their R(0), R(oo) balls
    r_c = [[F * ring.hi(S_c[j][h]) for h in range(H)] for j in range(n_meas)]
    r_rho = [[F * ring.hi(S_rho[j][h]) for h in range(H)] for j in range(n_meas)]
    r_zero = [mpmath.mpf(1)] * n_meas                                   # an answer
    r_inf = [1 + mpmath.fsum(r_c[j]) for j in range(n_meas)]            # R(0) - sum_h c_h, as the schedule forms it
    for j, (a_inf, cs, rhos) in enumerate(data):
        separate(cs, rhos, r_c[j], r_rho[j], True)
    cond["copy_condition"] = max(max(ring.hi(rowsum(J, i, range(m))) for i in range(m)) for J in jac)
    cond["weight_design_condition"] = _mpf(norm_inf(D, n_meas, d * d) * norm_inf(Dinv_q, d * d, n_meas))
    cond["value_design_condition"] = _mpf(norm_inf(A, n_meas, d) * norm_inf(P_q, d, n_meas))

    # the chain's links: matching configuration C of (j-1, j), matrix M_{j-1} + M_j, with
    # R_C(0), R_C(oo) known by linearity and samples k = 1..2H-1 (docs/algorithm.md section 4)
    score_gap, residue_gap = inf, inf
    mpts = [0] + matching_points(H)  # row 0 is the known value R(0)
    for j, link in links:
        (xp, zp), (xc, zc) = measurements[j - 1], measurements[j]
        xm, zm = linked_tokens(link, (xp, zp), (xc, zc))
        _, cm, rm = head_data(xm, zm)  # the model's heads in canonical order: the true pairing is the identity
        Jm = local_jacobian(cm, rm, mpts, True)
        if link == "x":   # R_C(0) = R_j(0), R_C(oo) = R_{j-1}(oo) + R_j(oo) - R_j(0)
            w_zero, w_inf = r_zero[j], r_inf[j - 1] + r_inf[j] + r_zero[j]
        else:             # R_C(0) = R_{j-1}(0) + R_j(0), R_C(oo) = R_{j-1}(oo) + R_j(0)
            w_zero, w_inf = r_zero[j - 1] + r_zero[j], r_inf[j - 1] + r_zero[j]
        r_m = []  # radii of (c_C, rho_C) per unit eps: F |Jm| w, R(oo) entering every row with -1
        for i in range(2 * H):
            total_row = ring.num(fmpq(0))
            for k in range(len(mpts)):
                total_row += Jm[i, k]
            r_m.append(F * (ring.hi(Jm[i, 0]) * w_zero
                            + sum((ring.hi(Jm[i, k]) for k in range(1, len(mpts))), mpmath.mpf(0))
                            + ring.hi(total_row) * w_inf))
        rm_c, rm_rho = r_m[:H], r_m[H:]
        separate(cm, rm, rm_c, rm_rho, False)
        thr["second order (matchings)"] = min(
            thr["second order (matchings)"],
            second_order(Jm, cm, rm, mpts, [w_zero + w_inf] + [1 + w_inf] * (len(mpts) - 1), 0))
        # edge (h, h', t): head h of j-1 and head h' of j through term t of C. The learner keeps it
        # when the pole product overlaps rho_C,t AND the residue combination overlaps c_C,t, so it
        # appears once eps reaches the largest of those gap/radius ratios; true edges have gap 0.
        cp, rp = [ring.value(x) for x in data[j - 1][1]], [ring.value(x) for x in data[j - 1][2]]
        cc, rc = [ring.value(x) for x in data[j][1]], [ring.value(x) for x in data[j][2]]
        cM, rM = [ring.value(x) for x in cm], [ring.value(x) for x in rm]
        edge = [[[mpmath.mpf(0)] * H for _ in range(H)] for _ in range(H)]
        for h in range(H):
            for hp in range(H):
                for t in range(H):
                    if hp == h and t == h:
                        continue
                    product = rp[h] * rc[hp]
                    need = abs(product - rM[t]) / (rc[hp] * r_rho[j - 1][h] + rp[h] * r_rho[j][hp] + rm_rho[t])
                    score_gap = min(score_gap, abs(mpmath.log(product / rM[t])))
                    if link == "x":
                        gap = abs(cp[h] + cc[hp] - cM[t])
                        need = max(need, gap / (r_c[j - 1][h] + r_c[j][hp] + rm_c[t]))
                    else:
                        same, target = abs(cp[h] - cc[hp]), abs(cp[h] - cM[t])
                        gap = max(same, target)
                        need = max(need, same / (r_c[j - 1][h] + r_c[j][hp]), target / (r_c[j - 1][h] + rm_c[t]))
                    residue_gap = min(residue_gap, gap)
                    edge[h][hp][t] = need
        thr["matching (wrong pairing)"] = min(thr["matching (wrong pairing)"], _wrong_matching_threshold(edge, H))
    cond["link_score_gap"] = score_gap
    cond["link_residue_gap"] = residue_gap
    first = {k: v for k, v in thr.items() if not k.startswith("second order")}
    binding = min(first, key=lambda k: first[k])
    cond["noise_threshold"] = first[binding]
    # only the measured configurations feed the parameters; the matchings' curvature only
    # moves their terms (the pairing decision, covered by its own threshold)
    cond["linearity_threshold"] = thr["second order (measurements)"]

    # the answer-error signs that attain C (to first order) in the parameter worst_label
    def _sign(x) -> int:
        value = ring.value(x)
        return (value > 0) - (value < 0)

    worst_pattern = {key: fmpq(_sign(coeff)) for key, coeff in df_row(worst_label).items()}

    def predict(noise):
        with working_precision(prec):
            out = []
            deltas = []
            for j, (x, z) in enumerate(measurements):
                scaled = ScaledQueries(lambda tokens: tokens, s)
                n = [ring.num(as_fmpq(noise(scaled(copies_query(x, z, k))), "noise")) for k in pts]
                J = jac[j]
                deltas.append([sum((J[i, k] * n[k] for k in range(m)), ring.num(fmpq(0))) for i in range(m)])
            for h in range(H):
                dW = [[None] * d for _ in range(d)]
                for idx in range(d * d):
                    total = ring.num(fmpq(0))
                    for j in range(n_meas):
                        total += Dinv[idx][j] * deltas[j][1 + H + h] / data[j][2][h]
                    dW[idx // d][idx % d] = ring.value(total / ring.num(s2))
                dv = []
                for a in range(d):
                    total = ring.num(fmpq(0))
                    for j in range(n_meas):
                        total += P[a][j] * deltas[j][1 + h]
                    dv.append(ring.value(total / ring.num(s)))
                out.append((dW, dv))
            return out

    return Sensitivity(
        C=C, C_upper=C_upper, C_W=C_W, C_v=C_v, exact=ring.exact, scale=s, heads=H, d=d,
        conditions=cond, binding=binding, thresholds=thr, measurements=list(measurements), links=list(links),
        _predict=predict,
        worst_parameter=worst_label, _worst_pattern=worst_pattern,
    )


def _mpf(q: fmpq) -> mpmath.mpf:
    return mpmath.mpf(int(q.p)) / int(q.q)


def _wrong_matching_threshold(edge, H: int) -> mpmath.mpf:
    """The smallest level ``L`` at which the edges ``edge[h][h'][t] <= L`` admit a perfect pairing
    ``h -> (sigma[h], tau[h])`` other than the identity (the true one, whose edges are 0).

    A bottleneck problem, solved by bisection over the distinct edge levels: the set of
    pairings grows with ``L``. ``inf`` when no other pairing exists at any level (``H = 1``).
    """
    def another(level) -> bool:
        sigma, tau = [], []

        def extend(h: int) -> bool:
            if h == H:
                return sigma != list(range(H)) or tau != list(range(H))
            for hp in range(H):
                if hp in sigma:
                    continue
                for t in range(H):
                    if t in tau or edge[h][hp][t] > level:
                        continue
                    sigma.append(hp)
                    tau.append(t)
                    if extend(h + 1):
                        return True
                    sigma.pop()
                    tau.pop()
            return False

        return extend(0)

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


#: Candidate query scales tried by :func:`choose_scale` (powers of two: exact float tokens).
DEFAULT_SCALES = ("1/4", "1/2", 1, 2, 4)


@dataclass
class ScaleChoice:
    """The result of :func:`choose_scale`: the best scale and ``C`` for every candidate."""

    scale: fmpq
    C: mpmath.mpf
    table: list[tuple[fmpq, mpmath.mpf | None, str]]  # (scale, C or None, note)

    def summary(self) -> str:
        lines = [f"{'scale':>8}  {'C':>10}  note"]
        for s, C, note in self.table:
            lines.append(f"{str(s):>8}  {mpmath.nstr(C, 3) if C is not None else '-':>10}  {note}")
        lines.append(f"chosen scale s = {self.scale} (smallest C)")
        return "\n".join(lines)


def choose_scale(
    model: MultiHeadAttention | RealMultiHeadAttention | ApproxRecovery,
    scales: Sequence[Any] = DEFAULT_SCALES,
    *,
    seed: Any = 0,
    token_bound: int = DEFAULT_TOKEN_BOUND,
    max_condition: Any = None,
    max_redraws: int | None = None,
    precision: int = DEFAULT_PRECISION,
    eps: Any = 0,
) -> ScaleChoice:
    """Pick the query scale ``s`` with the smallest sensitivity constant ``C``.

    For each candidate ``s`` the learner is run on the model's exact answers
    (same ``seed``, ``token_bound``, ``max_condition`` as the real run will use,
    so the same configurations) and ``C`` of that run is computed. ``model`` is
    a known model or -- for a black box -- a pilot :class:`ApproxRecovery`,
    whose recovered heads stand in for the truth (``C`` depends on the model
    continuously, so a rough pilot suffices). Candidates where the noise-free
    run cannot resolve the heads are skipped (noted in the table). With
    ``eps`` (the error bound the real oracle declares) the trial runs get
    simulated noise of that size, so their redraw decisions -- and hence their
    configurations -- resemble the real run's.

    No query is sent to the real oracle here.
    """
    if isinstance(model, ApproxRecovery):
        model = model.model()
    if isinstance(model, MultiHeadAttention):
        real = RealMultiHeadAttention.from_exp_model(model, 2 * precision)
    else:
        real = model
    H = real.num_canonical_heads
    table = []
    for value in scales:
        s = as_fmpq(value, "scale")
        try:
            rec = learn_approx(NoisyOracle(real, eps, seed=seed, precision=2 * precision), real.d, heads=H,
                               precision=precision,
                               scale=s, seed=seed, token_bound=token_bound, max_condition=max_condition,
                               max_redraws=max_redraws)
        except Exception as exc:  # an unusable scale is a finding, not a failure
            table.append((s, None, f"not resolved: {type(exc).__name__}"))
            continue
        sens = sensitivity(real, recovery=rec, precision=precision)
        table.append((s, sens.C_upper, f"{rec.queries} queries, {rec.redraws} redraws"))
    usable = [(s, C) for s, C, _ in table if C is not None]
    if not usable:
        raise InvalidArgumentError("no candidate scale lets the learner resolve the heads; try other scales")
    best = min(usable, key=lambda t: t[1])
    return ScaleChoice(best[0], best[1], table)
