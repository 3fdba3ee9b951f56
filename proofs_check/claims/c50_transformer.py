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
structured cases at d = 2, 3) are learned through an opaque closure that logs
every call (no attribute exposes the model; it is not an exactlearn.Oracle).
From that log alone: the first ``n_1`` calls (``n_1`` the learner's step-1
count) come in pairs ``(X, -X)``, none longer than ``2H + 1``, and, without
redraws, ``n_1 = 2 (4Hd^2 - 2H + 1)`` with the formula written here; the
uniform-slice calls are ``[P, 0]``; the total equals the learner's count. Every
returned model must agree with the truth on fresh random sequences (and have
its canonical form); a control model (one ``a_j`` changed) must disagree with
it, so the comparison has power. A failure must be an explicit RecoveryError
(counted); a wrong model fails the claim, and so does solving fewer than 90%.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from exactlearn.errors import RecoveryError
from exactlearn.transformer import Transformer, learn_transformer
from exactlearn.transformer.structured import structured_cases

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


def run(task: Task) -> dict:
    """Learn one model through an opaque logging closure; measure, do not judge."""
    truth = _model(task)
    H = len(truth.canonical().heads)
    calls: list[tuple] = []

    def oracle(tokens):  # opaque: a closure, nothing on it refers to the model
        calls.append(tuple(map(tuple, tokens)))
        return truth(tokens)

    out = {"task": f"d={task.d} H={H} m={truth.width} seed={task.seed}" + (f" {task.case}" if task.case else ""),
           "d": task.d, "H": H}
    try:
        rec = learn_transformer(oracle, task.d, heads=H, seed=task.seed)
    except RecoveryError as exc:
        out.update(solved=False, error=f"{type(exc).__name__}: {exc}", calls=len(calls))
        return out
    n1 = rec.steps["attention"].queries
    n2 = rec.steps["slice"].queries
    step1 = calls[:n1]
    paired = n1 % 2 == 0 and all(step1[i + 1] == tuple(tuple(-t for t in x) for x in step1[i])
                                 for i in range(0, n1, 2))
    rng = random.Random(f"c50:{task}")
    fresh = [[tuple(rng.randint(-3, 3) for _ in range(task.d)) for _ in range(rng.randint(1, 12))]
             for _ in range(FRESH)]
    control = Transformer(truth.exp_Ws, truth.Vs, truth.U, (truth.a[0] + 1,) + truth.a[1:])
    out.update(
        solved=True,
        calls=len(calls), learner_queries=rec.queries, redraws=rec.redraws,
        step1_calls=n1, step1_paired=paired, step1_max_length=max(len(c) for c in step1),
        slice_shape=all(len(c) == 2 and not any(c[1]) for c in calls[n1:n1 + n2]),
        max_length=max(len(c) for c in calls),
        fresh_equal=sum(rec.model(X) == truth(X) for X in fresh),
        canonical_equal=rec.model == truth,
        control_differs=any(rec.model(X) != control(X) for X in fresh),
    )
    return out


def _tasks(settings: Settings) -> list[Task]:
    if settings.full:
        cells = [(d, H, m, 3) for d in (2, 3, 4) for H in (1, 2, 3) for m in range(1, 7)]
        structured_d = (2, 3)
    else:
        cells = [(d, H, m, 1) for d in (2, 3) for H in (1, 2) for m in (1, 4)]
        structured_d = (2,)
    tasks = [Task(d, H, m, settings.seed * 1000 + i) for d, H, m, n in cells for i in range(n)]
    tasks += [Task(d, 2, 3, settings.seed, case) for d in structured_d for case in sorted(structured_cases(d))]
    return tasks


def check(settings: Settings) -> Outcome:
    results = settings.map(run, _tasks(settings))
    failures, refusals = [], []
    solved = [r for r in results if r["solved"]]
    for r in results:
        if not r["solved"]:
            refusals.append(f"{r['task']}: refused ({r['error'][:160]})")
            continue
        d, H = r["d"], r["H"]
        problems = []
        if r["fresh_equal"] != FRESH or not r["canonical_equal"]:
            problems.append(f"WRONG MODEL: {r['fresh_equal']}/{FRESH} fresh sequences equal")
        if not r["control_differs"]:
            problems.append("the control model was not told apart")
        if r["calls"] != r["learner_queries"]:
            problems.append(f"log {r['calls']} calls, learner counted {r['learner_queries']}")
        if not r["step1_paired"] or r["step1_max_length"] > 2 * H + 1 or not r["slice_shape"]:
            problems.append("step 1 calls are not (X, -X) pairs of length <= 2H+1, or slice calls not [P, 0]")
        if r["redraws"] == 0 and r["step1_calls"] != 2 * abstract_formula(d, H):
            problems.append(f"step 1: {r['step1_calls']} calls != 2(4Hd^2-2H+1) = {2 * abstract_formula(d, H)}")
        failures += [f"{r['task']}: {p}" for p in problems]
    rate = len(solved) / len(results) if results else 0.0
    if rate < 0.9:
        failures.append(f"only {len(solved)}/{len(results)} instances solved")
    clean = [r for r in solved if r["redraws"] == 0]
    figures = {
        "instances": len(results),
        "solved (functionally equivalent)": len(solved),
        "refused (explicit RecoveryError)": len(results) - len(solved),
        "wrong models": sum(r["fresh_equal"] != FRESH or not r["canonical_equal"] for r in solved),
        "step 1 = 2(4Hd^2-2H+1) on redraw-free runs": f"{sum(r['step1_calls'] == 2 * abstract_formula(r['d'], r['H']) for r in clean)}/{len(clean)}",
        "max query length (log)": max((r["max_length"] for r in solved), default=0),
        "calls per instance (log), max": max((r["calls"] for r in solved), default=0),
    }
    return Outcome(
        passed=bool(results) and not failures,
        checked=f"{len(results)} Transformers (random and structured), opaque logged oracle, "
                f"{FRESH} fresh sequences each",
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
