"""Benchmark: exact recovery across a grid of widths and head counts, with the targets' figures.

Run from a checkout (after ``pip install -e .``):

    python benchmarks/recover.py                      # d in {2,4,6,8} x H in {1,2,4}, paper and lean
    python benchmarks/recover.py --large              # ... plus d = 12, H = 6 and d = 16, H = 8
    python benchmarks/recover.py --grid 8:4,16:8 --schedule paper
    python benchmarks/recover.py --workers 2          # local process pool
    python benchmarks/recover.py --scheduler tcp://host:8786   # a Dask cluster

Every instance runs through :func:`exactlearn.sweep.map_tasks` and is measured
inside its worker by :func:`exactlearn.sweep.recover_instance`: the query count
and longest query come from the Oracle's own log; times are CPU seconds of the
worker thread that ran the instance (``time.thread_time``, i.e. one core) in total and inside the
oracle, the learner's share being the difference; wall-clock seconds are
printed too (on a shared machine wall time also counts waiting for a core).
Peak memory is the peak resident set size of the instance (Linux resets the
high-water mark before each instance; elsewhere the process's peak).

The targets (issues 2 and 5) are printed as figures with met / not met; they
are never asserted by a timed test.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from pathlib import Path

import flint

from exactlearn.model import MultiHeadAttention
from exactlearn.schedule import lean_query_count, paper_query_count
from exactlearn.sweep import map_tasks, recover_instance

DEFAULT_GRID = [(d, h) for d in (2, 4, 6, 8) for h in (1, 2, 4)]
LARGE_GRID = [(12, 6), (16, 8)]
TARGET_LARGE = (16, 8)
TARGET_LARGE_SECONDS = 300.0
TARGET_RATIO_AT = (8, 4)
TARGET_PRIME_SECONDS = 1.0


def sixty_one_bit_model(seed: int = 0) -> MultiHeadAttention:
    """d = 2, H = 2: every ``exp_W`` entry and every ``v`` entry has a 61-bit prime numerator or denominator."""
    rng = random.Random(f"benchmark.61-bit:{seed}")

    def prime61() -> int:
        while True:
            p = rng.randrange(2**60 + 1, 2**61, 2)
            if flint.fmpz(p).is_prime():
                return p

    def entry(positive: bool) -> flint.fmpq:
        small = rng.randint(1, 30)
        big = prime61()
        sign = 1 if positive or rng.random() < 0.5 else -1
        return flint.fmpq(sign * big, small) if rng.random() < 0.5 else flint.fmpq(sign * small, big)

    heads = [([[entry(True) for _ in range(2)] for _ in range(2)], [entry(False) for _ in range(2)])
             for _ in range(2)]
    return MultiHeadAttention.from_lists([w for w, _ in heads], [v for _, v in heads])


def parse_grid(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        d, h = item.split(":")
        out.append((int(d), int(h)))
    return out


def mb(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.0f}"


def row_line(r: dict) -> str:
    t = r["task"]
    cpu, ocpu = r["cpu_seconds"], r["oracle_cpu_seconds"]
    learner = cpu - ocpu
    ratio = learner / ocpu if ocpu > 0 else float("inf")
    return (f"{t['d']:>3} {t['heads']:>2} {t.get('schedule', 'paper'):>6} {'EXACT' if r['exact'] else 'WRONG':>6} "
            f"{r['queries']:>6} {r['formula']:>7} {r['lean_formula']:>6} {r['max_length']:>4} {r['redraws']:>4} "
            f"{cpu:>9.3f} {ocpu:>8.3f} {learner:>8.3f} {ratio:>7.2f} {r['seconds']:>8.2f} {mb(r['peak_rss']):>6}")


HEADER = (f"{'d':>3} {'H':>2} {'sched':>6} {'result':>6} {'queries':>6} {'formula':>7} {'lean#':>6} {'len':>4} "
          f"{'redr':>4} {'cpu_s':>9} {'oracle':>8} {'learner':>8} {'l/o':>7} {'wall_s':>8} {'MB':>6}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", default=None, help="comma list of d:H (default: d in 2,4,6,8 x H in 1,2,4)")
    parser.add_argument("--large", action="store_true", help="add d=12,H=6 and d=16,H=8 (the 5-minute target)")
    parser.add_argument("--schedule", choices=("paper", "lean", "both"), default="both")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="local processes (default 1)")
    parser.add_argument("--scheduler", default=None, metavar="tcp://host:port", help="run on a Dask cluster")
    parser.add_argument("--json", type=Path, default=None, help="write every measured row as JSON")
    args = parser.parse_args(argv)

    grid = parse_grid(args.grid) if args.grid else list(DEFAULT_GRID)
    if args.large:
        grid += [g for g in LARGE_GRID if g not in grid]
    schedules = ["paper", "lean"] if args.schedule == "both" else [args.schedule]
    tasks = [{"d": d, "heads": h, "seed": args.seed, "schedule": s} for d, h in grid for s in schedules]
    prime_model = sixty_one_bit_model(args.seed)
    tasks.append({"d": 2, "heads": 2, "seed": args.seed, "schedule": "paper", "model": prime_model.to_dict(),
                  "label": "61-bit primes"})
    # largest first so that a pool finishes sooner
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i]["d"] ** 2 * tasks[i]["heads"])

    print(f"exactlearn benchmark: python {platform.python_version()}, python-flint {flint.__version__}, "
          f"{platform.machine()}; workers={args.workers}"
          + (f", scheduler={args.scheduler}" if args.scheduler else ""))
    print("times: cpu_s = CPU seconds of the instance (one core), oracle = CPU inside the oracle, "
          "learner = cpu_s - oracle, l/o = learner/oracle, wall_s = wall clock; MB = peak RSS")
    start = time.perf_counter()
    ordered = [tasks[i] for i in order]
    print(f"{len(ordered)} instances, largest first; one progress line each on stderr", file=sys.stderr, flush=True)

    def progress(i: int, r: dict) -> None:
        t = ordered[i]
        print(f"  [{i + 1}/{len(ordered)}] d = {t['d']}, H = {t['heads']}, {t['schedule']}: "
              f"{'EXACT' if r['exact'] else 'WRONG'} ({time.perf_counter() - start:.1f} s so far)",
              file=sys.stderr, flush=True)

    results_ordered = map_tasks(recover_instance, ordered, workers=args.workers, scheduler=args.scheduler,
                                on_result=progress)
    results = [None] * len(tasks)
    for i, r in zip(order, results_ordered):
        results[i] = r
    elapsed = time.perf_counter() - start

    print()
    print(HEADER)
    prime_result = None
    for t, r in zip(tasks, results):
        if t.get("label") == "61-bit primes":
            prime_result = r
            continue
        print(row_line(r))
    print()
    print("61-bit primes (d = 2, H = 2; every entry has a 61-bit prime numerator or denominator):")
    print(HEADER)
    print(row_line(prime_result))
    print(f"\nsweep wall time {elapsed:.1f} s")

    # -- targets ---------------------------------------------------------------------------
    def find(d, h, schedule="paper"):
        for t, r in zip(tasks, results):
            if t["d"] == d and t["heads"] == h and t.get("schedule") == schedule and "label" not in t:
                return r
        return None

    def verdict(ok: bool | None) -> str:
        return "not run" if ok is None else ("MET" if ok else "NOT MET")

    print("\ntargets:")
    all_exact = all(r["exact"] for r in results)
    print(f"  every instance recovered exactly (== on canonical forms): {verdict(all_exact)}")
    counts_ok = all(r["queries"] == (r["formula"] if r["task"].get("schedule", "paper") == "paper"
                                     else r["lean_formula"]) for r in results if r["redraws"] == 0)
    print(f"  oracle-log query count = formula (paper) / lean count (lean) whenever no redraw: {verdict(counts_ok)}")
    big = find(*TARGET_LARGE)
    if big is None:
        print(f"  d = 16, H = 8 exact in under {TARGET_LARGE_SECONDS:.0f} s on one core: not run (use --large)")
    else:
        ok = big["exact"] and big["cpu_seconds"] < TARGET_LARGE_SECONDS
        print(f"  d = 16, H = 8 exact in under {TARGET_LARGE_SECONDS:.0f} s on one core: {big['cpu_seconds']:.1f} s CPU "
              f"({big['seconds']:.1f} s wall), {big['queries']} queries, peak {mb(big['peak_rss'])} MB "
              f"-> {verdict(ok)}")
    mid = find(*TARGET_RATIO_AT)
    if mid is None:
        print("  learner time <= oracle time at d = 8, H = 4: not run")
    else:
        learner = mid["cpu_seconds"] - mid["oracle_cpu_seconds"]
        ratio = learner / mid["oracle_cpu_seconds"]
        print(f"  learner time <= oracle time at d = 8, H = 4 (paper): learner {learner:.3f} s, "
              f"oracle {mid['oracle_cpu_seconds']:.3f} s, ratio {ratio:.2f} -> {verdict(ratio <= 1)}")
    ok = prime_result["exact"] and prime_result["cpu_seconds"] < TARGET_PRIME_SECONDS
    print(f"  61-bit primes at d = 2, H = 2 exact in under {TARGET_PRIME_SECONDS:.0f} s: "
          f"{prime_result['cpu_seconds']:.3f} s CPU -> {verdict(ok)}")
    peak = max(results, key=lambda r: r["peak_rss"])
    print(f"  peak memory: {mb(peak['peak_rss'])} MB (d = {peak['task']['d']}, H = {peak['task']['heads']}, "
          f"{peak['peak_rss_scope']} peak RSS)")

    if args.json is not None:
        args.json.write_text(json.dumps({"argv": sys.argv, "results": results}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0 if all_exact else 1


if __name__ == "__main__":
    sys.exit(main())
