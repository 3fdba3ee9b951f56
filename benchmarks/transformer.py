"""Benchmark of the Transformer learner on random models (docs/transformer.md, section 7).

    PYTHONPATH=$PWD python benchmarks/transformer.py                 # d 2..4, H 1..3, m 1..6, 20 each
    PYTHONPATH=$PWD python benchmarks/transformer.py --per 5 --d 2 3 --json out.json

For every instance: a random Transformer (mixed signs of a), learned through an
opaque closure whose own log counts the calls; the learned model is compared
with the truth by canonical form and on fresh random sequences. Reports
success rates per (d, H), wrong models (must be 0), the distribution of the
maximum query length, queries per step against 2(4Hd^2-2H+1) for step 1 and
against (#lines x d) for the FFN steps, and CPU seconds per instance.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict

from exactlearn.errors import RecoveryError
from exactlearn.querylog import logged  # an opaque closure over the model, with its own log
from exactlearn.transformer import Transformer, learn_transformer, step1_formula


def run(d: int, H: int, m: int, seed: int, fresh: int = 30, residual: bool = False) -> dict:
    truth = Transformer.random(d, H, m, seed=seed, residual=residual)
    oracle, log = logged(truth)
    start = time.process_time()
    row = {"d": d, "H": H, "m": m, "seed": seed, "lines": len(truth.canonical().lines)}
    try:
        rec = learn_transformer(oracle, d, heads=H, seed=seed, residual=residual)
    except RecoveryError as exc:
        condition = getattr(getattr(exc, "condition", None), "name", type(exc).__name__)
        row.update(ok=False, error=f"{condition}: {exc}", seconds=time.process_time() - start,
                   calls=log["calls"], max_length=log["max_length"])
        return row
    row["seconds"] = time.process_time() - start
    rng = random.Random(f"bench:{d}:{H}:{m}:{seed}")
    fresh_queries = ([tuple(rng.randint(-3, 3) for _ in range(d)) for _ in range(rng.randint(1, 9))]
                     for _ in range(fresh))
    same = all(rec.model(X) == truth(X) for X in fresh_queries)
    row.update(ok=True, equal_canonical=rec.model == truth, same_on_fresh=same,
               wrong=not (same and rec.model == truth),
               calls=log["calls"], counted=rec.queries, max_length=log["max_length"],
               steps={k: v.queries for k, v in rec.steps.items()}, formula=step1_formula(d, H),
               learned_lines=rec.lines, redraws=rec.redraws)
    return row


def _q(values, f):
    values = sorted(values) or [0]
    return values[min(len(values) - 1, int(f * len(values)))]


def report(rows: list[dict]) -> None:
    """One line per (d, H): solved, wrong, queries (median / max), FFN queries per line and d, lengths,
    time."""
    by = defaultdict(list)
    for r in rows:
        by[(r["d"], r["H"])].append(r)
    print(f"{'d':>2}{'H':>2}{'solved':>10}{'wrong':>6}{'step1':>6}{'form':>5}{'FFN/Ld':>10}"
          f"{'calls':>9}{'len50':>6}{'95%':>6}{'max':>6}{'max s':>6}")
    for (d, H), rs in sorted(by.items()):
        ok = [r for r in rs if r["ok"]]
        wrong = sum(r.get("wrong", False) for r in ok)
        s1 = [r["steps"]["attention"] for r in ok]  # the residual pre-pass is counted in "calls" only
        ratio = [(r["steps"]["slice"] + r["steps"]["split"]) / max(1, r["learned_lines"] * d) for r in ok]
        lens = [r["max_length"] for r in ok]
        total = [r["calls"] for r in ok]
        print(f"{d:>2}{H:>2}{len(ok):>6}/{len(rs):<3}{wrong:>6}{_q(s1, .5):>6}"
              f"{2 * (4 * H * d * d - 2 * H + 1):>5}"
              f"{_q(ratio, .5):>5.1f}/{_q(ratio, 1):<4.0f}{_q(total, .5):>5}/{_q(total, 1):<4}"
              f"{_q(lens, .5):>7}{_q(lens, .95):>6}{_q(lens, 1):>6}{max(r['seconds'] for r in rs):>6.2f}")
    ok = [r for r in rows if r["ok"]]
    h2 = [r for r in rows if r["H"] <= 2]
    h3 = [r for r in rows if r["H"] == 3]
    print(f"solved: H <= 2: {sum(r['ok'] for r in h2)}/{len(h2)}, "
          f"H = 3: {sum(r['ok'] for r in h3)}/{len(h3)}; "
          f"wrong: {sum(r.get('wrong', False) for r in ok)}")
    lens = [r["max_length"] for r in ok if r["H"] > 1]
    if lens:
        print("longest query, H >= 2, quantiles 25/50/75/90/95/99/100%:\n  "
              + " ".join(str(_q(lens, f)) for f in (.25, .5, .75, .9, .95, .99, 1)))
    print("step1: median calls of step 1 (form = 2(4Hd^2-2H+1)); FFN/Ld: (slice + split\n"
          "calls) / (lines x d), median/max; calls: median/max; len: longest query")
    for r in [r for r in rows if not r["ok"]][:20]:
        print(f"  refused d={r['d']} H={r['H']} m={r['m']} seed={r['seed']}: {r['error'].split(':')[0]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d", type=int, nargs="+", default=[2, 3, 4])
    p.add_argument("--heads", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--width", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    p.add_argument("--per", type=int, default=20, help="models per (d, H, m) setting (default 20)")
    p.add_argument("--residual", action="store_true", help="models and learner with y = x_N + sum_h V_h o_h")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    rows = []
    for d in args.d:
        for H in args.heads:
            for m in args.width:
                for seed in range(args.per):
                    rows.append(run(d, H, m, seed, residual=args.residual))
            print(f"d={d} H={H} done", file=sys.stderr)
    report(rows)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 1 if any(r.get("wrong") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
