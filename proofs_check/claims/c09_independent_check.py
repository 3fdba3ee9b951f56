"""Claim 9: every recovered model agrees with the oracle under an independent evaluator.

Statement. The recovered canonical model computes the same function as the black
box: ``f_recovered(X) = f(X)`` for every integer sequence ``X``. Checked on fresh
random sequences of random lengths (longer than any query the learner asked),
with an evaluator written for this check alone (:mod:`proofs_check.independent`:
sympy ``Rational``, ``log`` and ``exp``; no code shared with ``exactlearn.model``)
reading the recovered model from its JSON form.

Source: the paper's abstract (exact recovery; "When the oracle outputs and all
subsequent computations are exact"); docs/algorithm.md section 1 (the model) and the
LAYOUT.md advice that the check of an extracted model be independent of the
extraction.

Check. Over d in 1..3, H in 1..3 (full: d in 1..5, H in 1..4), 2 random models per
cell (full: 3), learned with the paper's schedule (H known) and with a bound
H0 = H + 1: every recovered model is evaluated by sympy on fresh sequences (quick 6,
full 20 per model; token entries in [-3, 3], lengths 1..2H+3) and must equal the
oracle's exact answers. As a control, the same evaluator must also reproduce the
oracle from the ground truth's JSON, and must tell apart a model with one value
entry changed.

Control of the evaluator itself: it must give two hand-computed values (below),
and it must give them, and agree with the oracle on a ground truth, while every
model evaluation of exactlearn is disabled
(:func:`proofs_check.library.library_evaluation_disabled`): an evaluator that is
secretly the library's evaluation fails there. By hand:

* ``d = 1``, ``exp W = [[2]]``, ``v = [3]``, tokens ``(1), (2)``: the scores
  against the last token 2 are ``1*2*log 2`` and ``2*2*log 2``, weights 4 and
  16, values 3 and 6, so ``f = (4*3 + 16*6) / 20 = 27/5``;
* ``d = 2``, ``exp W = [[2, 1], [1, 3]]``, ``v = [1, -1]``, tokens ``(1, 0),
  (0, 1)``: weights ``exp W[0][1] = 1`` and ``exp W[1][1] = 3``, values 1 and
  -1, so ``f = (1 - 3) / 4 = -1/2``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import sympy as sp

from .. import independent, library
from ..instances import Instance, grid, learn_seed, model_seed, recover_seen
from ..registry import Claim, Outcome, Settings

#: (model JSON, tokens, value computed by hand in the module docstring)
HAND = [
    ({"heads": [{"exp_W": [["2"]], "v": ["3"]}]}, [(1,), (2,)], sp.Rational(27, 5)),
    ({"heads": [{"exp_W": [["2", "1"], ["1", "3"]], "v": ["1", "-1"]}]}, [(1, 0), (0, 1)],
     sp.Rational(-1, 2)),
]


def evaluate(model: dict, tokens) -> sp.Rational:
    """The independent evaluator (looked up at call time)."""
    return independent.evaluate(model, tokens)


@dataclass(frozen=True)
class Task:
    instance: Instance
    sequences: int


def _sympy(q) -> sp.Rational:
    return sp.Rational(int(q.p), int(q.q))


def run(task: Task) -> dict:
    inst = task.instance
    result, seen = recover_seen(inst)
    out = {"task": inst.label(), "recovered": result.recovered is not None, "error": result.error,
           "redraws": result.redraws, "sequences": 0, "agree": 0, "truth agrees": 0, "control differs": False,
           "problems": result.problems}
    truth = seen.truth  # revealed by the oracle process after the learner returned
    rng = random.Random(f"proofs_check.c09:{inst}")
    longest = 2 * (inst.heads_bound or inst.heads) + 3
    sequences = [[tuple(rng.randint(-3, 3) for _ in range(inst.d)) for _ in range(rng.randint(1, longest))]
                 for _ in range(task.sequences)]
    answers = [_sympy(truth(X)) for X in sequences]  # the oracle's exact answers
    truth_json = truth.to_dict()
    out["truth agrees"] = sum(evaluate(truth_json, X) == a for X, a in zip(sequences, answers))
    control = {"heads": [dict(h) for h in truth_json["heads"]]}
    first = control["heads"][0]
    control["heads"][0] = {"exp_W": first["exp_W"],
                           "v": [str(sp.Rational(first["v"][0]) + 1)] + first["v"][1:]}
    out["control differs"] = any(evaluate(control, X) != a for X, a in zip(sequences, answers))
    if result.recovered is None:
        return out
    out["sequences"] = len(sequences)
    mismatches = []
    for X, a in zip(sequences, answers):
        got = evaluate(result.recovered, X)
        if got == a:
            out["agree"] += 1
        elif len(mismatches) < 3:
            mismatches.append(f"length {len(X)}: oracle {a}, recovered model {got}")
    out["mismatches"] = mismatches
    return out


def evaluator_control() -> list[str]:
    """Problems of the evaluator itself: hand values, and independence from exactlearn's evaluation."""
    from exactlearn import MultiHeadAttention

    problems = []
    truth = MultiHeadAttention.random(2, 2, seed=0)
    tokens = [(1, -2), (0, 3), (2, 1)]
    expected = _sympy(truth(tokens))
    cases = HAND + [(truth.to_dict(), tokens, expected)]
    try:
        with library.library_evaluation_disabled():
            got = [evaluate(model, toks) for model, toks, _ in cases]
    except RuntimeError as exc:
        return [f"evaluator control: {exc}"]
    for (_model, toks, want), value in zip(cases, got):
        if value != want:
            problems.append(f"evaluator control: {toks} gives {value}, expected {want}")
    return problems


def check(settings: Settings) -> Outcome:
    cells = grid(settings, per_cell_quick=2, per_cell_full=3, max_d=5)
    n = 20 if settings.full else 6
    tasks = [Task(Instance(d, H, model_seed(settings, i), learn_seed(settings, i), heads_bound=bound), n)
             for d, H, i in cells for bound in (None, H + 1)]
    results = settings.map(run, tasks)
    failures = evaluator_control()
    for r in results:
        if not r["recovered"]:
            failures.append(f"{r['task']}: no recovered model to check: {r['error']}")
        elif r["agree"] != r["sequences"]:
            failures.append(f"{r['task']}: {r['sequences'] - r['agree']} of {r['sequences']} disagree: "
                            + "; ".join(r["mismatches"]))
        failures += [f"{r['task']}: {p}" for p in r["problems"]]
        if r["truth agrees"] != n:
            failures.append(f"{r['task']}: the independent evaluator disagrees with the oracle "
                            f"on the ground truth")
        if not r["control differs"]:
            failures.append(f"{r['task']}: the evaluator did not tell apart a model "
                            f"with one value entry changed")
    total = sum(r["sequences"] for r in results)
    figures = {
        "recovered models": sum(r["recovered"] for r in results),
        "sequences agreeing": f"{sum(r['agree'] for r in results)}/{total}",
        "ground truth agreeing (control)": f"{sum(r['truth agrees'] for r in results)}/{n * len(results)}",
        "perturbed model told apart (control)":
            f"{sum(r['control differs'] for r in results)}/{len(results)}",
        "evaluator": "sympy Rational/log/exp on the recovered JSON",
        "evaluator control (hand values, library evaluation off)": "passed" if not any(
            f.startswith("evaluator control") for f in failures) else "FAILED",
    }
    return Outcome(
        passed=bool(results) and not failures,
        checked=f"{len(results)} recovered models (H known and H0 = H+1) x {n} fresh sequences, "
                f"sympy evaluator vs oracle",
        figures=figures,
        details=failures,
    )


CLAIM = Claim(
    key="independent-check",
    title="Independent cross-check (sympy)",
    statement="Every recovered model equals the oracle on fresh random sequences, "
              "evaluated by an independent sympy evaluator.",
    source="paper abstract; docs/algorithm.md section 1; docs/claims.md (independent check)",
    check=check,
)
