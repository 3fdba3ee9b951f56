"""Claim 50: a one-layer Transformer is recovered up to functional equivalence.

Statement. For a one-layer Transformer ``T(X) = sum_j a_j ReLU(u_j^T sum_h V_h o_h(X))``
(multi-head softmax attention followed by a bias-free ReLU FFN) satisfying the
conditions of docs/transformer.md, ``learn_transformer`` returns a functionally
equivalent Transformer, without a separate algorithm for the FFN: step 1 learns
the attention from the odd part ``T(X) - T(-X)`` with the attention learner, in
``2 (4Hd^2 - 2H + 1)`` calls to ``T`` of length at most ``2H + 1``.

Source: the paper's abstract ("we extend our result to a one-layer Transformer
with multi-head attention followed by a bias-free ReLU feed-forward network.
Under additional conditions, we recover a functionally equivalent Transformer
without relying on a separate algorithm for learning the feed-forward
network"); docs/transformer.md.

Check. Random models (quick: d in {2, 3}, H in {1, 2}, m in {1, 4}, plus the
structured cases at d = 2; full: d in 2..4, H in 1..3, m in 1..6, 3 per cell,
structured cases at d = 2, 3) are learned through an opaque oracle
(:func:`proofs_check.oracles.model_oracle`: a plain function with no attribute
leading to the model, not an exactlearn.Oracle), calling the learner through
:func:`proofs_check.library.learn_transformer`. From the oracle's own log: the
first ``n_1`` calls (``n_1`` the learner's step-1 count) come in pairs
``(X, -X)``, none longer than ``2H + 1``, and, without redraws,
``n_1 = 2 (4Hd^2 - 2H + 1)`` with the formula written here; the uniform-slice
calls are ``[P, 0]``; the learner's total equals the log's count. Functional
equivalence is judged here, on fresh random sequences, with the Fraction
evaluator of :mod:`proofs_check.independent` (which imports nothing from
exactlearn) applied to the truth's and the returned model's JSON; the
evaluator must reproduce the oracle's answers on the truth, and must tell
apart a control model (the truth with ``a_1`` changed) from the returned
model, so the comparison has power. The library's canonical forms must agree
too. A failure must be an explicit RecoveryError (counted); a wrong model
fails the claim, and so does solving fewer than 90%.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

from exactlearn.errors import RecoveryError
from exactlearn.transformer import Transformer
from exactlearn.transformer.structured import structured_cases

from .. import library, oracles
from ..independent import evaluate_transformer
from ..registry import Claim, Outcome, Settings

FRESH = 40


def abstract_formula(d: int, H: int) -> int:
    """The abstract's count for attention, 4Hd^2 - 2H + 1; step 1 asks it of the odd part (2 calls each)."""
    return 4 * H * d * d - 2 * H + 1


@dataclass(frozen=True)
class Task:
    d: int
    heads: int
    width: int
    seed: int
    case: str = ""  # a structured case's name, or "" for a random model


def _model(task: Task) -> Transformer:
    if task.case:
        return structured_cases(task.d, seed=task.seed)[task.case]
    return Transformer.random(task.d, task.heads, task.width, seed=task.seed)


def _fresh(task: Task) -> list[list[tuple[int, ...]]]:
    rng = random.Random(f"c50:{task}")
    return [[tuple(rng.randint(-3, 3) for _ in range(task.d)) for _ in range(rng.randint(1, 12))]
            for _ in range(FRESH)]


def _negated(query: tuple) -> tuple:
    return tuple(tuple(-t for t in x) for x in query)


def _log_shape(log: oracles.QueryLog, n1: int, n2: int) -> dict:
    """Step 1 and the slice as the oracle's log shows them (``n1``, ``n2``: the learner's step counts)."""
    step1, on_slice = log.queries[:n1], log.queries[n1:n1 + n2]
    return {
        "step1_calls": n1,
        "step1_paired": n1 % 2 == 0 and all(step1[i + 1] == _negated(step1[i]) for i in range(0, n1, 2)),
        "step1_max_length": max((len(q) for q in step1), default=0),
        "slice_shape": all(len(q) == 2 and not any(q[1]) for q in on_slice),
    }


def _equivalence(truth: Transformer, model: Transformer, fresh: list) -> dict:
    """Fresh sequences judged with the independent Fraction evaluator (truth, model, control)."""
    truth_json, model_json = truth.to_dict(), model.to_dict()
    control_json = dict(truth_json, a=[str(Fraction(truth_json["a"][0]) + 1)] + truth_json["a"][1:])
    want = [evaluate_transformer(truth_json, X) for X in fresh]
    got = [evaluate_transformer(model_json, X) for X in fresh]
    oracle = [truth(X) for X in fresh]  # the oracle's evaluation of the truth, as exact rationals
    return {
        "fresh_equal": sum(w == g for w, g in zip(want, got)),
        "evaluator_agrees": sum(w == Fraction(int(o.p), int(o.q)) for w, o in zip(want, oracle)),
        "control_differs": any(evaluate_transformer(control_json, X) != g for X, g in zip(fresh, got)),
        "canonical_equal": model == truth,
    }


def run(task: Task) -> dict:
    """Learn one model through an opaque logged oracle; measure, do not judge."""
    truth = _model(task)
    H = len(truth.canonical().heads)
    oracle, log = oracles.model_oracle(truth)
    label = f"d={task.d} H={H} m={truth.width} seed={task.seed}" + (f" {task.case}" if task.case else "")
    out = {"task": label, "d": task.d, "H": H}
    try:
        rec = library.learn_transformer(oracle, task.d, heads=H, seed=task.seed)
    except RecoveryError as exc:
        out.update(solved=False, error=f"{type(exc).__name__}: {exc}", calls=log.count)
        return out
    out.update(solved=True, calls=log.count, max_length=log.max_length, learner_queries=rec.queries,
               redraws=rec.redraws)
    out.update(_log_shape(log, rec.steps["attention"].queries, rec.steps["slice"].queries))
    out.update(_equivalence(truth, rec.model, _fresh(task)))
    return out


def _tasks(settings: Settings) -> list[Task]:
    if settings.full:
        cells = [(d, H, m, 3) for d in (2, 3, 4) for H in (1, 2, 3) for m in range(1, 7)]
        structured_d = (2, 3)
    else:
        cells = [(d, H, m, 1) for d in (2, 3) for H in (1, 2) for m in (1, 4)]
        structured_d = (2,)
    tasks = [Task(d, H, m, settings.seed * 1000 + i) for d, H, m, n in cells for i in range(n)]
    tasks += [Task(d, 2, 3, settings.seed, case)
              for d in structured_d for case in sorted(structured_cases(d))]
    return tasks


def _wrong(r: dict) -> bool:
    return r["fresh_equal"] != FRESH or not r["canonical_equal"]


def _problems(r: dict) -> list[str]:
    """What is wrong with one solved run, judged from its measurements and the formulas here."""
    d, H, problems = r["d"], r["H"], []
    if _wrong(r):
        problems.append(f"WRONG MODEL: {r['fresh_equal']}/{FRESH} fresh sequences equal (Fraction "
                        f"evaluator), canonical forms {'equal' if r['canonical_equal'] else 'differ'}")
    if r["evaluator_agrees"] != FRESH:
        problems.append(f"the Fraction evaluator reproduces the oracle on {r['evaluator_agrees']}/{FRESH} "
                        f"sequences")
    if not r["control_differs"]:
        problems.append("the control model was not told apart")
    if r["calls"] != r["learner_queries"]:
        problems.append(f"the oracle logged {r['calls']} calls, the learner counted {r['learner_queries']}")
    if not r["step1_paired"] or r["step1_max_length"] > 2 * H + 1:
        problems.append(f"step 1's {r['step1_calls']} calls are not (X, -X) pairs of length <= "
                        f"2H+1 = {2 * H + 1}")
    if not r["slice_shape"]:
        problems.append("the uniform-slice calls are not [P, 0]")
    if r["redraws"] == 0 and r["step1_calls"] != 2 * abstract_formula(d, H):
        problems.append(f"step 1: {r['step1_calls']} calls != 2(4Hd^2-2H+1) = {2 * abstract_formula(d, H)}")
    return problems


def check(settings: Settings) -> Outcome:
    results = settings.map(run, _tasks(settings))
    solved = [r for r in results if r["solved"]]
    failures = [f"{r['task']}: {p}" for r in solved for p in _problems(r)]
    refusals = [f"{r['task']}: refused ({r['error'][:160]})" for r in results if not r["solved"]]
    if len(solved) < 0.9 * len(results):
        failures.append(f"only {len(solved)}/{len(results)} instances solved")
    clean = [r for r in solved if r["redraws"] == 0]
    figures = {
        "instances": len(results),
        "solved (functionally equivalent)": len(solved),
        "refused (explicit RecoveryError)": len(results) - len(solved),
        "wrong models": sum(map(_wrong, solved)),
        "fresh sequences equal (Fraction evaluator)":
            f"{sum(r['fresh_equal'] for r in solved)}/{FRESH * len(solved)}",
        "control told apart": f"{sum(r['control_differs'] for r in solved)}/{len(solved)}",
        "step 1 = 2(4Hd^2-2H+1) on redraw-free runs":
            f"{sum(r['step1_calls'] == 2 * abstract_formula(r['d'], r['H']) for r in clean)}/{len(clean)}",
        "log = learner's count": f"{sum(r['calls'] == r['learner_queries'] for r in solved)}/{len(solved)}",
        "max query length (log)": max((r["max_length"] for r in solved), default=0),
        "calls per instance (log), max": max((r["calls"] for r in solved), default=0),
    }
    return Outcome(
        passed=bool(results) and not failures,
        checked=f"{len(results)} Transformers (random and structured), opaque logged oracle, "
                f"{FRESH} fresh sequences each (Fraction evaluator)",
        figures=figures,
        details=failures + refusals,
    )


CLAIM = Claim(
    key="transformer",
    title="One-layer Transformer",
    statement="Attention followed by a bias-free ReLU FFN is recovered up to functional equivalence, the "
              "attention from the odd part T(X) - T(-X) in 2(4Hd^2-2H+1) calls; never a wrong model.",
    source="paper abstract; docs/transformer.md",
    check=check,
)
