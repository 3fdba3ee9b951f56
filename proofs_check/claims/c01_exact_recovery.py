"""Claim 1: exact recovery of the canonical heads when H is known.

Statement. For every model ``f = sum_h softmax(X W_h x_N)^T X v_h`` whose canonical
form has ``H`` heads, the learner told ``H`` returns canonical pairs
``(W_h, v_h)``, ``h in [H]``, equal to the truth up to permutation (with
probability one over its random queries).

Source: the paper's abstract ("recovers the canonical pairs (W_h, v_h) up to
permutation with probability one"); docs/algorithm.md sections 3-4.

Check. Over the grid (quick: d in 1..3, H in 1..3, 3 random models per cell;
full: d in 1..6, H in 1..4, 5 models per cell) each model is built in the
oracle process and learned in the learner process (:mod:`proofs_check.sandbox`);
the recovered canonical model must equal the truth's canonical form under
``==`` on python-flint rationals (the canonical form is sorted, so ``==`` is
equality up to permutation), and the recovered model must give the raw truth's
values on fresh sequences under the independent evaluator (exact rationals). The
learner's reported counts must equal the oracle's log, and the session must be
intact (the learner's asker, the oracle's counts and its log agree). Runs that
needed redraws count as long as they end exact; their redraws are reported.
"""

from __future__ import annotations

from ..instances import Instance, grid, learn_seed, model_seed, recover
from ..registry import Claim, Outcome, Settings


def check(settings: Settings) -> Outcome:
    cells = grid(settings, per_cell_quick=3, per_cell_full=5)
    tasks = [Instance(d, H, model_seed(settings, i), learn_seed(settings, i)) for d, H, i in cells]
    runs = settings.map(recover, tasks)
    failures = [r for r in runs if not r.exact or r.problems]
    ds = sorted({t.d for t in tasks})
    hs = sorted({t.heads for t in tasks})
    per_cell = len(tasks) // (len(ds) * len(hs))
    figures = {
        "models": len(runs),
        "exact": len(runs) - len(failures),
        "runs with redraws": sum(1 for r in runs if r.redraws),
        "redraws": sum(r.redraws for r in runs),
        "grid": f"d in {ds[0]}..{ds[-1]}, H in {hs[0]}..{hs[-1]}, {per_cell} per cell",
    }
    details = [f"{r.instance.label()}: {r.error or '; '.join(r.problems) or 'not exact'}" for r in failures]
    return Outcome(
        passed=bool(runs) and not failures,
        checked=f"{len(runs)} random models ({figures['grid']}); recovered canonical model == truth, "
                f"equal to the raw truth on fresh sequences (independent evaluator)",
        figures=figures,
        details=details,
    )


CLAIM = Claim(
    key="exact-recovery",
    title="Exact recovery (known H)",
    statement="For known H the learner returns the canonical pairs (W_h, v_h), h in [H], "
              "exactly, up to permutation.",
    source="paper abstract; docs/algorithm.md sections 3-4",
    check=check,
)
