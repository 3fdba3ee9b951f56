"""``python -m proofs_check --self-test``: plant known faults and see which claim catches each.

Every fault runs in its own subprocess (``python -m proofs_check.selftest
--fault KEY``): the fault is planted first (:mod:`proofs_check.faults`: a
wrapped learner, or a patched function of the library or of proofs_check), in
every process it belongs to: the subprocess itself (the judge) plants its part,
and the sandbox's learner and oracle processes plant theirs when they start
(the hook :func:`proofs_check.faults.install`, named in their spawn arguments).
Then the claims that could notice it run on the quick sizes. Each process
reports its probe; the effects are summed. A control subprocess plants nothing
and must pass every claim used. Each fault gets one verdict:

* ``caught``: the fault took effect (the probes saw each expected effect at
  least once, in whichever process), nothing raised an unexpected exception,
  and at least one claim failed by its own judgement;
* ``MISSED``: the fault took effect cleanly and every claim passed;
* ``NOT EXERCISED``: an expected effect never occurred (the patched code was
  never reached, or never changed anything), so the claims were not tested;
* ``BROKEN PLANT``: planting failed (e.g. the patched name no longer exists), a
  patched function or a learner raised an exception that is not a refusal of
  exactlearn (a ``TypeError`` from a wrong signature, ...), a hook failed in a
  sandbox process, a claim's check crashed or has no row, or the subprocess
  died. A claim that fails then has judged a crash.

The exit code is 0 only if the control passes and every fault is caught.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from .faults import FAULTS, Fault, Probe, find_fault, guard, merge
from .wire import Role

__all__ = ["CONTROL", "FAULTS", "Fault", "render", "run_self_test"]

CONTROL = Fault("none (control)", "nothing planted: every claim used must pass", None,
                tuple(sorted({c for f in FAULTS for c in f.claims}, key=int)))
VERDICTS = ("caught", "MISSED", "NOT EXERCISED", "BROKEN PLANT")


def _child(key: str, claims: list[str]) -> int:
    """In the subprocess: plant the fault (here and in the sandbox's processes), run ``claims``, print one
    JSON line."""
    from . import sandbox

    fault = CONTROL if key == CONTROL.key else find_fault(key)
    fault = dataclasses.replace(fault, claims=tuple(claims))
    probe = Probe()
    hooks = ([] if fault.plant is None else [("proofs_check.faults:install", (fault.key,))])
    hooks.append(("proofs_check.faults:guard", ()))
    try:
        if fault.plant is not None and Role.JUDGE in fault.where:
            fault.plant(probe, Role.JUDGE)
        guard(probe, Role.JUDGE)
        box = sandbox.use_hooks(hooks)
        box.start()  # the sandbox's processes plant their part now
    except Exception as exc:  # a plant that cannot be planted is broken, whatever the claims say
        print(json.dumps({"broken": f"planting raised {type(exc).__name__}: {exc}"}))
        return 0
    from .claims import MANIFEST, load_claims  # after planting, so claims bind the planted functions
    from .registry import Settings
    from .runner import run_claims

    # only the claims asked for are imported (each module's imports cost the subprocess time)
    asked = load_claims([m for m in MANIFEST if str(int(m[1:3])) in fault.claims])
    report = run_claims(Settings(mode="quick", seed=0), asked)
    rows = [{"number": r.number, "passed": r.passed, "crashed": r.error is not None,
             "why": (r.error or next(iter(r.outcome.details), ""))[:200]} for r in report.results]
    have = {r["number"] for r in rows}
    rows += [{"number": n, "passed": False, "crashed": True, "why": "the claim has no row"}
             for n in fault.claims if n not in have]
    box = sandbox.current()
    seen = merge([probe.snapshot(), *box.snapshots.values()])
    missing = [e for e in fault.expects if not seen["effects"].get(e)]
    print(json.dumps({"rows": rows, "effects": seen["effects"], "expected": list(fault.expects),
                      "missing": missing, "unexpected": seen["unexpected"][:5],
                      "hook errors": box.hook_errors[:3]}))
    return 0


def _verdict(fault: Fault, out: dict) -> tuple[str, list[str]]:
    """``(verdict, why)`` of one subprocess's output."""
    rows = out.get("rows", [])
    broken = [out["broken"]] if "broken" in out else []
    broken += out.get("hook errors", [])
    broken += [f"unexpected exception in {u}" for u in dict.fromkeys(out.get("unexpected", []))]
    broken += [f"claim {r['number']} crashed: {r['why']}" for r in rows if r["crashed"]]
    failed = [r for r in rows if not r["passed"]]
    if fault.plant is None:
        return ("PASS" if not broken and not failed else "FAIL"), broken + [r["why"] for r in failed][:1]
    if broken:
        return "BROKEN PLANT", broken[:2]
    if out.get("missing"):
        return "NOT EXERCISED", [f"never happened: {', '.join(out['missing'])}"]
    if not failed:
        return "MISSED", []
    return "caught", [failed[0]["why"]]


def _run_one(fault: Fault) -> dict:
    start = time.perf_counter()
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "proofs_check.selftest", "--fault", fault.key,
               "--claims", ",".join(fault.claims)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, check=False)
        out = json.loads(done.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        out = {"broken": "the subprocess ran out of time (900 s)"}
    except (IndexError, ValueError):  # the subprocess itself failed: nothing was caught
        out = {"broken": f"the subprocess failed: {done.stderr.strip()[-300:]}"}
    verdict, why = _verdict(fault, out)
    failed = [r["number"] for r in out.get("rows", []) if not r["passed"]]
    return {"fault": fault.key, "description": fault.description, "claims run": list(fault.claims),
            "caught by": failed if verdict in ("caught", "FAIL") else [], "verdict": verdict,
            "ok": verdict in ("caught", "PASS"), "effects": out.get("effects", {}), "why": why,
            "seconds": round(time.perf_counter() - start, 1)}


def run_self_test(faults: Sequence[Fault] = FAULTS, *, parallel: int = 2, control: bool = True,
                  on_done: Callable[[dict], None] | None = None) -> list[dict]:
    """The control (unless ``control=False``) and every fault, ``parallel`` subprocesses at a time
    (results in table order)."""
    todo = [CONTROL, *faults] if control else list(faults)

    def one(fault: Fault) -> dict:
        result = _run_one(fault)
        if on_done is not None:
            on_done(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        return list(pool.map(one, todo))


def _wrapped(console, text: str, indent: str = "", style: str | None = None) -> None:
    console.print(textwrap.fill(text, width=console.width, initial_indent=indent, subsequent_indent=indent),
                  style=style, highlight=False, soft_wrap=True)


def render(console, results: list[dict]) -> None:
    """The self-test table (fits 80 columns): fault, claims run, claims that failed, verdict; then each
    fault's description, what it did (its effects) and the first failure or problem."""
    from rich.table import Table

    table = Table(title="proofs_check --self-test: planted faults", show_lines=False)
    table.add_column("fault", no_wrap=True)
    table.add_column("claims run")
    table.add_column("caught by")
    table.add_column("", no_wrap=True)
    for r in results:
        style = "green" if r["ok"] else "bold red"
        table.add_row(r["fault"], ", ".join(r["claims run"]), ", ".join(r["caught by"]) or "-",
                      f"[{style}]{r['verdict']}[/]")
    console.print(table)
    for r in results:
        _wrapped(console, f"{r['fault']}: {r['description']}")
        if r["effects"]:
            done = ", ".join(f"{name} ({n}x)" for name, n in sorted(r["effects"].items()))
            _wrapped(console, f"took effect: {done}", "   ", "dim")
        for why in r["why"]:
            where = f"claim {r['caught by'][0]}" if r["caught by"] else "self-test"
            text = textwrap.shorten(f"{where}: {why}", width=160, placeholder=" ...")
            _wrapped(console, text, "   ", "dim")
    bad = [f"{r['fault']} ({r['verdict']})" for r in results if not r["ok"]]
    faults = sum(r["fault"] != CONTROL.key for r in results)
    if bad:
        _wrapped(console, f"[bold red]FAIL[/]: {', '.join(bad)}")
    else:
        console.print(f"[bold green]PASS[/]: the control passes and all {faults} faults are caught")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proofs_check.selftest")
    parser.add_argument("--fault", required=True)
    parser.add_argument("--claims", required=True, help="comma-separated claim numbers")
    args = parser.parse_args(argv)
    return _child(args.fault, args.claims.split(","))


if __name__ == "__main__":
    sys.exit(main())
