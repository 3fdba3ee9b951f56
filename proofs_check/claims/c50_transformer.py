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
structured cases at d = 2, 3) are built in the oracle process and learned by
``learn_transformer`` (through :func:`proofs_check.library.learn_transformer`)
in the learner process, with ``H`` known and ``verify=16``. From the oracle's own
log: the learner's total and longest call equal the log's; its per-step counts
partition the log in step order, each step's longest call equal to the log's;
the first ``n_1`` calls (step 1) come in pairs ``(X, -X)``, none longer than
``2H + 1``; the odd-part queries (every second call) are judged like any
run of the attention learner (its reported count, longest query and redraws
against them); without redraws ``n_1 = 2 (4Hd^2 - 2H + 1)`` with the formula
written here; the uniform-slice calls are ``[P, 0]``; the verification step
made exactly 16 calls. Functional equivalence is judged here, on fresh random
sequences, with the evaluator of :mod:`proofs_check.independent` (which imports
nothing from exactlearn) applied to the truth's and the returned model's JSON;
the evaluator must reproduce the oracle's answers on the truth, and must tell
apart a control model (the truth with ``a_1`` changed) from the returned
model, so the comparison has power. The library's canonical forms must agree
too. Every instance must be learned: a refusal must be a
``TransformerConditionError`` naming a condition, and the claim must confirm
from the truth's parameters, with its own arithmetic
(:mod:`.transformer_conditions`), that the condition is violated; otherwise
the claim fails (no success rate is tolerated).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

from exactlearn.transformer import Transformer
from exactlearn.transformer.structured import structured_cases

from ..independent import evaluate_transformer
from ..instances import figure_problems
from ..learners import Job, LearnerKind
from ..oracles import QueryLog
from ..registry import Claim, Outcome, Settings
from ..sandbox import Recipe, current
from .transformer_conditions import violated

FRESH = 40
VERIFY = 16  # verification calls the learner is asked to make (and must make)
STEPS = ("residual", "attention", "slice", "split", "verify")  # the learner's steps, in the order it asks


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

    def recipe(self) -> Recipe:
        return Recipe("proofs_check.claims.c50_transformer:transformer_model",
                      (self.d, self.heads, self.width, self.seed, self.case))


def transformer_model(d: int, heads: int, width: int, seed: int, case: str = "") -> Transformer:
    """The recipe of a task's Transformer (built in the oracle process)."""
    if case:
        return structured_cases(d, seed=seed)[case]
    return Transformer.random(d, heads, width, seed=seed)


def _fresh(task: Task) -> list[list[tuple[int, ...]]]:
    rng = random.Random(f"c50:{task}")
    return [[tuple(rng.randint(-3, 3) for _ in range(task.d)) for _ in range(rng.randint(1, 12))]
            for _ in range(FRESH)]


def _negated(query: tuple) -> tuple:
    return tuple(tuple(-t for t in x) for x in query)


def _log_shape(log: QueryLog, steps: dict, d: int) -> tuple[dict, list[str]]:
    """Step 1 and the slice as the oracle's log shows them, and what the per-step counts get wrong."""
    problems, start, parts = [], 0, {}
    for name in STEPS:
        n, longest = steps.get(name, [0, 0])
        parts[name] = log.queries[start:start + n]
        if n and longest != max(len(q) for q in parts[name]):
            problems.append(f"step {name}: the learner reported a longest call of {longest}, the log's is "
                            f"{max(len(q) for q in parts[name])}")
        start += n
    if start != log.count:
        problems.append(f"the learner's steps count {start} calls, the oracle logged {log.count}")
    step1, on_slice = parts["attention"], parts["slice"]
    n1 = len(step1)
    shape = {
        "step1_calls": n1,
        "step1_paired": n1 % 2 == 0 and all(step1[i + 1] == _negated(step1[i]) for i in range(0, n1, 2)),
        "step1_max_length": max((len(q) for q in step1), default=0),
        "slice_shape": all(len(q) == 2 and not any(q[1]) for q in on_slice),
        "verify_calls": len(parts["verify"]),
    }
    if shape["step1_paired"]:
        problems += [f"step 1 (odd part): {p}" for p in figure_problems(steps["attention summary"],
                                                                         QueryLog(step1[::2]), "paper", d)]
    return shape, problems


def _equivalence(truth: Transformer, model_json: dict, fresh: list) -> dict:
    """Fresh sequences judged with the independent evaluator (truth, model, control)."""
    truth_json = truth.to_dict()
    control_json = dict(truth_json, a=[str(Fraction(truth_json["a"][0]) + 1)] + truth_json["a"][1:])
    want = [evaluate_transformer(truth_json, X) for X in fresh]
    got = [evaluate_transformer(model_json, X) for X in fresh]
    return {
        "fresh_equal": sum(w == g for w, g in zip(want, got)),
        "evaluator_agrees": sum(w == truth(X) for w, X in zip(want, fresh)),
        "control_differs": any(evaluate_transformer(control_json, X) != g for X, g in zip(fresh, got)),
        "canonical_equal": Transformer.from_dict(model_json) == truth,
    }


def run(task: Task) -> dict:
    """Learn one model through the sandbox; measure, do not judge."""
    box = current()
    H = len(box.build(task.recipe()).canonical().heads)
    seen = box.learn(task.recipe(), Job(LearnerKind.TRANSFORMER, task.d, {"heads": H, "seed": task.seed,
                                                                          "verify": VERIFY}))
    truth, result, log = seen.truth, seen.result, seen.log
    label = f"d={task.d} H={H} m={truth.width} seed={task.seed}" + (f" {task.case}" if task.case else "")
    out = {"task": label, "d": task.d, "H": H, "calls": log.count, "problems": list(seen.problems)}
    if "model" not in result:
        condition = result.get("condition")
        confirmed = condition is not None and violated(truth.to_dict(), H, condition)
        return out | {"solved": False, "error": result.get("refused") or f"crashed: {result.get('crashed')}",
                      "message": result.get("message", ""), "condition": condition, "confirmed": confirmed}
    if (result["queries"], result["max_length"]) != (log.count, log.max_length):
        out["problems"].append(f"the learner reported {result['queries']} calls of length <= "
                               f"{result['max_length']}, the oracle logged {log.count} of length <= "
                               f"{log.max_length}")
    shape, problems = _log_shape(log, result["steps"] | {"attention summary": result["attention"]}, task.d)
    out["problems"] += problems
    out.update(solved=True, max_length=log.max_length, learner_queries=result["queries"],
               redraws=result["redraws"], **shape)
    out.update(_equivalence(truth, result["model"], _fresh(task)))
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
    d, H, problems = r["d"], r["H"], list(r["problems"])
    if _wrong(r):
        problems.append(f"WRONG MODEL: {r['fresh_equal']}/{FRESH} fresh sequences equal (independent "
                        f"evaluator), canonical forms {'equal' if r['canonical_equal'] else 'differ'}")
    if r["evaluator_agrees"] != FRESH:
        problems.append(f"the independent evaluator reproduces the oracle on {r['evaluator_agrees']}/{FRESH} "
                        f"sequences")
    if not r["control_differs"]:
        problems.append("the control model was not told apart")
    if not r["step1_paired"] or r["step1_max_length"] > 2 * H + 1:
        problems.append(f"step 1's {r['step1_calls']} calls are not (X, -X) pairs of length <= "
                        f"2H+1 = {2 * H + 1}")
    if not r["slice_shape"]:
        problems.append("the uniform-slice calls are not [P, 0]")
    if r["verify_calls"] != VERIFY:
        problems.append(f"the verification step made {r['verify_calls']} calls, not {VERIFY}")
    if r["redraws"] == 0 and r["step1_calls"] != 2 * abstract_formula(d, H):
        problems.append(f"step 1: {r['step1_calls']} calls != 2(4Hd^2-2H+1) = {2 * abstract_formula(d, H)}")
    return problems


def _refusal_problems(r: dict) -> list[str]:
    """A refusal passes only if it names a condition that the claim confirms is violated."""
    problems = list(r["problems"])
    if r["condition"] is None:
        problems.append(f"refused without naming a condition ({r['error']}: {r['message'][:120]})")
    elif not r["confirmed"]:
        problems.append(f"refused naming {r['condition']}, but the model meets that condition "
                        f"(checked from its parameters)")
    return problems


def check(settings: Settings) -> Outcome:
    results = settings.map(run, _tasks(settings))
    solved = [r for r in results if r["solved"]]
    refused = [r for r in results if not r["solved"]]
    failures = [f"{r['task']}: {p}" for r in solved for p in _problems(r)]
    failures += [f"{r['task']}: {p}" for r in refused for p in _refusal_problems(r)]
    notes = [f"note: {r['task']}: refused, {r['condition']} confirmed violated" for r in refused
             if not _refusal_problems(r)]
    clean = [r for r in solved if r["redraws"] == 0]
    figures = {
        "instances": len(results),
        "solved (functionally equivalent)": len(solved),
        "refused with a confirmed condition": len(notes),
        "refused otherwise": len(refused) - len(notes),
        "wrong models": sum(map(_wrong, solved)),
        "fresh sequences equal (independent evaluator)":
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
        checked=f"{len(results)} Transformers (random and structured), model and learner in separate "
                f"processes, {FRESH} fresh sequences each (independent evaluator); every one learned, or "
                f"refused for a condition it violates",
        figures=figures,
        details=failures + notes,
    )


CLAIM = Claim(
    key="transformer",
    title="One-layer Transformer",
    statement="Attention followed by a bias-free ReLU FFN is recovered up to functional equivalence, the "
              "attention from the odd part T(X) - T(-X) in 2(4Hd^2-2H+1) calls; every model meeting the "
              "conditions is learned, never a wrong model.",
    source="paper abstract; docs/transformer.md",
    check=check,
)
