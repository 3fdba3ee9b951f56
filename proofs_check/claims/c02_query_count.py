"""Claim 2: the number of value queries with known H is exactly 4Hd^2 - 2H + 1.

Statement. With ``H`` known, the learner asks exactly
``Q(d, H) = 4 H d^2 - 2 H + 1 = d^2 (2H + 1) + (d^2 - 1)(2H - 1)`` queries:
``d^2`` measurement configurations of ``2H + 1`` queries each, and ``d^2 - 1``
matching configurations of ``2H - 1`` queries each.

Source: the paper's abstract ("uses exactly 4Hd^2 - 2H + 1 value queries");
docs/algorithm.md section 4 (the schedule) and section 6 (redraws are counted).
The lean schedule (docs/algorithm.md section 5, this project's own addition) asks
``d(2H + 1) + (d^2 - 1)(2H - 1)``.

Check. Over the grid of claim 1, each model is learned with the paper's schedule
and with the lean schedule, the model in the oracle process and the learner in
its own (:mod:`proofs_check.sandbox`). The count is the oracle's own log,
compared with the formulas written in this module (not the library's). Every
run without redraws must ask exactly the formula's number of queries, grouped
as the schedule says (``d^2`` configurations of ``2H + 1`` queries and
``d^2 - 1`` of ``2H - 1``; lean: ``d`` and ``d^2 - 1``). What the learner
reports (queries, longest query, redraws and their reasons) must agree with the
log (:func:`proofs_check.instances.figure_problems`). A run with redraws asks
more; it is reported with its redraw count, every logged configuration must
still have ``2H + 1`` or ``2H - 1`` queries, and the excess must be positive.
Every counted run must also be exact: its canonical model ``==`` the truth's,
and equal to the raw truth on fresh sequences under the independent evaluator
(a count of a wrong run proves nothing). At least one run per schedule must be
redraw-free.
"""

from __future__ import annotations

from ..instances import Instance, grid, learn_seed, model_seed, recover
from ..registry import Claim, Outcome, Settings


def abstract_count(d: int, H: int) -> int:
    """The paper's abstract: ``4Hd^2 - 2H + 1`` value queries."""
    return 4 * H * d * d - 2 * H + 1


def lean_count(d: int, H: int) -> int:
    """The lean schedule (docs/algorithm.md section 5): ``d(2H + 1) + (d^2 - 1)(2H - 1)``."""
    return d * (2 * H + 1) + (d * d - 1) * (2 * H - 1)


FORMULAS = {"paper": abstract_count, "lean": lean_count}


def _shape_problems(r) -> list[str]:
    """The log's configurations against the schedule's shape (sizes always; numbers without redraws)."""
    d, H = r.instance.d, r.instance.heads
    full, short = r.groups_of("measurement"), r.groups_of("matching")
    out = []
    if any(n != 2 * H + 1 for n in full) or any(n != 2 * H - 1 for n in short):
        out.append(f"configurations of {sorted(set(full))} and {sorted(set(short))} queries; "
                   f"the schedule asks 2H+1 = {2 * H + 1} (k = 0..2H) and 2H-1 = {2 * H - 1} (k = 1..2H-1)")
    if r.redraws == 0:
        measured = d * d if r.instance.schedule == "paper" else d
        if (len(full), len(short)) != (measured, d * d - 1):
            out.append(f"{len(full)} measurement and {len(short)} matching configurations logged; "
                       f"expected {measured} and {d * d - 1}")
    return out


def _judge(runs, formula, name: str, failures: list[str], notes: list[str]) -> dict:
    clean = [r for r in runs if r.error is None and r.redraws == 0]
    redrawn = [r for r in runs if r.error is None and r.redraws > 0]
    exact = sum(r.exact for r in runs)
    for r in runs:
        expected = formula(r.instance.d, r.instance.heads)
        where = r.instance.label()
        if r.error is not None:
            failures.append(f"{where}: learning failed: {r.error}")
            continue
        failures.extend(f"{where}: {p}" for p in r.problems)
        if not r.exact and not r.problems:
            failures.append(f"{where}: the run is not exact")
        failures.extend(f"{where}: {p}" for p in _shape_problems(r))
        if r.redraws == 0 and r.queries != expected:
            failures.append(f"{where}: no redraws, but the oracle logged {r.queries} queries; "
                            f"formula {expected}")
        if r.redraws > 0:
            notes.append(f"note: {where}: {r.redraws} redraw(s): {r.queries} queries = formula {expected} "
                         f"+ {r.queries - expected} on redrawn configurations")
            if r.queries <= expected:
                failures.append(f"{where}: redraws were reported but no extra query was logged")
    if not clean:
        failures.append(f"{name} schedule: no run without redraws, so the exact count was not observed")
    return {
        "runs": len(runs),
        "exact (== and independent evaluator)": exact,
        "redraw-free runs equal to formula": sum(1 for r in clean
                                                 if r.queries == formula(r.instance.d, r.instance.heads)),
        "redraw-free runs": len(clean),
        "runs with redraws": len(redrawn),
        "redraws": sum(r.redraws for r in redrawn),
        "extra queries on redraws": sum(r.queries - formula(r.instance.d, r.instance.heads) for r in redrawn),
    }


def check(settings: Settings) -> Outcome:
    cells = grid(settings, per_cell_quick=3, per_cell_full=5)
    tasks = [Instance(d, H, model_seed(settings, i), learn_seed(settings, i), schedule=s)
             for s in ("paper", "lean") for d, H, i in cells]
    runs = settings.map(recover, tasks)
    paper = [r for r in runs if r.instance.schedule == "paper"]
    lean = [r for r in runs if r.instance.schedule == "lean"]
    failures: list[str] = []
    notes: list[str] = []
    fig_paper = _judge(paper, FORMULAS["paper"], "paper", failures, notes)
    fig_lean = _judge(lean, FORMULAS["lean"], "lean", failures, notes)
    # one measured example per (d, H): the oracle-logged counts of the first redraw-free run
    table = {}
    for r in paper + lean:
        if r.error is None and r.redraws == 0:
            key = f"d={r.instance.d},H={r.instance.heads}"
            table.setdefault(key, {}).setdefault(r.instance.schedule, r.queries)
    example = max(table, key=lambda k: (table[k].get("paper", 0)), default=None)
    figures = {
        "paper: redraw-free runs == 4Hd^2-2H+1": f"{fig_paper['redraw-free runs equal to formula']}"
                                                 f"/{fig_paper['redraw-free runs']}",
        "lean: redraw-free runs == d(2H+1)+(d^2-1)(2H-1)": f"{fig_lean['redraw-free runs equal to formula']}"
                                                           f"/{fig_lean['redraw-free runs']}",
        "runs with redraws (paper/lean)": f"{fig_paper['runs with redraws']}/{fig_lean['runs with redraws']}",
        "largest cell, measured paper / lean": (f"{example}: {table[example].get('paper')} / "
                                                f"{table[example].get('lean')}") if example else "-",
        "paper": fig_paper,
        "lean": fig_lean,
        "measured counts per cell": table,
    }
    return Outcome(
        passed=not failures,
        checked=f"{len(paper)} paper + {len(lean)} lean runs, each exact; "
                f"count from the oracle process's log vs 4Hd^2-2H+1",
        figures=figures,
        details=failures + notes,
    )


CLAIM = Claim(
    key="query-count",
    title="Query count (known H)",
    statement="With H known the learner uses exactly 4Hd^2 - 2H + 1 value queries "
              "(lean schedule: d(2H+1) + (d^2-1)(2H-1)).",
    source="paper abstract; docs/algorithm.md sections 4-6",
    check=check,
)
