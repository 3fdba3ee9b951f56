"""Evidence for docs/algorithm.md section 7: parameter error against output error, measured.

:func:`sweep` runs the approximate learner on one model through a
:class:`~exactlearn.approx.NoisyOracle` for a list of noise levels ``eps`` and
measures, per run:

* ``error`` -- ``max |theta_hat - theta|`` over all entries of all heads
  (:func:`~exactlearn.approx.parameter_error`), against the known model;
* ``C`` -- the sensitivity constant of *that run's* queries
  (:func:`~exactlearn.approx.sensitivity` with ``recovery=``), so
  ``error <= C * eps`` is the first-order statement being tested;
* ``predicted`` -- the first-order prediction ``|DF . noise|`` from the
  oracle's exactly known noise, and ``deviation`` = ``|(theta_hat - theta) -
  DF . noise|``, which must be of second order (``O(eps^2)``);
* whether the run used the same configurations as the noise-free run (then the
  ratios ``error / eps`` of different ``eps`` must agree: linear scaling).

The same function feeds the proofs_check claim ``c20``, the command
``exactlearn approx`` (:mod:`exactlearn.demos.approx`), the notebook
``04_approximate_oracle`` and the tests, so the figures they print are the same
computation.
"""

from __future__ import annotations

import functools
import random
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mpmath
from flint import fmpq

from ..approx import (
    DEFAULT_PRECISION,
    AmbiguousAnswersError,
    InexactModelWarning,
    NoisyOracle,
    RealMultiHeadAttention,
    Sensitivity,
    learn_approx,
    parameter_error,
    sensitivity,
    suggested_max_condition,
)
from ..approx.bounds.jacobian import Parameter
from ..approx.core.balls import as_fmpq, to_mpf
from ..model import MultiHeadAttention
from ..states import StrEnum

__all__ = [
    "mild_exp_model",
    "evidence_models",
    "near_tie_model",
    "refusal_demo",
    "Refusal",
    "NEAR_TIE_SEED",
    "NEAR_TIE_EPS",
    "SweepRow",
    "Sweep",
    "sweep",
    "EPS_QUICK",
    "EPS_FULL",
    "SLACK",
    "LINEAR_TOLERANCE",
    "EVIDENCE_MAX_CONDITION",
    "ConditionLimit",
    "sharpness",
    "Sharpness",
    "gaussian_model",
    "guided_constants",
    "GuidedRow",
    "GUIDED_EPS",
]

#: Noise levels of the quick run: 1e-8, 1e-12, ..., 1e-40.
EPS_QUICK = tuple(f"1e-{k}" for k in range(8, 41, 4))
#: Noise levels of the full run: 1e-8, 1e-10, ..., 1e-40.
EPS_FULL = tuple(f"1e-{k}" for k in range(8, 41, 2))
#: The stated slack: a run passes if ``error <= (1 + SLACK) * C * eps`` (room for
#: the second-order terms at the top of the range; C is a first-order constant).
SLACK = fmpq(1, 20)
#: Linear scaling: ``error / eps`` of runs with the same queries agree to this relative tolerance.
LINEAR_TOLERANCE = fmpq(1, 100)
#: The evidence runs redraw configurations whose condition exceeds
#: ``suggested_max_condition(H)`` (``10^(2H+1)``, see learn_approx's ``max_condition``):
#: every run then asks the same queries from eps = 1e-8 down, and C is that of
#: well-conditioned queries. The redraws are counted in every row.
class ConditionLimit(StrEnum):
    """A ``max_condition`` of the evidence runs that depends on the model's number of heads."""

    SUGGESTED = "suggested"  # suggested_max_condition(H), H the model's canonical heads


EVIDENCE_MAX_CONDITION = ConditionLimit.SUGGESTED
#: Redraw budget of the evidence runs (ill-conditioned configurations are redrawn).
EVIDENCE_MAX_REDRAWS = 400


def mild_exp_model(d: int, heads: int, seed: int = 0) -> MultiHeadAttention:
    """A random exp-parametrised model whose weights are moderate.

    ``exp_W`` entries are ``p/q`` with ``40 <= p, q <= 60`` (so ``W = log exp_W``
    lies in ``[-0.41, 0.41]`` and scores with integer tokens in ``[-2, 2]`` stay
    of order one), ``v`` entries ``p/32`` with ``|p| <= 64``. Reproducible from ``seed``.

    :meth:`exactlearn.MultiHeadAttention.random` draws ``exp_W`` from ``p/q`` with
    ``p, q <= 30``: scores up to ~30 put poles ``-1/rho`` at ``10^-13`` and the
    sensitivity constant beyond ``10^9``, which is exact-path territory.
    """
    rng = random.Random(f"exactlearn.approx.mild_exp_model:{d}:{heads}:{seed}")
    exp_Ws: list[list[list[fmpq]]] = []
    vs: list[list[fmpq]] = []
    seen: set = set()
    while len(exp_Ws) < heads:
        E = [[fmpq(rng.randint(40, 60), rng.randint(40, 60)) for _ in range(d)] for _ in range(d)]
        v = [fmpq(rng.randint(-64, 64), 32) for _ in range(d)]
        key = tuple(e for row in E for e in row)
        if key in seen or not any(v):
            continue
        seen.add(key)
        exp_Ws.append(E)
        vs.append(v)
    return MultiHeadAttention.from_lists(exp_Ws, vs)


def evidence_models(full: bool = False) -> dict[str, MultiHeadAttention | RealMultiHeadAttention]:
    """The models the evidence runs on: the first seeds of each family (no selection)."""
    models: dict[str, Any] = {
        "exp-parametrised d=2 H=2 (mild, seed 0)": mild_exp_model(2, 2, 0),
        "real-valued d=2 H=2 (seed 0)": RealMultiHeadAttention.random(2, 2, 0),
    }
    if full:
        for seed in (1, 2):
            models[f"exp-parametrised d=2 H=2 (mild, seed {seed})"] = mild_exp_model(2, 2, seed)
            models[f"real-valued d=2 H=2 (seed {seed})"] = RealMultiHeadAttention.random(2, 2, seed)
        models["exp-parametrised d=3 H=2 (mild, seed 0)"] = mild_exp_model(3, 2, 0)
        models["real-valued d=2 H=3 (seed 0)"] = RealMultiHeadAttention.random(2, 3, 0)
    return models


#: The learner's seed for :func:`near_tie_model` in :func:`refusal_demo` (its draws put a nearly
#: tied link first; other seeds meet the tie later or redraw around it).
NEAR_TIE_SEED = 2
#: Noise levels of :func:`refusal_demo`: above the model's pairing threshold (~3.6e-10) and below it.
NEAR_TIE_EPS = ("1e-8", "1e-16")


def near_tie_model() -> RealMultiHeadAttention:
    """Two heads with the **same** value vector whose ``W`` differ by 1/16 and 1/64 in one column.

    Heads that share ``v`` have equal residues in every configuration, so the
    chain's pairing (docs/algorithm.md section 4) tells them apart by the pole
    products ``rho_{j-1} rho_j`` alone; here the two heads' scores differ only by
    ``x_2 (a_1/16 - a_2/64)``. Under noise above the pairing threshold
    (:class:`~exactlearn.approx.Sensitivity` reports ~3.6e-10, set by ``matching (wrong
    pairing)``, for the learner's seed :data:`NEAR_TIE_SEED`) links admit two
    perfect pairings within the balls, and nearly equal poles leave measurements
    unresolved; the learner must refuse
    (:class:`~exactlearn.approx.AmbiguousAnswersError`), not guess. (A model whose
    value vectors are merely close is no test any more: the poles separate its heads.)
    """
    W1 = [["-9/16", "15/16"], ["15/16", 0]]
    W2 = [["-9/16", 1], ["15/16", "-1/64"]]
    v = ["3/4", "-1/2"]
    return RealMultiHeadAttention([W1, W2], [v, v])


@dataclass
class Refusal:
    """What :func:`refusal_demo` saw: a refusal above the pairing threshold, a recovery below it."""

    threshold: mpmath.mpf            # the model's first-order noise threshold (learner's seed)
    binding: str                     # the condition that sets it
    first: AmbiguousAnswersError | None   # max_redraws = 0 at the large eps: the first problem met
    refused: AmbiguousAnswersError | None  # default redraw budget at the large eps
    recovered: Any                   # ApproxRecovery at the small eps (None if it refused)
    error: mpmath.mpf | None         # its parameter error
    C: mpmath.mpf | None             # C of its queries
    eps: tuple[str, str] = NEAR_TIE_EPS

    @property
    def refused_at_once(self) -> bool:
        """With ``max_redraws = 0`` the first unresolved configuration or pairing raised at once."""
        return self.first is not None and len(self.first.reasons) == 1

    @property
    def holds(self) -> bool:
        """Refused (with an ambiguous pairing among the reasons) at the large eps,
        recovered within C eps at the small."""
        small = to_mpf(as_fmpq(self.eps[1]))
        return (self.refused_at_once and self.refused is not None
                and self.refused.ambiguous_matchings > 0 and self.recovered is not None
                and self.error <= self.C * small * (1 + to_mpf(SLACK)))


def refusal_demo() -> Refusal:
    """:func:`near_tie_model` at ``eps`` above and below its pairing threshold
    (learner seed :data:`NEAR_TIE_SEED`).

    Above: with ``max_redraws=0`` the learner raises at the first problem it meets;
    with the default budget it redraws (counted; some links for a pairing that is not
    unique) and then refuses. Below: recovered, error within ``C eps``.
    """
    model = near_tie_model()
    large, small = NEAR_TIE_EPS
    options: dict[str, Any] = dict(heads=2, seed=NEAR_TIE_SEED, guide=None)
    reference = sensitivity(model, seed=NEAR_TIE_SEED)
    outcomes: list[AmbiguousAnswersError | None] = []
    for budget in (0, None):
        try:
            learn_approx(NoisyOracle(model, large, seed=7), model.d, max_redraws=budget, **options)
            outcomes.append(None)
        except AmbiguousAnswersError as exc:
            outcomes.append(exc)
    try:
        oracle = NoisyOracle(model, small, seed=7)
        rec = learn_approx(oracle, model.d, **options)
        error = parameter_error(rec, model).max_abs
        C = sensitivity(model, recovery=rec).C_upper
    except AmbiguousAnswersError:
        rec, error, C = None, None, None
    return Refusal(reference.noise_threshold, reference.binding, outcomes[0], outcomes[1], rec, error, C)


@dataclass
class SweepRow:
    """One noise level of a :class:`Sweep` (mpmath numbers; ``None`` where the run refused)."""

    eps: fmpq
    recovered: bool
    error: mpmath.mpf | None = None
    ratio: mpmath.mpf | None = None          # error / eps
    C: mpmath.mpf | None = None              # for this run's queries
    predicted: mpmath.mpf | None = None      # |DF . noise| / eps
    deviation: mpmath.mpf | None = None      # |(theta_hat - theta) - DF . noise| / error
    radius_ratio: mpmath.mpf | None = None   # largest error radius / eps
    queries: int = 0
    oracle_queries: int = 0
    max_length: int = 0
    redraws: int = 0
    same_queries: bool = False
    within_radius: bool | None = None        # every |error| <= its radius
    note: str = ""

    @property
    def bound_holds(self) -> bool:
        return self.recovered and self.ratio <= (1 + to_mpf(SLACK)) * self.C


@dataclass
class Sweep:
    """The result of :func:`sweep` for one model."""

    name: str
    model: Any
    reference: Sensitivity
    rows: list[SweepRow] = field(default_factory=list)

    @property
    def linear_rows(self) -> list[SweepRow]:
        return [r for r in self.rows if r.recovered and r.same_queries]

    @property
    def ratio_spread(self) -> mpmath.mpf | None:
        """``max / min - 1`` of ``error / eps`` over the runs with the reference queries."""
        ratios = [r.ratio for r in self.linear_rows if r.ratio is not None]
        if len(ratios) < 2:
            return None
        return max(ratios) / min(ratios) - 1

    @property
    def slope(self) -> mpmath.mpf | None:
        """Least-squares slope of ``log error`` against ``log eps`` (linear scaling: 1)."""
        pts = [(mpmath.log10(to_mpf(r.eps)), mpmath.log10(r.error)) for r in self.linear_rows]
        if len(pts) < 2:
            return None
        mx = mpmath.fsum(p[0] for p in pts) / len(pts)
        my = mpmath.fsum(p[1] for p in pts) / len(pts)
        return (mpmath.fsum((x - mx) * (y - my) for x, y in pts)
                / mpmath.fsum((x - mx) ** 2 for x, _ in pts))

    @property
    def refused_above_threshold(self) -> list[SweepRow]:
        """Refusals at noise above the reference's first-order noise threshold (allowed)."""
        return [r for r in self.rows if not r.recovered and to_mpf(r.eps) > self.reference.noise_threshold]

    def failures(self) -> list[str]:
        """What breaks the claim (empty list: it holds for this model).

        Below the first-order noise threshold of the exact data every run must
        recover, and with the noise-free run's queries (the threshold says where
        the learner's decisions could change); above it the learner may refuse or
        redraw into other queries (that is the condition of the claim), but
        whatever it returns must still satisfy the bound with its own ``C``.
        """
        out = []
        for r in self.rows:
            below = to_mpf(r.eps) <= self.reference.noise_threshold
            if not r.recovered:
                if below:
                    out.append(f"{self.name}: eps = {_e(r.eps)} refused ({r.note}) below the noise threshold "
                               f"{mpmath.nstr(self.reference.noise_threshold, 3)}")
                continue
            if below and not r.same_queries:
                out.append(f"{self.name}: eps = {_e(r.eps)} is below the noise threshold "
                           f"{mpmath.nstr(self.reference.noise_threshold, 3)}, "
                           f"but the run asked other queries than the noise-free run ({r.redraws} redraws)")
            if not r.bound_holds:
                out.append(f"{self.name}: eps = {_e(r.eps)}: error/eps = {mpmath.nstr(r.ratio, 6)} > "
                           f"(1 + {SLACK}) C = {mpmath.nstr((1 + to_mpf(SLACK)) * r.C, 6)}")
        spread = self.ratio_spread
        if spread is None:
            out.append(f"{self.name}: fewer than two runs with the noise-free run's queries; "
                       f"no linear-scaling check")
        elif spread > to_mpf(LINEAR_TOLERANCE):
            out.append(f"{self.name}: error/eps varies by {mpmath.nstr(spread, 3)} across eps "
                       f"(> {LINEAR_TOLERANCE}): not linear")
        return out


def _condition_limit(max_condition: Any, heads: int) -> Any:
    """``max_condition`` of an evidence run: :attr:`ConditionLimit.SUGGESTED` (or ``"suggested"``) is
    ``suggested_max_condition(heads)``."""
    return suggested_max_condition(heads) if max_condition == ConditionLimit.SUGGESTED else max_condition


def _e(q: fmpq) -> str:
    return mpmath.nstr(to_mpf(q), 3)


def _max_abs(pairs) -> mpmath.mpf:
    return max([abs(x) for W, v in pairs for row in W for x in row] + [abs(x) for W, v in pairs for x in v])


def _errors_measured(function: Callable) -> Callable:
    """``function`` with :class:`InexactModelWarning` silenced: the figures measure each run's true
    error against the model and print it, so the learner's estimate-based warning would only repeat
    it as a raw Python warning (large eps is inexact by design here)."""
    @functools.wraps(function)
    def quiet(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InexactModelWarning)
            return function(*args, **kwargs)
    return quiet


@_errors_measured
def sweep(
    model: MultiHeadAttention | RealMultiHeadAttention,
    eps_values: Sequence[Any] = EPS_QUICK,
    *,
    name: str = "model",
    seed: Any = 0,
    noise_seed: Any = 7,
    scale: Any = 1,
    precision: int = DEFAULT_PRECISION,
    rigorous: bool = False,
    max_condition: Any = EVIDENCE_MAX_CONDITION,
) -> Sweep:
    """Learn ``model`` through ``NoisyOracle(model, eps, noise_seed)`` for every ``eps``; measure.

    The learner's ``seed`` is the same for every run, so while the noise stays
    below the threshold every run asks the same queries as the noise-free run.
    """
    heads = model.num_canonical_heads
    d = model.d
    max_condition = _condition_limit(max_condition, heads)
    with mpmath.mp.workprec(precision):
        options = dict(precision=precision, scale=scale, seed=seed, rigorous=rigorous,
                       max_condition=max_condition, max_redraws=EVIDENCE_MAX_REDRAWS,
                       guide=None)  # random configurations: the figures of the schedule itself
        clean = learn_approx(NoisyOracle(model, 0), d, heads=heads, **options)
        reference = sensitivity(model, recovery=clean, precision=precision)
        out = Sweep(name, model, reference)
        for eps in eps_values:
            e = as_fmpq(eps, "eps")
            oracle = NoisyOracle(model, e, seed=noise_seed)
            try:
                rec = learn_approx(oracle, d, heads=heads, **options)
            except AmbiguousAnswersError as exc:
                out.rows.append(SweepRow(e, False, queries=getattr(exc, "queries", 0) or 0,
                                         oracle_queries=oracle.queries,
                                         note=f"refused: {len(exc.reasons)} redraws"))
                continue
            eps_mp = to_mpf(oracle.eps)
            err = parameter_error(rec, model)
            sens = sensitivity(model, recovery=rec, precision=precision)
            predicted = sens.predict(oracle.noise)
            deviation = max(
                [abs(err.deviations[h][0][a][b] - predicted[h][0][a][b]) for h in range(heads)
                 for a in range(d) for b in range(d)]
                + [abs(err.deviations[h][1][a] - predicted[h][1][a]) for h in range(heads) for a in range(d)])
            within = all(
                abs(err.deviations[j][0][a][b]) <= rec.heads[i].W_radius[a][b]
                for i, j in enumerate(err.permutation) for a in range(d) for b in range(d)
            ) and all(abs(err.deviations[j][1][a]) <= rec.heads[i].v_radius[a]
                      for i, j in enumerate(err.permutation) for a in range(d))
            out.rows.append(SweepRow(
                eps=e, recovered=True, error=err.max_abs, ratio=err.max_abs / eps_mp, C=sens.C_upper,
                predicted=_max_abs(predicted) / eps_mp,
                deviation=deviation / err.max_abs if err.max_abs else mpmath.mpf(0),
                radius_ratio=rec.error_bound / eps_mp, queries=rec.queries, oracle_queries=oracle.queries,
                max_length=rec.max_length, redraws=rec.redraws,
                same_queries=rec.measurements == clean.measurements, within_radius=within,
            ))
    return out


@dataclass
class Sharpness:
    """``C`` against the error produced by the worst-case answer errors (:func:`sharpness`)."""

    C: mpmath.mpf
    attained: mpmath.mpf       # |error of the worst parameter| / eps under the worst-case pattern
    parameter: Parameter       # the parameter whose row of DF attains C
    same_queries: bool

    @property
    def relative_gap(self) -> mpmath.mpf:
        return abs(self.attained - self.C) / self.C


def sharpness(model, eps: Any = "1e-30", *, seed: Any = 0, scale: Any = 1, precision: int = DEFAULT_PRECISION,
              max_condition: Any = EVIDENCE_MAX_CONDITION) -> Sharpness:
    """Answer errors of ``eps`` times the signs of the row of ``DF`` that attains ``C``:
    the error of that parameter must be ``C * eps`` to first order (``C`` is sharp, not just a bound)."""
    heads, d = model.num_canonical_heads, model.d
    max_condition = _condition_limit(max_condition, heads)
    options = dict(precision=precision, scale=scale, seed=seed, max_condition=max_condition,
                   max_redraws=EVIDENCE_MAX_REDRAWS, guide=None)
    with mpmath.mp.workprec(precision):
        clean = learn_approx(NoisyOracle(model, 0), d, heads=heads, **options)
        sens = sensitivity(model, recovery=clean, precision=precision)
        oracle = NoisyOracle(model, eps, pattern=sens.worst_case_pattern)
        rec = learn_approx(oracle, d, heads=heads, **options)
        err = parameter_error(rec, model)
        label = sens.worst_parameter
        dW, dv = err.deviations[label.head]
        dev = dW[label.row][label.column] if label.column is not None else dv[label.row]
        same_queries = rec.measurements == clean.measurements
        return Sharpness(sens.C_upper, abs(dev) / to_mpf(oracle.eps), label, same_queries)


# -- choosing configurations: C before and after -------------------------------------------------
#: Noise level of :func:`guided_constants` (answers of a float64-like oracle).
GUIDED_EPS = "1e-15"


def gaussian_model(seed: int, d: int = 3, heads: int = 2) -> RealMultiHeadAttention:
    """A held-out kind of model: every entry of every ``W_h`` and ``v_h`` standard normal (floats)."""
    rng = random.Random(f"exactlearn.approx.gaussian:{seed}")
    Ws = [[[rng.gauss(0, 1) for _ in range(d)] for _ in range(d)] for _ in range(heads)]
    return RealMultiHeadAttention(Ws, [[rng.gauss(0, 1) for _ in range(d)] for _ in range(heads)])


@dataclass
class GuidedRow:
    """One model learned three ways at ``eps``: random configurations, chosen by a pilot, by the model."""

    name: str
    random: tuple[int, mpmath.mpf, mpmath.mpf]   # (queries, C, error) of the unguided run
    pilot: tuple[int, mpmath.mpf, mpmath.mpf]    # guided by the unguided run's recovery (a black box)
    model: tuple[int, mpmath.mpf, mpmath.mpf]    # guided by the model itself (a simulation)

    @property
    def holds(self) -> bool:
        """Every run's error is within its own ``C eps`` (first order, with the stated slack)."""
        eps = to_mpf(as_fmpq(GUIDED_EPS))
        return all(e <= (1 + to_mpf(SLACK)) * C * eps for _, C, e in (self.random, self.pilot, self.model))


@_errors_measured
def guided_constants(seeds: Sequence[int] = (0, 1, 2, 3), eps: Any = GUIDED_EPS,
                     progress: Callable[[int, str], None] | None = None) -> list[GuidedRow]:
    """``C`` and the error of :func:`gaussian_model` (d = 3, H = 2), random and chosen configurations.

    Random: ``learn_approx`` as is (learner seed 0). Pilot: ``guide=`` that run's
    recovery, so no knowledge beyond the oracle's answers (the pilot's queries come on
    top). Model: ``guide=`` the model, as a simulation would choose. ``progress(seed, kind)``
    is called after each run.
    """
    rows = []
    for seed in seeds:
        model = gaussian_model(seed)
        out = []
        guide: Any = None
        for kind in ("random", "pilot", "model"):
            if kind == "model":
                guide = model
            rec = learn_approx(NoisyOracle(model, eps, seed=1), model.d, heads=2, guide=guide)
            C = sensitivity(model, recovery=rec).C_upper
            out.append((rec.queries, C, parameter_error(rec, model).max_abs))
            if kind == "random":
                guide = rec
            if progress is not None:
                progress(seed, kind)
        rows.append(GuidedRow(f"gaussian d=3 H=2 (seed {seed})", *out))
    return rows
