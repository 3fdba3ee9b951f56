"""Benchmark: exact recovery across a grid of widths and head counts, with the targets' figures.

Run from a checkout (after ``pip install -e .``, or with ``PYTHONPATH`` at the checkout):

    python benchmarks/recover.py                # d in {2,4,6,8} x H in {1,2,4}, d = 16, H = 8
    python benchmarks/recover.py --large        # ... plus d = 12, H = 6 and d = 32, H = 16
    python benchmarks/recover.py --grid 8:4,16:8 --schedule paper
    python benchmarks/recover.py --workers 2    # two rows at a time
    python benchmarks/recover.py --schedule paper --grid 6:1,6:2,8:4,... --fit   # growth exponents
    python benchmarks/recover.py --scheduler tcp://host:8786   # a Dask cluster

Every row runs :func:`exactlearn.sweep.recover_instance` in a fresh Python
process of its own, which reports what it measured: the query count and
longest query from the Oracle's own log; CPU seconds of the thread that ran
the instance (``time.thread_time``, one core; FLINT is single-threaded) in
total and inside the oracle, the learner's share being the difference; and
the peak resident set size of that process (``ru_maxrss``), i.e. of the one
row, interpreter and imports included. Each learner/oracle ratio is measured
within one run. With ``--scheduler`` the rows run as Dask tasks instead and
the memory column is what the worker reports.

The speed targets are printed as figures with met / not met; they are
never asserted by a timed test.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import resource
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import flint

from exactlearn.model import MultiHeadAttention
from exactlearn.sweep import map_tasks, recover_instance

DEFAULT_GRID = [(d, h) for d in (2, 4, 6, 8) for h in (1, 2, 4)] + [(16, 8)]
LARGE_GRID = [(12, 6), (32, 16)]
PAPER_ONLY = {(32, 16)}  # the lean schedule at this size doubles the run for no new target
RATIO_SEEDS = (0, 1, 2)  # d = 8, H = 4 (paper) is also run with these seeds: the median ratio
TARGETS = {  # (d, H): (learner/oracle at most, total CPU seconds at most or None)
    (8, 4): (1.0, None),
    (16, 8): (0.7, None),
    (32, 16): (1.0, 60.0),
}
TARGET_PRIME_SECONDS = 1.0
PROGRESS_SECONDS = 10.0


def sixty_one_bit_model(seed: int = 0) -> MultiHeadAttention:
    """d = 2, H = 2: every ``exp_W`` entry and every ``v`` entry has a 61-bit prime numerator or
    denominator."""
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
        try:
            d, h = (int(x) for x in item.split(":"))
        except ValueError:
            raise SystemExit(f"recover.py: --grid wants a comma list of d:H, got {item!r}") from None
        if d < 1 or h < 1:
            raise SystemExit(f"recover.py: d and H must be positive, got {item!r}")
        out.append((d, h))
    return out


# -- one row in its own process ---------------------------------------------------------


def _child(task_json: str) -> int:
    """Run one task in this (fresh) process and print its measurements as JSON on stdout."""
    task = json.loads(task_json)
    label = f"d = {task['d']}, H = {task['heads']}, {task.get('schedule', 'paper')}"
    learn_module = sys.modules["exactlearn.learn"]
    plain_learn = learn_module.learn
    start = time.process_time()
    last = [start]

    def progress(queries: int, planned: int) -> None:
        now = time.process_time()
        if now - last[0] >= PROGRESS_SECONDS:
            last[0] = now
            print(f"  ... {label}: {queries}/{planned} queries, {now - start:.0f} s CPU",
                  file=sys.stderr, flush=True)

    def learn_with_progress(*args, **kwargs):
        return plain_learn(*args, progress=progress, **kwargs)

    learn_module.learn = learn_with_progress  # recover_instance imports learn when called
    result = recover_instance(task)
    result["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    result["peak_rss_scope"] = "row process"
    print(json.dumps(result))
    return 0


def run_in_subprocess(task: dict) -> dict:
    """One fresh interpreter per row, so its peak RSS belongs to that row alone."""
    out = subprocess.run([sys.executable, __file__, "--one-task", json.dumps(task)],
                         check=False, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        raise SystemExit(f"recover.py: the row {task} failed (exit code {out.returncode})")
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the table ---------------------------------------------------------------------------


def mb(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.0f}"


def ratio(r: dict) -> float:
    ocpu = r["oracle_cpu_seconds"]
    return (r["cpu_seconds"] - ocpu) / ocpu if ocpu > 0 else float("inf")


HEADER = (f"{'d':>2} {'H':>2} {'sched':>5} {'seed':>4} {'exact':>5} {'queries':>7} {'formula':>7} "
          f"{'len':>3} {'redr':>4} {'cpu_s':>7} {'oracle':>6} {'learner':>7} {'l/o':>4} {'MB':>4}")


def row_line(r: dict) -> str:
    t = r["task"]
    schedule = t.get("schedule", "paper")
    formula = r["formula"] if schedule == "paper" else r["lean_formula"]
    cpu, ocpu = r["cpu_seconds"], r["oracle_cpu_seconds"]
    result = "EXACT" if r["exact"] else "WRONG"
    return (f"{t['d']:>2} {t['heads']:>2} {schedule:>5} {t['seed']:>4} {result:>5} "
            f"{r['queries']:>7} {formula:>7} {r['max_length']:>3} {r['redraws']:>4} "
            f"{cpu:>7.3f} {ocpu:>6.3f} {cpu - ocpu:>7.3f} {ratio(r):>4.2f} {mb(r['peak_rss']):>4}")


def build_tasks(grid, schedules, seed) -> list[dict]:
    tasks = []
    for d, h in grid:
        for s in schedules:
            if s == "lean" and (d, h) in PAPER_ONLY:
                continue
            tasks.append({"d": d, "heads": h, "seed": seed, "schedule": s})
            if (d, h) == (8, 4) and s == "paper":
                tasks += [{"d": d, "heads": h, "seed": x, "schedule": s} for x in RATIO_SEEDS if x != seed]
    prime_model = sixty_one_bit_model(seed)
    tasks.append({"d": 2, "heads": 2, "seed": seed, "schedule": "paper", "model": prime_model.to_dict(),
                  "label": "61-bit primes"})
    return tasks


def run_tasks(tasks, workers: int, scheduler) -> list[dict]:
    if scheduler is not None:
        return map_tasks(recover_instance, tasks, scheduler=scheduler)
    # largest first so that two workers finish sooner; results are put back in task order
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i]["d"] ** 2 * tasks[i]["heads"])
    results: list = [None] * len(tasks)
    lock = threading.Lock()

    def one(i: int) -> None:
        r = run_in_subprocess(tasks[i])
        results[i] = r
        t = r["task"]
        if t["d"] ** 2 * t["heads"] >= 1024:  # progress on the long rows
            with lock:
                print(f"  done {t['d']}:{t['heads']} {t.get('schedule', 'paper')}: "
                      f"{r['cpu_seconds']:.1f} s CPU",
                      file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, order))
    return results


def print_targets(tasks, results, prime_result) -> bool:
    def find(d, h, schedule="paper"):
        return [r for t, r in zip(tasks, results)
                if t["d"] == d and t["heads"] == h and t.get("schedule") == schedule and "label" not in t]

    def verdict(ok: bool) -> str:
        return "MET" if ok else "NOT MET"

    print("\ntargets (learner/oracle: CPU ratio measured within one run; paper schedule):")
    all_exact = all(r["exact"] for r in results)
    print(f"  every instance recovered exactly (== on canonical forms): {verdict(all_exact)}")
    counts_ok = all(r["queries"] == (r["formula"] if r["task"].get("schedule", "paper") == "paper"
                                     else r["lean_formula"]) for r in results if r["redraws"] == 0)
    print(f"  oracle-log count = formula (paper), lean count (lean), no redraw: {verdict(counts_ok)}")
    for (d, h), (bound, seconds) in TARGETS.items():
        rows = find(d, h)
        if not rows:
            print(f"  d = {d}, H = {h}: not run" + (" (use --large)" if (d, h) in LARGE_GRID else ""))
            continue
        ratios = sorted(ratio(r) for r in rows)
        value = statistics.median(ratios)
        if len(rows) > 1:
            what = f"median of {len(rows)} seeds {', '.join(f'{x:.2f}' for x in ratios)}"
        else:
            what = "1 seed"
        ok = value <= bound and all(r["exact"] for r in rows)
        line = f"  d = {d}, H = {h}: learner/oracle {value:.2f}, target <= {bound}\n    ({what})"
        if seconds is not None:
            total = rows[0]["cpu_seconds"]
            ok = ok and total <= seconds
            line += (f";\n    total {total:.1f} s CPU, target <= {seconds:.0f} s; "
                     f"peak {mb(rows[0]['peak_rss'])} MB")
        print(line + f" -> {verdict(ok)}")
    ok = prime_result["exact"] and prime_result["cpu_seconds"] < TARGET_PRIME_SECONDS
    print(f"  61-bit primes at d = 2, H = 2 exact in under {TARGET_PRIME_SECONDS:.0f} s: "
          f"{prime_result['cpu_seconds']:.3f} s CPU -> {verdict(ok)}")
    peak = max(results, key=lambda r: r["peak_rss"])
    print(f"  peak memory: {mb(peak['peak_rss'])} MB (d = {peak['task']['d']}, H = {peak['task']['heads']};\n"
          f"    {peak['peak_rss_scope']} peak RSS)")
    return all_exact


def growth_exponents(results) -> list[str]:
    """Least-squares fits ``log y = a log d + b log H + c`` over the paper rows (mpmath ``qr_solve``)."""
    import math

    import mpmath

    # one row per (d, H): the extra seeds of d = 8, H = 4 do not weigh more
    first: dict[tuple[int, int], dict] = {}
    for r in results:
        if r["task"].get("schedule", "paper") == "paper" and "label" not in r["task"] and r["redraws"] == 0:
            first.setdefault((r["task"]["d"], r["task"]["heads"]), r)
    rows, pairs = list(first.values()), set(first)
    if len({d for d, _ in pairs}) < 2 or len({h for _, h in pairs}) < 2 or len(pairs) < 4:
        return ["  (--fit needs two d, two H and four (d, H) pairs of the paper schedule)"]
    quantities = [("queries", lambda r: r["queries"]), ("oracle CPU", lambda r: r["oracle_cpu_seconds"]),
                  ("learner CPU", lambda r: r["cpu_seconds"] - r["oracle_cpu_seconds"])]
    A = mpmath.matrix([[math.log(r["task"]["d"]), math.log(r["task"]["heads"]), 1] for r in rows])
    out = [f"  growth exponents over {len(rows)} paper rows (y ~ d^a H^b):"]
    for name, value in quantities:
        b = mpmath.matrix([math.log(value(r)) for r in rows])
        x, residual = mpmath.qr_solve(A, b)
        out.append(f"    {name:12s} a = {float(x[0]):5.2f}, b = {float(x[1]):5.2f}  "
                   f"(residual {float(residual):.2f})")
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--one-task"]:
        return _child(argv[1])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", default=None,
                        help="comma list of d:H (default: d in 2,4,6,8 x H in 1,2,4, 16:8)")
    parser.add_argument("--large", action="store_true", help="add d=12,H=6 and d=32,H=16 (paper only)")
    parser.add_argument("--schedule", choices=("paper", "lean", "both"), default="both")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="rows run at the same time (default 1)")
    parser.add_argument("--scheduler", default=None, metavar="tcp://host:port", help="run on a Dask cluster")
    parser.add_argument("--fit", action="store_true",
                        help="print growth exponents in d and H of the paper rows")
    parser.add_argument("--json", type=Path, default=None, help="write every measured row as JSON")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")

    grid = parse_grid(args.grid) if args.grid else list(DEFAULT_GRID)
    if args.large:
        grid += [g for g in LARGE_GRID if g not in grid]
    schedules = ["paper", "lean"] if args.schedule == "both" else [args.schedule]
    tasks = build_tasks(grid, schedules, args.seed)

    print(f"exactlearn benchmark: python {platform.python_version()}, python-flint {flint.__version__}, "
          f"{platform.machine()}; workers={args.workers}"
          + (f", scheduler={args.scheduler}" if args.scheduler else ""))
    print("cpu_s: CPU s of the row (one core); oracle: CPU s inside the oracle;")
    print("learner = cpu_s - oracle; l/o = learner/oracle; MB = peak RSS of the row's own")
    print("process (interpreter and imports included)")
    if args.large:
        print("(d = 32, H = 16 takes minutes: progress every 10 CPU seconds below)", flush=True)
    start = time.perf_counter()
    results = run_tasks(tasks, args.workers, args.scheduler)
    elapsed = time.perf_counter() - start

    print()
    print(HEADER)
    prime_result = None
    for t, r in zip(tasks, results):
        if t.get("label") == "61-bit primes":
            prime_result = r
            continue
        print(row_line(r))
    print("\n61-bit primes (d = 2, H = 2; each entry has a 61-bit prime in its fraction):")
    print(HEADER)
    print(row_line(prime_result))
    print(f"\nbenchmark wall time {elapsed:.1f} s")
    all_exact = print_targets(tasks, results, prime_result)
    if args.fit:
        print("\n".join(growth_exponents(results)))

    if args.json is not None:
        args.json.write_text(json.dumps({"argv": sys.argv, "results": results}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0 if all_exact else 1


if __name__ == "__main__":
    sys.exit(main())
