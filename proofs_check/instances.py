"""Shared instances for the claims: grids of random models, one recovery run, and its judgement.

A claim builds a list of :class:`Instance` tasks, runs them through
``settings.map`` (so ``--workers`` and ``--scheduler`` apply) with
:func:`recover`, and judges the returned :class:`Run` records. :func:`recover`
learns through the sandbox (:mod:`proofs_check.sandbox`): the model is built
in the oracle process from the instance's recipe, the learner runs in its own
process, and the truth and the log come back only after the learner returned.
Counts in a :class:`Run` are the oracle's log; the learner's own figures are
compared with it (:func:`figure_problems`), and the recovered model is compared
with the truth twice: its canonical form with ``==``, and the recovered model
against the *raw* truth on fresh sequences with the independent exact
evaluator (:func:`proofs_check.independent.evaluate_rational`), which shares no
code with exactlearn's evaluation or its ``canonical()``.

>>> run = recover(Instance(d=2, heads=1, model_seed=0, learn_seed=0))
>>> run.exact, run.queries, run.max_length, run.redraws, run.problems
(True, 15, 3, 0, [])
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from exactlearn import MultiHeadAttention

from .independent import evaluate_rational
from .learners import Job, LearnerKind
from .oracles import QueryLog
from .registry import Settings
from .sandbox import Recipe, Seen, current
from .transcript import groups

__all__ = ["FRESH", "Instance", "Run", "exact_problems", "field_model", "figure_problems", "fresh_sequences",
           "grid", "learn_seed", "model_seed", "random_model", "recover", "recover_seen", "refusal_problems",
           "tied_field_model"]

#: quick: d in 1..3, H in 1..3; full: d in 1..6, H in 1..4
QUICK_D, QUICK_H = range(1, 4), range(1, 4)
FULL_D, FULL_H = range(1, 7), range(1, 5)
#: fresh sequences on which every recovered model is compared with the raw truth (independent evaluator)
FRESH = 4


def model_seed(settings: Settings, index: int) -> int:
    """Seed of the ``index``-th random model of a grid cell (the cell's d, H enter the model's RNG)."""
    return settings.seed * 1000 + index


def learn_seed(settings: Settings, index: int) -> int:
    """Seed of the learner's own token draws for the ``index``-th model of a cell."""
    return settings.seed * 1000 + 500 + index


def grid(settings: Settings, per_cell_quick: int, per_cell_full: int, *, max_d: int | None = None,
         max_h: int | None = None, min_h: int = 1) -> list[tuple[int, int, int]]:
    """``(d, H, index)`` for every cell of the mode's grid and ``per_cell`` models per cell."""
    ds, hs = (FULL_D, FULL_H) if settings.full else (QUICK_D, QUICK_H)
    per_cell = per_cell_full if settings.full else per_cell_quick
    return [(d, H, i) for d in ds if max_d is None or d <= max_d
            for H in hs if H >= min_h and (max_h is None or H <= max_h)
            for i in range(per_cell)]


def random_model(d: int, heads: int, seed: int, height: int = 30) -> MultiHeadAttention:
    """The recipe of a random model (built in the oracle process)."""
    return MultiHeadAttention.random(d, heads, seed=seed, height=height)


def field_model(polynomial: str, interval: tuple[str, str], unit: str, d: int, heads: int, seed: int,
                height: int = 30) -> MultiHeadAttention:
    """The recipe of a random model over ``K = Q(a)`` (``a`` the root of ``polynomial`` in ``interval``),
    built in the oracle process: ``MultiHeadAttention.random(d, heads, seed, field=K)`` with the unit
    ``unit`` in head 0's ``exp(W)`` and its inverse in head 1's, each at a position drawn from the seed."""
    from exactlearn import NumberField

    K = NumberField(polynomial, root=interval)
    base = MultiHeadAttention.random(d, heads, seed=seed, field=K, height=height)
    exp_Ws = [[list(row) for row in h.exp_W] for h in base.heads]
    rng = random.Random(f"proofs_check.field_model:{polynomial}:{d}:{heads}:{seed}")
    u = K(unit)
    for exp_W, entry in zip(exp_Ws, (u, 1 / u)):
        exp_W[rng.randrange(d)][rng.randrange(d)] = entry
    return MultiHeadAttention.from_lists(exp_Ws, [list(h.v) for h in base.heads], field=K)


def tied_field_model(polynomial: str, interval: tuple[str, str], unit: str) -> MultiHeadAttention:
    """The recipe of a model over ``K`` whose chain often degenerates: ``d = 2``, ``exp(W)`` = ``u`` in
    every entry but head 1's ``[1][1] = 2u`` (``u = unit``), so ``rho_0 = rho_1`` whenever
    ``(z - x)[1] x[1] = 0``; ``v = (1, a), (a, -1)``."""
    from exactlearn import NumberField

    K = NumberField(polynomial, root=interval)
    u = K(unit)
    return MultiHeadAttention.from_lists([[[u, u], [u, u]], [[u, u], [u, 2 * u]]],
                                         [["1", "a"], ["a", "-1"]], field=K)


@dataclass(frozen=True)
class Instance:
    """One learning task: a random model ``MultiHeadAttention.random(d, heads, model_seed)``
    learned with ``heads`` known (or ``heads_bound``) by the given schedule."""

    d: int
    heads: int
    model_seed: int
    learn_seed: int
    schedule: str = "paper"
    heads_bound: int | None = None  # learn with this bound instead of the known H
    height: int = 30

    def recipe(self) -> Recipe:
        args = (self.d, self.heads, self.model_seed, self.height)
        return Recipe("proofs_check.instances:random_model", args)

    def job(self) -> Job:
        told = {"heads_bound": self.heads_bound} if self.heads_bound is not None else {"heads": self.heads}
        return Job(LearnerKind.EXACT, self.d, {"seed": self.learn_seed, "schedule": self.schedule, **told})

    def label(self) -> str:
        told = f"H0={self.heads_bound}" if self.heads_bound is not None else "known"
        return (f"d={self.d} H={self.heads} ({told}) {self.schedule} "
                f"model_seed={self.model_seed} learn_seed={self.learn_seed}")


@dataclass
class Run:
    """What one run measured. JSON-ready; rationals as ``"p/q"`` strings."""

    instance: Instance
    true_heads: int = 0  # canonical heads of the ground truth
    exact: bool = False  # canonical forms equal (==) and equal values on fresh sequences (independent)
    num_heads: int | None = None  # heads the learner reported
    error: str | None = None  # "ErrorType: message" if the learner refused or crashed
    error_type: str | None = None
    recovery_error: bool = False  # the learner refused (a RecoveryError or subclass)
    queries: int = 0  # the oracle's log
    max_length: int = 0  # the oracle's log
    lengths: dict[int, int] = field(default_factory=dict)  # the oracle's log
    learner_queries: int | None = None  # what the learner counted (must equal the log)
    redraws: int = 0
    ambiguous_redraws: int = 0  # redraws because a link's pairing was not unique
    redraw_reasons: list[str] = field(default_factory=list)
    lean_fallback: bool = False
    configurations: list[list] = field(default_factory=list)  # [kind, number of queries] per group of the log
    problems: list[str] = field(default_factory=list)  # integrity, reported figures vs log, exactness
    seconds: float = 0.0
    recovered: dict | None = None  # the recovered model as JSON (MultiHeadAttention.to_dict)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["lengths"] = {str(k): v for k, v in sorted(self.lengths.items())}
        return out

    def groups_of(self, kind: str) -> list[int]:
        """The sizes (queries) of the logged configurations of ``kind``."""
        return [n for k, n in self.configurations if k == kind]


def planned_configurations(schedule: str, d: int) -> int:
    """Configurations of a redraw-free run: ``d^2`` measured and ``d^2 - 1`` matching (lean: ``d``
    measured; the other ``d^2 - 1`` asked at the matching points)."""
    return (d * d if schedule == "paper" else d) + d * d - 1


def figure_problems(result: dict, log: QueryLog, schedule: str, d: int) -> list[str]:
    """What the learner reported (queries, longest query, redraws and their reasons) against the log.

    Every redraw makes the run measure a configuration again, so a run with ``r`` redraws logs at
    least ``r`` configurations beyond the schedule's, and a redraw-free run (that did not fall back
    from the lean schedule) logs exactly the schedule's.
    """
    out = []
    told = result["queries"] + result.get("verification_queries", 0)
    if told != log.count:
        extra = told - result["queries"]
        out.append(f"the learner reported {result['queries']} queries"
                   + (f" (+ {extra} verification)" if extra else "") + f", the oracle logged {log.count}")
    if not result.get("verification_queries") and result["max_length"] != log.max_length:
        out.append(f"the learner reported a longest query of {result['max_length']}, "
                   f"the oracle logged {log.max_length}")
    if len(result["reasons"]) != result["redraws"]:
        out.append(f"the learner reported {result['redraws']} redraws with {len(result['reasons'])} reasons")
    try:
        extra = len(groups(log.queries)) - planned_configurations(schedule, d)
    except ValueError as exc:
        return out + [f"log: {exc}"]
    if result["redraws"] == 0 and extra != 0 and not result.get("lean_fallback"):
        out.append(f"no redraw reported, but the log holds {extra:+d} configurations against the schedule")
    if result["redraws"] > extra:
        out.append(f"{result['redraws']} redraws reported, but the log shows only {max(extra, 0)} "
                   f"configurations beyond the schedule")
    return out


def refusal_problems(result: dict, log: QueryLog) -> list[str]:
    """A refusal's reported counts against the log: the queries it says were answered, and its redraws
    (one reason each)."""
    out = []
    if result.get("queries") is not None and result["queries"] != log.count:
        out.append(f"the learner refused after {result['queries']} queries by its count, the oracle "
                   f"logged {log.count}")
    if result.get("redraws") is not None and result["redraws"] != len(result.get("reasons", [])):
        out.append(f"the refusal reports {result['redraws']} redraws with {len(result['reasons'])} reasons")
    return out


def fresh_sequences(key: str, d: int, longest: int, n: int = FRESH) -> list[list[tuple[int, ...]]]:
    """``n`` random integer sequences (entries in [-2, 2], lengths 1..``longest``), seeded by ``key``."""
    rng = random.Random(f"proofs_check.fresh:{key}")
    return [[tuple(rng.randint(-2, 2) for _ in range(d)) for _ in range(rng.randint(1, longest))]
            for _ in range(n)]


def exact_problems(recovered: dict, truth: Any, sequences: list,
                   truth_values: list | None = None) -> list[str]:
    """The recovered model (JSON) against the truth: ``==`` of canonical forms (the library's), and
    equal values of the recovered model and the *raw* truth under the independent evaluator
    (``truth_values``: the raw truth's values on ``sequences``, if already computed)."""
    out = []
    if MultiHeadAttention.from_dict(recovered) != truth.canonical():
        out.append("the recovered canonical model differs from the truth's (==)")
    if truth_values is None:
        raw = truth.to_dict()
        truth_values = [evaluate_rational(raw, X) for X in sequences]
    differ = sum(evaluate_rational(recovered, X) != v for X, v in zip(sequences, truth_values))
    if differ:
        out.append(f"the recovered model and the raw truth differ on {differ} of {len(sequences)} fresh "
                   f"sequences (independent evaluator)")
    return out


def judge_exact(run: Run, seen: Seen, key: str, longest: int) -> None:
    """Fill ``run`` from what the judge saw of an exact learner's session."""
    result, truth, log = seen.result, seen.truth, seen.log
    run.true_heads = truth.num_canonical_heads
    run.queries, run.max_length, run.lengths = log.count, log.max_length, log.lengths
    run.problems = list(seen.problems)
    try:
        run.configurations = [[g.kind, len(g.ks)] for g in groups(log.queries)]
    except ValueError as exc:
        run.configurations = [["unparsable", log.count]]
        run.problems.append(f"log: {exc}")
    if "refused" in result or "crashed" in result:
        kind = result.get("refused") or result["crashed"].split(":")[0]
        run.error = f"{kind}: {result.get('message', result.get('crashed'))}"
        run.error_type, run.recovery_error = kind, "refused" in result
        run.problems += refusal_problems(result, log)
        return
    run.learner_queries = result["queries"]
    run.redraws, run.redraw_reasons = result["redraws"], result["reasons"]
    run.ambiguous_redraws = sum(result["ambiguous"])
    run.num_heads, run.lean_fallback = result["num_heads"], result["lean_fallback"]
    run.problems += figure_problems(result, log, run.instance.schedule, run.instance.d)
    if result["model"] is None:
        run.problems.append("the recovered exp(W) is not rational")
        return
    run.recovered = result["model"]
    wrong = exact_problems(result["model"], truth, fresh_sequences(key, run.instance.d, longest))
    run.exact = not wrong
    run.problems += wrong


def recover_seen(task: Instance) -> tuple[Run, Seen]:
    """Learn ``task``'s model through the sandbox: what was measured, and what the judge saw."""
    seen = current().learn(task.recipe(), task.job())
    run = Run(instance=task, seconds=seen.seconds)
    judge_exact(run, seen, repr(task), 2 * (task.heads_bound or task.heads) + 3)
    return run, seen


def recover(task: Instance) -> Run:
    """Learn ``task``'s model through the sandbox and record what was measured."""
    return recover_seen(task)[0]
