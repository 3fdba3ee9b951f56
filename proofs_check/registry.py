"""The claim interface shared by every check in :mod:`proofs_check.claims`.

A claim module defines ``CLAIM = Claim(...)``. Its ``check(settings)`` runs the
instances (through ``settings.map`` so that ``--workers`` and ``--scheduler``
apply), measures, and returns an :class:`Outcome`. A claim must be able to fail:
``passed`` is computed from measured figures, never hard-coded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from exactlearn.sweep import map_tasks

__all__ = ["Claim", "Outcome", "Settings"]


@dataclass(frozen=True)
class Settings:
    """How a run of proofs_check is configured."""

    mode: str = "quick"  # "quick" (the default) or "full"
    seed: int = 0
    workers: int = 1
    scheduler: Any = None  # a Dask scheduler address or distributed.Client
    progress: Callable[[int, int], None] | None = None  # progress(done, total) of each map

    @property
    def full(self) -> bool:
        return self.mode == "full"

    def map(self, fn: Callable[[Any], Any], tasks) -> list[Any]:
        """Run ``fn`` over ``tasks`` with the configured executor (results in task order)."""
        tasks = list(tasks)
        report = None
        if self.progress is not None:
            total, done = len(tasks), [0]

            def report(index: int, result: Any) -> None:
                done[0] += 1
                self.progress(done[0], total)

        return map_tasks(fn, tasks, workers=self.workers, scheduler=self.scheduler, on_result=report)


@dataclass
class Outcome:
    """What a claim's check found."""

    passed: bool
    checked: str  # one line: what was checked, e.g. "36 models, d in 1..3, H in 1..3"
    figures: dict[str, Any] = field(default_factory=dict)  # measured numbers, JSON-ready
    details: list[str] = field(default_factory=list)  # failures or notes, one per line
    timings: dict[str, Any] = field(default_factory=dict)  # wall times: reported, never part of the figures


@dataclass(frozen=True)
class Claim:
    """A claim: its statement in mathematical terms, where it comes from, and its check."""

    key: str  # short stable identifier, e.g. "exact-recovery"
    title: str  # table row title
    statement: str  # the claim in mathematical terms
    source: str  # e.g. "paper abstract; docs/algorithm.md section 4"
    check: Callable[[Settings], Outcome]
    module: str = ""  # the manifest entry it was loaded from (e.g. "c02_query_count"); numbers the row
