"""Claim 4: with only an upper bound H0 >= H the learner still recovers exactly.

Statement. Told only ``H0 >= H``, the learner recovers the canonical pairs
exactly, reports the true ``H`` (the reduced copy function has denominator
degree ``H``), and asks exactly ``4 H0 d^2 - 2 H0 + 1`` queries of maximum
length ``2 H0 + 1``.

Source: the paper's abstract ("If only a known upper bound H0 is available, the
algorithm uses 4H0d^2 - 2H0 + 1 value queries of maximum length 2H0 + 1");
docs/algorithm.md section 4 (upper bound H0 only) and section 6.

Check. For H0 in {H, H+1, H+2} over the grid (quick: d in 1..3, H in 1..3,
2 models per cell; full: d in 1..6, H in 1..4, 3 per cell): exact recovery
(``==`` and the independent evaluator); the learner's reported figures equal
the log; reported number of heads == the truth's H; the oracle's log shows a longest
query of exactly 2H0+1 in every run and exactly 4H0d^2-2H0+1 queries in every
run without redraws (runs with redraws are reported with their counts).
"""

from __future__ import annotations

from ..instances import Instance, grid, learn_seed, model_seed, recover
from ..registry import Claim, Outcome, Settings

EXCESS = (0, 1, 2)  # H0 - H


def abstract_count(d: int, H0: int) -> int:
    """The paper's abstract for a known bound: ``4H0d^2 - 2H0 + 1`` value queries."""
    return 4 * H0 * d * d - 2 * H0 + 1


def abstract_length(H0: int) -> int:
    """The paper's abstract for a known bound: maximum query length ``2H0 + 1``."""
    return 2 * H0 + 1


def check(settings: Settings) -> Outcome:
    cells = grid(settings, per_cell_quick=2, per_cell_full=3)
    tasks = [Instance(d, H, model_seed(settings, i), learn_seed(settings, i), heads_bound=H + e)
             for e in EXCESS for d, H, i in cells]
    runs = settings.map(recover, tasks)
    failures, notes = [], []
    for r in runs:
        t = r.instance
        H0 = t.heads_bound
        where = r.instance.label()
        if r.error is not None:
            failures.append(f"{where}: learning failed: {r.error}")
            continue
        failures.extend(f"{where}: {p}" for p in r.problems)
        if not r.exact and not r.problems:
            failures.append(f"{where}: the run is not exact")
        if r.num_heads != r.true_heads:
            failures.append(f"{where}: reported H = {r.num_heads}, true H = {r.true_heads}")
        if r.max_length != abstract_length(H0):
            failures.append(f"{where}: longest logged query {r.max_length}, 2H0+1 = {abstract_length(H0)}")
        expected = abstract_count(t.d, H0)
        if r.redraws == 0 and r.queries != expected:
            failures.append(f"{where}: no redraws but {r.queries} queries logged; 4H0d^2-2H0+1 = {expected}")
        if r.redraws:
            notes.append(f"note: {where}: {r.redraws} redraw(s), {r.queries} queries (formula {expected})")
    clean = [r for r in runs if r.error is None and r.redraws == 0]
    if not clean:
        failures.append("no run without redraws, so the exact count was not observed")
    figures = {"runs": len(runs)}
    for e in EXCESS:
        group = [r for r in runs if r.instance.heads_bound == r.instance.heads + e]
        free = [r for r in group if r.error is None and r.redraws == 0]
        n = len(group)
        exact = sum(r.exact for r in group)
        found = sum(r.num_heads == r.true_heads for r in group)
        counted = sum(r.queries == abstract_count(r.instance.d, r.instance.heads_bound) for r in free)
        longest = sum(r.max_length == abstract_length(r.instance.heads_bound) for r in group)
        name = "H0=H" if e == 0 else f"H0=H+{e}"
        figures[name] = (f"exact {exact}/{n}, H found {found}/{n}, count {counted}/{len(free)} redraw-free, "
                         f"length {longest}/{n}")
    figures["runs with redraws"] = sum(1 for r in runs if r.redraws)
    return Outcome(
        passed=bool(runs) and not failures,
        checked=f"{len(runs)} runs, H0 in {{H, H+1, H+2}}; "
                f"exact, H found, 4H0d^2-2H0+1, 2H0+1 from the oracle log",
        figures=figures,
        details=failures + notes,
    )


CLAIM = Claim(
    key="upper-bound",
    title="Upper bound H0 >= H",
    statement="Told only H0 >= H, the learner recovers the canonical heads exactly, finds H, "
              "and uses 4H0d^2 - 2H0 + 1 queries of maximum length 2H0 + 1.",
    source="paper abstract; docs/algorithm.md sections 4 and 6",
    check=check,
)
