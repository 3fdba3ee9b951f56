"""c20: with approximate answers the parameter error is at most C * eps (ALGORITHM.md section 7).

The paper's abstract: "For approximate oracle outputs, we give conditions under
which the parameter error is at most a model- and query-dependent constant
multiple of the output error." The paper's constant is not available to us;
ours is the first-order constant ``C = ||DF||_{inf->inf}`` of the recovery
map at the exact data for the queries the learner used
(:func:`exactlearn.approx.sensitivity`, exact rational for exp-parametrised
models). Checked on the evidence models (the first seeds of two families,
no selection) through :func:`exactlearn.approx.evidence.sweep`:

* every noise level eps in 1e-8 .. 1e-40 below the model's first-order noise
  threshold (a condition of the exact data, :class:`~exactlearn.approx.Sensitivity`)
  is recovered with the noise-free run's queries (the threshold predicts where the
  learner's decisions could change), and every recovery has ``error <= (1 + SLACK) * C * eps``
  (above the threshold the learner may refuse or redraw into other queries; the
  quick models' thresholds are 5e-11 and 5e-9, so at eps = 1e-8 they may, and
  whatever they return must still satisfy the bound with its own ``C``);
* ``error / eps`` is the same at every eps whose run asked the noise-free
  run's queries (spread <= LINEAR_TOLERANCE): linear scaling;
* the error vector equals the first-order prediction ``DF . noise`` (the noise
  is known exactly) up to a second-order part: <= 1e-6 relative for eps <= 1e-16;
* ``C`` is sharp: answer errors of ``eps`` times the signs of the row of ``DF``
  that attains ``C`` produce exactly ``C * eps`` (to 1e-6 relative) in that parameter;
* a rigorous run (``rigorous=True``) returns balls that contain every true parameter;
* under noise that makes the chain's head pairing ambiguous the learner refuses
  with AmbiguousAnswersError (never a silent guess): two heads with the same
  ``v`` (told apart by pole products only) at eps = 1e-12, above the model's
  pairing threshold (~8e-15, reported by the sensitivity analysis as the binding
  condition); with no redraw budget the first problem met is a pairing that is not
  unique; at eps = 1e-16 the model is recovered within ``C eps``.
"""

from __future__ import annotations

import mpmath
from flint import fmpq

from exactlearn.approx.evidence import (
    EPS_FULL,
    EPS_QUICK,
    LINEAR_TOLERANCE,
    SLACK,
    evidence_models,
    refusal_demo,
    sharpness,
    sweep,
)

from ..registry import Claim, Outcome, Settings

SECOND_ORDER_TOLERANCE = mpmath.mpf("1e-6")  # relative, for eps <= SMALL_EPS
SMALL_EPS = fmpq(1, 10**16)
SHARPNESS_TOLERANCE = mpmath.mpf("1e-6")  # |attained - C| / C at eps = 1e-30


def _sweep_task(task: tuple[bool, str]) -> dict:
    full, name = task
    model = evidence_models(full)[name]
    sw = sweep(model, EPS_FULL if full else EPS_QUICK, name=name)
    problems = sw.failures()
    second = [r.deviation for r in sw.rows if r.recovered and r.eps <= SMALL_EPS]
    worst_second = max(second, default=None)
    if worst_second is None:
        problems.append(f"{name}: no run at eps <= 1e-16 to compare with the first-order prediction")
    elif worst_second > SECOND_ORDER_TOLERANCE:
        problems.append(f"{name}: the error differs from the first-order prediction DF.noise by "
                        f"{mpmath.nstr(worst_second, 3)} (relative) at eps <= 1e-16")
    rec = [r for r in sw.rows if r.recovered]
    return {
        "name": name,
        "C": mpmath.nstr(sw.reference.C_upper, 6),
        "exact_C": sw.reference.exact,
        "noise_threshold": mpmath.nstr(sw.reference.noise_threshold, 3),
        "max_error_over_C_eps": mpmath.nstr(max((r.ratio / r.C for r in rec), default=0), 4),
        "slope": mpmath.nstr(sw.slope, 8) if sw.slope is not None else None,
        "ratio_spread": mpmath.nstr(sw.ratio_spread, 3) if sw.ratio_spread is not None else None,
        "second_order_at_small_eps": mpmath.nstr(worst_second, 3) if worst_second is not None else None,
        "queries": sorted({r.oracle_queries for r in rec}),
        "redraws": sorted({r.redraws for r in rec}),
        "runs": len(sw.rows),
        "refused_above_threshold": [str(r.eps) for r in sw.refused_above_threshold],
        "problems": problems,
    }


def _rigorous_task(_: int) -> dict:
    name, model = next(iter((k, m) for k, m in evidence_models().items() if k.startswith("real")))
    sw = sweep(model, ("1e-12", "1e-20", "1e-30"), name=name, rigorous=True)
    problems = [f"{name} (rigorous): eps = {r.eps}: a true parameter lies outside its certified ball"
                for r in sw.rows if r.recovered and not r.within_radius]
    if not any(r.recovered for r in sw.rows):
        problems.append(f"{name} (rigorous): no run recovered")
    return {"rigorous_runs": len(sw.rows), "rigorous_recovered": sum(r.recovered for r in sw.rows),
            "problems": problems}


def _sharpness_task(task: tuple[bool, str]) -> dict:
    full, name = task
    result = sharpness(evidence_models(full)[name])
    problems = []
    if not result.same_queries:
        problems.append(f"{name}: the worst-case noise changed the queries; sharpness not tested")
    elif result.relative_gap > SHARPNESS_TOLERANCE:
        problems.append(f"{name}: worst-case answer errors give error/eps = {mpmath.nstr(result.attained, 8)}, "
                        f"but C = {mpmath.nstr(result.C, 8)}")
    return {"name": name, "attained_over_C": mpmath.nstr(result.attained / result.C, 10),
            "worst_parameter": list(result.parameter), "problems": problems}


def _refusal_task(_: int) -> dict:
    demo = refusal_demo()
    large, small = demo.eps
    problems = []
    if demo.binding != "matching (wrong pairing)":
        problems.append(f"near-tie model: the noise threshold is set by {demo.binding}, not by the pairing")
    if not demo.refused_at_once:
        problems.append(f"near-tie model at eps = {large}, max_redraws = 0: no refusal at the first problem "
                        f"({demo.first.reasons if demo.first else 'a result was returned'})")
    if demo.refused is None:
        problems.append(f"near-tie model at eps = {large}: the learner returned a result instead of refusing")
    elif demo.refused.ambiguous_matchings == 0:
        problems.append(f"near-tie model at eps = {large}: refused, but no redraw was for an ambiguous pairing")
    if demo.recovered is None:
        problems.append(f"near-tie model at eps = {small}: refused although the noise is below the threshold")
    elif not demo.holds:
        problems.append(f"near-tie model at eps = {small}: error {mpmath.nstr(demo.error, 3)} above C eps")
    return {"refusal_ambiguous_matchings": getattr(demo.refused, "ambiguous_matchings", 0),
            "refusal_redraws": len(demo.refused.reasons) if demo.refused else 0,
            "refusal_threshold": mpmath.nstr(demo.threshold, 3), "problems": problems}


def check(settings: Settings) -> Outcome:
    names = list(evidence_models(settings.full))
    results = settings.map(_sweep_task, [(settings.full, n) for n in names])
    sharp = settings.map(_sharpness_task, [(settings.full, n) for n in names])
    extra = settings.map(_rigorous_task, [0]) + settings.map(_refusal_task, [0])
    problems = [p for r in results + sharp + extra for p in r["problems"]]
    eps = EPS_FULL if settings.full else EPS_QUICK
    figures = {
        "slack": str(SLACK),
        "linear_tolerance": str(LINEAR_TOLERANCE),
        "eps": [eps[0], eps[-1], len(eps)],
        "models": {r["name"]: {k: v for k, v in r.items() if k not in ("name", "problems")} for r in results},
    }
    for r in sharp:
        figures["models"][r["name"]]["worst_case_error_over_C_eps"] = r["attained_over_C"]
        figures["models"][r["name"]]["worst_parameter"] = r["worst_parameter"]
    for r in extra:
        figures.update({k: v for k, v in r.items() if k != "problems"})
    worst = max(float(r["max_error_over_C_eps"]) for r in results)
    checked = (f"{len(names)} models x {len(eps)} noise levels eps = {eps[0]}..{eps[-1]}; "
               f"max error/(C eps) = {worst:.3g}; C attained by worst-case noise; rigorous balls; "
               f"refusal under an ambiguous head pairing")
    return Outcome(passed=not problems, checked=checked, figures=figures, details=problems)


CLAIM = Claim(
    key="approximate-oracle",
    title="Approximate oracle: error <= C eps, linear in eps",
    statement=(
        "If every answer is within eps of the model's output (1e-40 <= eps <= 1e-8), the same schedule run in "
        "256-bit ball arithmetic recovers W_h (the real matrix) and v_h with max error <= (1 + 1/20) C eps, where "
        "C = ||DF||_inf is the first-order constant of the recovery map at the exact data for the queries used; "
        "error/eps is constant in eps (linear), the error equals DF.noise up to O(eps^2), worst-case answer errors "
        "attain C; certified balls contain the truth; ambiguous head pairings are refused, not guessed."
    ),
    source="paper abstract (approximate oracle outputs); ALGORITHM.md section 7; this project's constant C",
    check=check,
)
