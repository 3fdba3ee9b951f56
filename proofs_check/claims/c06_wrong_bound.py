"""Claim 6: a wrong bound H0 < H is rejected, never answered with a wrong model.

Statement. If the learner is told ``H0 < H`` (as a bound, or as the known number
of heads), no multi-head attention with at most ``H0`` heads answers like the
oracle; the learner's exact consistency checks (every copy function verified
against its samples, rational negative simple poles, unique matchings, the
overdetermined value system, ``u^T z_j = R_j(oo)``, the matching configurations'
poles against the solved ``W_h``) detect this and raise
:class:`~exactlearn.RecoveryError` instead of returning a model.

Source: docs/algorithm.md section 6 ("A wrong bound (H0 < H) ... must [be caught] and
report[ed] as an error"); the abstract's H0 statement presupposes H0 >= H.

Check. Over d in 1..3 (full: 1..4), H in 2..3 (full: 2..4), every H0 in 1..H-1,
several random models (quick 3, full 5), and both ways of telling the learner
(``heads_bound=H0`` and ``heads=H0``), with the default settings (no extra
verification queries): every run must raise ``RecoveryError`` (or a subclass), and the count the
refusal carries must be the oracle's log; returning a model, or any other
exception, fails the claim.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..instances import Instance, learn_seed, model_seed, refusal_problems
from ..learners import Job, LearnerKind
from ..registry import Claim, Outcome, Settings
from ..sandbox import current


@dataclass(frozen=True)
class Task:
    d: int
    heads: int
    told: int  # H0 < heads
    as_bound: bool
    model_seed: int
    learn_seed: int

    def label(self) -> str:
        how = "heads_bound" if self.as_bound else "heads"
        return f"d={self.d} H={self.heads} {how}={self.told} model_seed={self.model_seed}"


def run(task: Task) -> dict:
    told = {"heads_bound": task.told} if task.as_bound else {"heads": task.told}
    job = Job(LearnerKind.EXACT, task.d, {"seed": task.learn_seed, **told})
    seen = current().learn(Instance(task.d, task.heads, task.model_seed, task.learn_seed).recipe(), job)
    out = {"task": task.label(), "queries": seen.log.count, "problems": seen.problems}
    result = seen.result
    if "refused" in result:
        out["problems"] = out["problems"] + refusal_problems(result, seen.log)
        return out | {"outcome": "rejected", "error": result["refused"], "message": result["message"]}
    if "crashed" in result:  # a crash is not a clean rejection
        return out | {"outcome": "crashed", "error": "crash", "message": result["crashed"]}
    return out | {"outcome": "returned a model", "error": None,
                  "message": f"{result['num_heads']} heads returned"}


def check(settings: Settings) -> Outcome:
    ds = range(1, 5) if settings.full else range(1, 4)
    hs = range(2, 5) if settings.full else range(2, 4)
    per = 5 if settings.full else 3
    tasks = [Task(d, H, H0, as_bound, model_seed(settings, i), learn_seed(settings, i))
             for d in ds for H in hs for H0 in range(1, H) for as_bound in (True, False) for i in range(per)]
    results = settings.map(run, tasks)
    failures = [f"{r['task']}: {r['outcome']}: {r['error'] or ''} {r['message']}".strip()
                for r in results if r["outcome"] != "rejected"]
    failures += [f"{r['task']}: {p}" for r in results for p in r["problems"]]
    kinds = Counter(r["error"] for r in results if r["outcome"] == "rejected")
    figures = {
        "runs": len(results),
        "rejected with RecoveryError": sum(r["outcome"] == "rejected" for r in results),
        "error types": ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())),
        "queries before rejection (max)": max((r["queries"] for r in results), default=0),
    }
    return Outcome(
        passed=bool(results) and not failures,
        checked=f"{len(results)} runs with H0 < H (as bound and as known H), no verification queries",
        figures=figures,
        details=failures,
    )


CLAIM = Claim(
    key="wrong-bound",
    title="Wrong bound H0 < H rejected",
    statement="Told H0 < H, the learner raises RecoveryError and never returns a model.",
    source="docs/algorithm.md section 6",
    check=check,
)
