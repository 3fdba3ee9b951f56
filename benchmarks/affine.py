"""Affine attention (layers with biases): the schedule's counts and the torch layers, measured.

    python benchmarks/affine.py                  # exact counts, d = 1..4, H = 1..3, seeds 0-4
    python benchmarks/affine.py --torch          # + torch layers with biases, d = 4, H = 2 and 4, seeds 0-2

Exact part: random affine models (``MultiHeadAttention.random(..., affine=True)``) learned with
``learn(oracle, d, heads=H)``; per size, the queries the *oracle* answered (its own log) in runs
without a redraw against ``4H d(d+1) - 2H + 1``, the longest query against ``2H + 1``, the runs
with redraws, and the ratio of the affine count to the bias-free schedule's ``4Hd^2 - 2H + 1``.
Torch part: :func:`exactlearn.targets.torch_demo.torch_affine` (PyTorch's zero biases, and
N(0, 1) biases): queries against the formula, relative error per parameter matrix (``W_h``,
``w_h``, ``v_h``, ``c0``), the reported error bound. Figures in docs/algorithm.md section 9 and
docs/approximate.md ("Layers with biases").
"""

from __future__ import annotations

import argparse
import sys
import time

from exactlearn import MultiHeadAttention, Oracle, learn
from exactlearn.schedule import paper_query_count


def exact_rows(seeds: int) -> None:
    print(f"{'d':>2} {'H':>2} {'formula':>8} {'measured':>9} {'max len':>8} {'exact':>6} {'redrawn':>8} "
          f"{'vs bias-free':>13}")
    for d in range(1, 5):
        for H in range(1, 4):
            formula = paper_query_count(d, H, affine=True)
            measured, lengths, exact, redrawn = set(), set(), 0, 0
            for seed in range(seeds):
                truth = MultiHeadAttention.random(d, H, seed=seed, affine=True)
                oracle = Oracle(truth)
                rec = learn(oracle, d, heads=H, seed=seed)
                exact += rec.model == truth.canonical()
                lengths.add(oracle.max_length)
                if rec.redraws:
                    redrawn += 1
                else:
                    measured.add(oracle.queries)
            shown = ",".join(str(q) for q in sorted(measured)) or "-"
            print(f"{d:>2} {H:>2} {formula:>8} {shown:>9} {','.join(map(str, sorted(lengths))):>8} "
                  f"{exact:>3}/{seeds:<2} {redrawn:>8} {formula / paper_query_count(d, H):>12.2f}x")


def torch_rows(seeds: int) -> None:
    from exactlearn.targets.torch_demo import torch_affine

    print(f"{'H':>2} {'biases':>8} {'seed':>4} {'queries':>8} {'formula':>8} {'ratio':>6} {'redraws':>8} "
          f"{'rel err':>9} {'bound':>9} {'CPU s':>6}")
    for H in (2, 4):
        for biases in ("default", "normal"):
            for seed in range(seeds):
                start = time.process_time()
                try:
                    r = torch_affine(H, seed, biases=biases)
                except Exception as exc:  # a refusal is a result too
                    print(f"{H:>2} {biases:>8} {seed:>4} refused: {type(exc).__name__} after "
                          f"{getattr(exc, 'queries', '?')} queries")
                    continue
                ratio = r.queries / r.formula
                print(f"{H:>2} {biases:>8} {seed:>4} {r.queries:>8} {r.formula:>8} {ratio:>6.2f} "
                      f"{r.redraws:>8} {float(r.rel_param):>9.2e} {float(r.error_bound):>9.2e} "
                      f"{time.process_time() - start:>6.1f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per exact size (default 5)")
    parser.add_argument("--torch", action="store_true", help="also the torch layers with biases (slow)")
    parser.add_argument("--torch-seeds", type=int, default=3)
    args = parser.parse_args(argv)
    exact_rows(args.seeds)
    if args.torch:
        torch_rows(args.torch_seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
