"""Claim 3: the longest query with known H has length exactly 2H + 1.

Statement. Every query of the schedule is ``S_k(x, z) = (z, ..., z [k copies], x)``
with ``k <= 2H``, so its length is at most ``2H + 1``; the measurement
configurations sample ``k = 0..2H``, so the maximum ``2H + 1`` is attained.

Source: the paper's abstract ("of maximum length 2H + 1"); docs/algorithm.md
sections 3-4.

Check. Over the grid of claim 1, with both the paper's and the lean schedule,
the oracle process's log must show a longest query of exactly ``2H + 1`` in
every run, redraws or not (a redraw asks the same kinds of queries), and
queries of every length ``1..2H+1``; the longest query the learner reports must
be the log's, and every run must be exact (``==`` and the independent
evaluator).
"""

from __future__ import annotations

from ..instances import Instance, grid, learn_seed, model_seed, recover
from ..registry import Claim, Outcome, Settings


def abstract_length(H: int) -> int:
    """The paper's abstract: maximum query length ``2H + 1``."""
    return 2 * H + 1


def check(settings: Settings) -> Outcome:
    cells = grid(settings, per_cell_quick=3, per_cell_full=5)
    tasks = [Instance(d, H, model_seed(settings, i), learn_seed(settings, i), schedule=s)
             for s in ("paper", "lean") for d, H, i in cells]
    runs = settings.map(recover, tasks)
    failures = []
    by_h: dict[str, set[int]] = {}
    for r in runs:
        H = r.instance.heads
        expected = abstract_length(H)
        by_h.setdefault(f"H={H}", set()).add(r.max_length)
        where = r.instance.label()
        if r.error is not None:
            failures.append(f"{where}: learning failed: {r.error}")
            continue
        failures.extend(f"{where}: {p}" for p in r.problems)
        if not r.exact and not r.problems:
            failures.append(f"{where}: the run is not exact")
        if r.max_length != expected:
            failures.append(f"{where}: longest logged query has length {r.max_length}, 2H+1 = {expected}")
        elif sorted(r.lengths) != list(range(1, expected + 1)):
            failures.append(f"{where}: logged lengths {sorted(r.lengths)}, "
                            f"expected every length 1..{expected}")
    figures = {
        "runs": len(runs),
        "max length == 2H+1": sum(1 for r in runs if r.error is None
                                  and r.max_length == abstract_length(r.instance.heads)),
        "measured max lengths": "; ".join(f"{h}: {sorted(v)}" for h, v in sorted(by_h.items())),
    }
    return Outcome(
        passed=bool(runs) and not failures,
        checked=f"{len(runs)} runs (paper and lean), each exact; longest logged query vs 2H+1",
        figures=figures,
        details=failures,
    )


CLAIM = Claim(
    key="max-length",
    title="Maximum query length (known H)",
    statement="With H known every query has length at most 2H + 1, and 2H + 1 is attained.",
    source="paper abstract; docs/algorithm.md sections 3-4",
    check=check,
)
