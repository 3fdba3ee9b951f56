"""Shared instances for the claims: grids of random models, and one recovery run.

A claim builds a list of :class:`Instance` tasks, runs them through
``settings.map`` (so ``--workers`` and ``--scheduler`` apply) with
:func:`recover`, and judges the returned :class:`Run` records in the parent
process. Workers only *measure*; every comparison with a formula happens in the
claim's ``check``, so a run never decides its own verdict.

The learner is given an opaque oracle (:mod:`proofs_check.oracles`): a plain
function with no attribute leading to the model. Counts in a :class:`Run` are
read from that oracle's log, never from a formula or from the learner; the log
is also grouped into configurations (:mod:`proofs_check.transcript`).

>>> run = recover(Instance(d=2, heads=1, model_seed=0, learn_seed=0))
>>> run.exact, run.queries, run.max_length, run.redraws
(True, 15, 3, 0)
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from exactlearn import MultiHeadAttention
from exactlearn.errors import RecoveryError

from . import library
from .oracles import model_oracle
from .registry import Settings
from .transcript import groups

__all__ = ["Instance", "Run", "grid", "learn_seed", "model_seed", "recover"]

#: quick: d in 1..3, H in 1..3; full: d in 1..6, H in 1..4
QUICK_D, QUICK_H = range(1, 4), range(1, 4)
FULL_D, FULL_H = range(1, 7), range(1, 5)


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

    def model(self) -> MultiHeadAttention:
        return MultiHeadAttention.random(self.d, self.heads, seed=self.model_seed, height=self.height)

    def label(self) -> str:
        told = f"H0={self.heads_bound}" if self.heads_bound is not None else "known"
        return (f"d={self.d} H={self.heads} ({told}) {self.schedule} "
                f"model_seed={self.model_seed} learn_seed={self.learn_seed}")


@dataclass
class Run:
    """What one run measured. JSON-ready; rationals as ``"p/q"`` strings."""

    instance: Instance
    true_heads: int  # canonical heads of the ground truth
    exact: bool = False  # recovered canonical model == ground truth canonical (by ==)
    num_heads: int | None = None  # heads the learner reported
    error: str | None = None  # "ErrorType: message" if learn() raised
    error_type: str | None = None
    recovery_error: bool = False  # the error is a RecoveryError (or subclass)
    queries: int = 0  # the opaque oracle's log
    max_length: int = 0  # the opaque oracle's log
    lengths: dict[int, int] = field(default_factory=dict)  # the opaque oracle's log
    learner_queries: int | None = None  # what the learner counted (must equal the log)
    redraws: int = 0
    ambiguous_redraws: int = 0  # redraws because a link's pairing was not unique
    redraw_reasons: list[str] = field(default_factory=list)
    configurations: list[list] = field(default_factory=list)  # [kind, number of queries] per group of the log
    seconds: float = 0.0
    recovered: dict | None = None  # the recovered model as JSON (MultiHeadAttention.to_dict)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["lengths"] = {str(k): v for k, v in sorted(self.lengths.items())}
        return out

    def groups_of(self, kind: str) -> list[int]:
        """The sizes (queries) of the logged configurations of ``kind``."""
        return [n for k, n in self.configurations if k == kind]


def recover(task: Instance) -> Run:
    """Learn ``task.model()`` through a fresh opaque oracle and record what was measured."""
    truth = task.model()
    oracle, log = model_oracle(truth)
    run = Run(instance=task, true_heads=truth.num_canonical_heads)
    kwargs: dict[str, Any] = ({"heads_bound": task.heads_bound} if task.heads_bound is not None
                              else {"heads": task.heads})
    start = time.perf_counter()
    try:
        rec = library.learn(oracle, task.d, seed=task.learn_seed, schedule=task.schedule, **kwargs)
    except RecoveryError as exc:
        run.error, run.error_type = f"{type(exc).__name__}: {exc}", type(exc).__name__
        run.recovery_error = True
        rec = None
    except Exception as exc:  # any other failure is reported, never swallowed as a pass
        run.error, run.error_type = f"{type(exc).__name__}: {exc}", type(exc).__name__
        rec = None
    run.seconds = time.perf_counter() - start
    run.queries, run.max_length, run.lengths = log.count, log.max_length, log.lengths
    try:
        run.configurations = [[g.kind, len(g.ks)] for g in groups(log.queries)]
    except ValueError as exc:
        run.configurations = [["unparsable", log.count]]
        run.error = run.error or f"log: {exc}"
    if rec is None:
        return run
    run.learner_queries = rec.queries
    run.redraws = rec.redraws
    run.redraw_reasons = [str(r) for r in rec.redraw_reasons]
    run.ambiguous_redraws = sum(library.is_ambiguous_pairing(r) for r in rec.redraw_reasons)
    run.num_heads = rec.num_heads
    if rec.is_rational:
        run.recovered = rec.model.to_dict()
        run.exact = rec.model == truth.canonical()
    return run
