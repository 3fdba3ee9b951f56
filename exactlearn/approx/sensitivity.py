"""The sensitivity constant ``C``: how much an output error can move the parameters.

ALGORITHM.md section 7. The learner is a map ``F`` from the vector ``y`` of all
oracle answers to the parameters ``theta = (W_h, v_h)_h``. If every answer is
off by at most ``eps`` then, to first order,

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
* the matching configurations only decide which head is which (a discrete
  choice), so they do not enter ``C``; they set part of the noise threshold.

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
conditioning, the matching margin, and a first-order **noise threshold**:
the smallest ``eps`` at which first-order errors could close one of those gaps
(a residue reaching zero, two poles meeting, a wrong head matching becoming
possible). Below it the learner's decisions are those of the exact run and the
error is ``<= C * eps + O(eps^2)``; the learner itself certifies every decision
with balls at run time and refuses when it cannot (it does not rely on this
estimate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import permutations
from typing import Any, Callable, Sequence

import mpmath
from flint import arb, arb_mat, fmpq, fmpq_mat

from ..errors import InvalidArgumentError
from ..field import ExactRationals
from ..learn import DEFAULT_TOKEN_BOUND, run_schedule
from ..model import MultiHeadAttention
from ..schedule import add_tokens, copies_query, matching_points, measurement_points, value_row, weight_row
from .balls import abs_upper, as_fmpq, to_arb, to_mpf, working_precision
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
    * ``matching_margin`` -- smallest ``|c_0,h + c_j,h' - c^m_tau|`` over wrong pairings
      (a single wrong pairing is harmless; the threshold below asks when a whole
      wrong perfect matching could fit);
    * ``noise_threshold`` -- the first-order threshold described in the module doc,
      with ``binding`` naming the condition that sets it: the smallest ``eps`` at
      which first-order errors could make a residue vanish, two poles or two
      residues meet, a pole leave the negative axis, or a wrong perfect matching
      fit (gap divided by the summed first-order sensitivities);
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


def _configurations(model, kind, H, d, s, seed, token_bound, precision):
    """The measurement and matching tokens of a noise-free run of the learner on ``model``."""
    if kind == "exp" and s.q == 1:
        oracle = ScaledQueries(lambda tokens: model.evaluate(tuple(tuple(int(t) for t in tok) for tok in tokens)), s)
        run = run_schedule(oracle, d, H, field=ExactRationals(), seed=seed, token_bound=token_bound)
        return [(c.x, c.z) for c in run.configs], sorted(run.matchings)
    real = model if kind == "real" else RealMultiHeadAttention.from_exp_model(model, 2 * precision)
    rec = learn_approx(NoisyOracle(real, 0, precision=2 * precision), d, heads=H, precision=precision,
                       scale=s, seed=seed, token_bound=token_bound)
    return rec.measurements, sorted(rec.matchings)


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
    >>> sens.exact, 1000 < sens.C < 10000     # C is an exact rational here
    (True, True)
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
        measurements, matched = recovery.measurements, sorted(recovery.matchings)
    else:
        s = as_fmpq(1 if scale is None else scale, "scale")
        if s <= 0:
            raise InvalidArgumentError("scale must be positive")
        measurements, matched = _configurations(model, kind, H, d, s, seed, token_bound, precision)
    with working_precision(precision):
        return _compute(kind, heads, H, d, s, measurements, matched)


def _compute(kind, heads, H, d, s, measurements, matched) -> Sensitivity:
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
    S_a = [rowsum(J, 0, range(m)) for J in jac]
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
    inf = mpmath.inf
    cond = {"min_pole_gap": inf, "min_score_gap": inf, "min_residue": inf, "rho_min": inf, "rho_max": mpmath.mpf(0)}
    thr = {"residue vs zero": inf, "pole separation": inf, "distinct residues": inf, "pole positivity": inf,
           "matching (wrong pairing)": inf, "second order (measurements)": inf,
           "second order (matchings)": inf}
    # second order: beyond this eps the error is no longer linear in the noise
    for j, (a_inf, cs, rhos) in enumerate(data):
        thr["second order (measurements)"] = min(
            thr["second order (measurements)"], second_order(jac[j], cs, rhos, pts, [1] * m, 1))
    for j, (a_inf, cs, rhos) in enumerate(data):
        for h in range(H):
            rho, c = ring.value(rhos[h]), ring.value(cs[h])
            cond["min_residue"] = min(cond["min_residue"], abs(c))
            cond["rho_min"] = min(cond["rho_min"], rho)
            cond["rho_max"] = max(cond["rho_max"], rho)
            thr["residue vs zero"] = min(thr["residue vs zero"], abs(c) / ring.hi(S_c[j][h]))
            thr["pole positivity"] = min(thr["pole positivity"], rho / ring.hi(S_rho[j][h]))
            for g in range(h):
                rg, cg = ring.value(rhos[g]), ring.value(cs[g])
                cond["min_pole_gap"] = min(cond["min_pole_gap"], abs(1 / rho - 1 / rg))
                cond["min_score_gap"] = min(cond["min_score_gap"], abs(mpmath.log(rho) - mpmath.log(rg)))
                thr["pole separation"] = min(
                    thr["pole separation"], abs(rho - rg) / (ring.hi(S_rho[j][h]) + ring.hi(S_rho[j][g])))
                thr["distinct residues"] = min(
                    thr["distinct residues"], abs(c - cg) / (ring.hi(S_c[j][h]) + ring.hi(S_c[j][g])))
    cond["copy_condition"] = max(max(ring.hi(rowsum(J, i, range(m))) for i in range(m)) for J in jac)
    cond["weight_design_condition"] = _mpf(norm_inf(D, n_meas, d * d) * norm_inf(Dinv_q, d * d, n_meas))
    cond["value_design_condition"] = _mpf(norm_inf(A, n_meas, d) * norm_inf(P_q, d, n_meas))

    # matching configurations (0 + j): residues c^m_h = c_0,h + c_j,h, known R(0), R(oo)
    margin = inf
    mpts = [0] + matching_points(H)  # row 0 is the known value R(0)
    x0, z0 = measurements[0]
    for j in matched:
        xm, zm = add_tokens(x0, measurements[j][0]), add_tokens(z0, measurements[j][1])
        _, cm, rm = head_data(xm, zm)
        Jm = local_jacobian(cm, rm, mpts, True)
        sens_am = ring.hi(S_a[0]) + ring.hi(S_a[j])
        s_cm = []
        for t in range(H):
            samples = sum((ring.hi(Jm[t, i]) for i in range(1, len(mpts))), mpmath.mpf(0))
            known_zero = 2 * ring.hi(Jm[t, 0])
            total_row = ring.num(fmpq(0))
            for i in range(len(mpts)):
                total_row += Jm[t, i]
            s_cm.append(samples + known_zero + ring.hi(total_row) * sens_am)
            thr["residue vs zero"] = min(thr["residue vs zero"], abs(ring.value(cm[t])) / s_cm[t])
        # the matching configuration's data: eps per sample, 2 eps in R(0), sens_am * eps in R(oo);
        # R(oo) enters every row, so bound its share by adding it to every row's weight
        weights_m = [2 + sens_am] + [1 + sens_am] * (len(mpts) - 1)
        thr["second order (matchings)"] = min(
            thr["second order (matchings)"], second_order(Jm, cm, rm, mpts, weights_m, 0))
        # edge (h, h', t): c_0,h + c_j,h' against c^m_t. Its balls can overlap once
        # eps >= gap / (sum of the three first-order sensitivities); true edges have gap 0.
        c0, cj = data[0][1], data[j][1]
        edge = [[[mpmath.mpf(0)] * H for _ in range(H)] for _ in range(H)]
        for h in range(H):
            for hp in range(H):
                for t in range(H):
                    if hp == h and t == h:
                        continue
                    gap = abs(ring.value(c0[h] + cj[hp] - cm[t]))
                    margin = min(margin, gap)
                    edge[h][hp][t] = gap / (ring.hi(S_c[0][h]) + ring.hi(S_c[j][hp]) + s_cm[t])
        # a wrong *perfect matching* needs all its edges to overlap at once
        identity = tuple(range(H))
        for sigma in permutations(range(H)):
            for tau in permutations(range(H)):
                if sigma == identity and tau == identity:
                    continue
                need = max(edge[h][sigma[h]][tau[h]] for h in range(H))
                thr["matching (wrong pairing)"] = min(thr["matching (wrong pairing)"], need)
    cond["matching_margin"] = margin
    first = {k: v for k, v in thr.items() if not k.startswith("second order")}
    binding = min(first, key=lambda k: first[k])
    cond["noise_threshold"] = first[binding]
    # only the measured configurations feed the parameters; the matchings' curvature only
    # moves their residues (the matching decision, covered by its own threshold)
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
        conditions=cond, binding=binding, thresholds=thr, measurements=list(measurements), _predict=predict,
        worst_parameter=worst_label, _worst_pattern=worst_pattern,
    )


def _mpf(q: fmpq) -> mpmath.mpf:
    return mpmath.mpf(int(q.p)) / int(q.q)


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
