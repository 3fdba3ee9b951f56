"""How the token range [-B, B] trades degenerate draws against number size and time.

    python benchmarks/token_range.py                 # B in 1..5, d in {2,4,6,8}, H in {1,2,4}, 4 seeds
    python benchmarks/token_range.py --bounds 2,3 --seeds 10 --workers 2

For every B it runs the paper schedule on random models and reports, summed over
the grid: configurations rejected *before* querying (rank-deficient designs,
``x = 0``, ``x = z``; free), configurations redrawn *after* querying (fewer
poles than H, equal residues, ambiguous matching; each costs its queries), the
extra queries those redraws spent, the largest oracle answer in bits, and CPU
seconds. This is the measurement behind ``DEFAULT_TOKEN_BOUND``
(docs/performance.md).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections import Counter

from exactlearn import MultiHeadAttention, Oracle, learn
from exactlearn.sweep import map_tasks


def token_task(task: dict) -> dict:
    """One recovery with token bound ``B``; counts pre-query rejections by wrapping the check."""
    chain_class = importlib.import_module("exactlearn.chain").TokenChain
    original = chain_class.pre_query_ok
    rejected = Counter()

    def counting(self):
        ok = original(self)
        rejected["pre"] += not ok
        return ok

    chain_class.pre_query_ok = counting
    try:
        model = MultiHeadAttention.random(task["d"], task["heads"], seed=task["seed"])
        biggest = [0]
        oracle = Oracle(model)

        def oracle_fn(tokens):
            value = oracle(tokens)
            biggest[0] = max(biggest[0], value.p.bit_length(), value.q.bit_length())
            return value

        oracle_fn.d = model.d
        start = time.process_time()
        rec = learn(oracle_fn, task["d"], heads=task["heads"], seed=task["seed"], token_bound=task["B"])
        cpu = time.process_time() - start
    finally:
        chain_class.pre_query_ok = original
    return {
        **task,
        "exact": rec.model == model.canonical(),
        "pre_query_rejections": rejected["pre"],
        "redraws": rec.redraws,
        "extra_queries": rec.queries - rec.planned,
        "reasons": [r.split(": ", 1)[1] for r in rec.redraw_reasons],
        "max_bits": biggest[0],
        "cpu_seconds": cpu,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bounds", default="1,2,3,4,5")
    parser.add_argument("--grid", default="2:1,2:2,2:4,4:1,4:2,4:4,6:1,6:2,6:4,8:1,8:2,8:4")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--scheduler", default=None)
    args = parser.parse_args(argv)
    bounds = [int(b) for b in args.bounds.split(",")]
    grid = [tuple(int(x) for x in item.split(":")) for item in args.grid.split(",")]
    tasks = [{"B": B, "d": d, "heads": h, "seed": s}
             for B in bounds for d, h in grid for s in range(args.seeds)]
    results = map_tasks(token_task, tasks, workers=args.workers, scheduler=args.scheduler)

    print(f"paper schedule; grid {args.grid}; {args.seeds} seeds per (d, H); sums over the grid")
    print(f"{'B':>2} {'runs':>5} {'exact':>5} {'pre-query':>9} {'redrawn':>7} {'runs w/':>7} {'extra q':>8} "
          f"{'max bits':>8} {'cpu s':>8}   redraw reasons")
    for B in bounds:
        rows = [r for r in results if r["B"] == B]
        reasons = Counter(reason.split(",")[0] for r in rows for reason in r["reasons"])
        print(f"{B:>2} {len(rows):>5} {sum(r['exact'] for r in rows):>5} "
              f"{sum(r['pre_query_rejections'] for r in rows):>9} {sum(r['redraws'] for r in rows):>7} "
              f"{sum(r['redraws'] > 0 for r in rows):>7} {sum(r['extra_queries'] for r in rows):>8} "
              f"{max(r['max_bits'] for r in rows):>8} {sum(r['cpu_seconds'] for r in rows):>8.2f}   "
              + "; ".join(f"{n} x {text}" for text, n in reasons.most_common(3)))
    print("\nby width (redrawn configurations / runs, per B):")
    for d in sorted({d for d, _ in grid}):
        cells = []
        for B in bounds:
            rows = [r for r in results if r["B"] == B and r["d"] == d]
            cells.append(f"B={B}: {sum(r['redraws'] for r in rows)}/{len(rows)}")
        print(f"  d = {d}: " + ", ".join(cells))
    return 0 if all(r["exact"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
