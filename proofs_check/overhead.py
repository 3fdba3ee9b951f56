"""``python -m proofs_check.overhead``: what the process boundary costs, as ratios.

Learns claim 1's quick instances (27 random models, d, H in 1..3) twice: with
the model and its log in this process (:func:`proofs_check.oracles.model_oracle`,
the arrangement before the sandbox) and through the sandbox
(:mod:`proofs_check.sandbox`). Prints queries, wall time and CPU time (this
process plus, for the sandbox, its two processes, read from ``/proc`` on Linux)
and the ratios; the processes' start (and their first import of exactlearn) is
reported apart. A benchmark, not a
test: it prints, it does not judge.
"""

from __future__ import annotations

import os
import sys
import time

__all__ = ["main"]


def _cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (0 where ``/proc`` is not available)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _in_process(instances) -> tuple[int, float, float]:
    from . import library
    from .oracles import model_oracle

    queries, wall, cpu = 0, time.perf_counter(), time.process_time()
    for task in instances:
        oracle, log = model_oracle(task.recipe_model())
        library.learn(oracle, task.d, seed=task.learn_seed, heads=task.heads)
        queries += log.count
    return queries, time.perf_counter() - wall, time.process_time() - cpu


def _sandboxed(instances) -> tuple[int, float, float, float]:
    from .sandbox import Sandbox

    box = Sandbox()
    start = time.perf_counter()
    box.start()
    box.learn(instances[0].recipe(), instances[0].job())  # the processes import exactlearn on first use
    started = time.perf_counter() - start
    pids = [p.pid for p in box._procs]
    before = [_cpu(p) for p in pids]
    queries, wall, cpu = 0, time.perf_counter(), time.process_time()
    for task in instances:
        queries += box.learn(task.recipe(), task.job()).log.count
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    cpu += sum(_cpu(p) - b for p, b in zip(pids, before))
    box.stop()
    return queries, wall, cpu, started


def main(argv: list[str] | None = None) -> int:
    from .instances import Instance, grid, learn_seed, model_seed
    from .registry import Settings

    settings = Settings()
    instances = [_Task(Instance(d, H, model_seed(settings, i), learn_seed(settings, i)))
                 for d, H, i in grid(settings, 3, 5)]
    q1, w1, c1 = _in_process(instances)
    q2, w2, c2, started = _sandboxed(instances)
    print(f"{len(instances)} runs, {q1} queries in one process, {q2} through the sandbox")
    print(f"one process: {w1:.2f} s wall, {c1:.2f} s CPU")
    print(f"sandbox:     {w2:.2f} s wall, {c2:.2f} s CPU (+ {started:.2f} s to start its processes "
          f"and import exactlearn there)")
    print(f"ratio: wall {w2 / w1:.1f}x, CPU {c2 / c1:.1f}x; per query: {1e6 * (w2 - w1) / q2:.0f} us wall, "
          f"{1e6 * (c2 - c1) / q2:.0f} us CPU more")
    return 0


class _Task:
    """An instance and its model built here (for the one-process run)."""

    def __init__(self, instance):
        self.instance = instance

    def __getattr__(self, name):
        return getattr(self.instance, name)

    def recipe_model(self):
        from .instances import random_model

        return random_model(self.d, self.heads, self.model_seed, self.height)


if __name__ == "__main__":
    sys.exit(main())
