"""Vector outputs: queries of the exact path, measured from the oracle's log, against both formulas.

    python benchmarks/vector_outputs.py            # d = 1..4, H = 1..3 (D = d outputs), seeds 0-2

Random :class:`~exactlearn.vector.VectorMultiHeadAttention` models (``D = d`` outputs) learned with
``learn(Oracle(model), d, heads=H, seed=seed)``. Per size: the largest count the *oracle* answered
(its own log) over the seeds, the vector schedule's formula ``(H + 2) d^2 + H(d - 1)`` (when
``D >= H``; else the copy counts of the scalar schedule), the paper's ``4Hd^2 - 2H + 1``, the longest
query, whether every run recovered ``V_h`` and ``exp(W_h)`` exactly (``==`` on the canonical form),
and the runs with redraws. Figures in docs/algorithm.md section 10.
"""

from __future__ import annotations

import argparse
import sys
import time

from exactlearn import Oracle, learn
from exactlearn.schedule import paper_query_count, vector_query_count
from exactlearn.vector import VectorMultiHeadAttention


def rows(dims: range, heads: range, seeds: int) -> None:
    print(f"{'d':>2} {'H':>2} {'measured':>9} {'(H+2)d^2+H(d-1)':>16} {'4Hd^2-2H+1':>11} {'ratio':>6} "
          f"{'max len':>8} {'exact':>6} {'redrawn':>8}")
    for d in dims:
        for H in heads:
            formula, paper = vector_query_count(d, H, d), paper_query_count(d, H)
            most, longest, exact, redrawn = 0, 0, 0, 0
            for seed in range(seeds):
                truth = VectorMultiHeadAttention.random(d, H, seed=seed)
                oracle = Oracle(truth)
                rec = learn(oracle, d, heads=H, seed=seed)
                exact += rec.vector_model == truth.canonical()
                most, longest = max(most, oracle.queries), max(longest, oracle.max_length)
                redrawn += rec.redraws > 0
            print(f"{d:>2} {H:>2} {most:>9} {formula:>16} {paper:>11} {most / paper:>6.2f} {longest:>8} "
                  f"{exact:>3}/{seeds:<2} {redrawn:>8}")
            print(f"  d = {d}, H = {H} done", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-d", type=int, default=4, help="largest token width d (default 4)")
    parser.add_argument("--max-heads", type=int, default=3, help="largest head count H (default 3)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per size (default 3)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows(range(1, args.max_d + 1), range(1, args.max_heads + 1), args.seeds)
    print(f"({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
