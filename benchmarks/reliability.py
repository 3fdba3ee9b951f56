"""The reliability run: every probe of tests/reliability_probe.py, many trials, one table.

    python benchmarks/reliability.py                 # 200 trials per probe, 20 s per trial
    python benchmarks/reliability.py --trials 1000 --limit 30 --json out.json

Each trial runs in a child process (a signal kills only the child and is
counted as a crash; a trial over the time limit is a hang). The table gives,
per probe: trials, exact, refused (an ExactLearnError), consistent (a model
for a non-attention that agrees with every answer it gave, refused by a fresh
run with verify=N), wrong (a returned model that is not the truth or
contradicts an answer, or a wrong error type/count), crashes, hangs and CPU
seconds. The families of issue 25 (tests/reliability_inputs.py: model files,
arguments, sizes, sweeps, saving, the command line) and the answer families
(answers converted inside the guard, an oracle that changes its query, answer
sizes) are part of the suite. docs/reliability.md records a run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from reliability_probe import OUTCOMES, SUITE, run_probe, tally

UNGUARDED = ("lie_lean",)
#: Column headers (6 wide, so that the table fits 80 columns).
HEADERS = {"exact": "exact", "refused": "refusd", "consistent": "consis", "wrong": "wrong", "crash": "crash",
           "hang": "hang"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="trials per probe (default 200)")
    parser.add_argument("--limit", type=int, default=20, help="seconds per trial before it counts as a hang")
    parser.add_argument("--probes", nargs="*", default=list(SUITE), choices=SUITE,
                        help="probes to run (default: all of them)")
    parser.add_argument("--json", type=Path, default=None, help="write every trial's outcome as JSON")
    args = parser.parse_args(argv)
    print(f"{'probe':25} {'trials':>5}" + " ".join(f"{HEADERS[k]:>6}" for k in OUTCOMES) + f" {'cpu_s':>6}")
    everything, totals = [], {k: 0 for k in OUTCOMES}
    start = time.perf_counter()
    for probe in args.probes:
        results = run_probe(probe, args.trials, limit=args.limit)
        counts = tally(results)
        cpu = sum(r["cpu"] or 0 for r in results)
        print(f"{probe:25} {len(results):5} " + " ".join(f"{counts[k]:6}" for k in OUTCOMES) + f" {cpu:6.1f}",
              flush=True)
        for r in results:
            if r["outcome"] in ("wrong", "crash", "hang"):
                print(f"    trial {r['trial']}: {r['outcome']}: {r['detail']}")
        for k in OUTCOMES:
            totals[k] += counts[k]
        everything += results
    print(f"{'total':25} {len(everything):5} " + " ".join(f"{totals[k]:6}" for k in OUTCOMES))
    print("refusd: an ExactLearnError. consis: a model for a non-attention that agrees with\n"
          "every answer it gave (undetectable from them), refused by a fresh verify=N")
    print(f"wall time {time.perf_counter() - start:.1f} s")
    if args.json is not None:
        args.json.write_text(json.dumps({"command": sys.argv, "trials": everything}, indent=1) + "\n")
    # wrong models are expected only from lies against the lean schedule without verify (no redundancy,
    # docs/reliability.md); non-attention functions that equal an attention on every query asked are
    # their own column (consistent), never exact
    strict_wrong = sum(1 for r in everything if r["outcome"] == "wrong" and r["probe"] not in UNGUARDED)
    signals = sum(1 for r in everything if r["outcome"] == "crash" and str(r["detail"]).startswith("signal"))
    nonsense = sum(1 for r in everything if r["outcome"] == "wrong" and "accepted" in str(r["detail"]))
    print(f"wrong outside {', '.join(UNGUARDED)}: {strict_wrong} (accepted nonsense: {nonsense}); "
          f"signals: {signals}; raw tracebacks: {totals['crash'] - signals}; hangs: {totals['hang']}")
    return 0 if strict_wrong == 0 and totals["crash"] == 0 and totals["hang"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
