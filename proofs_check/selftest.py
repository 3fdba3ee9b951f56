"""``python -m proofs_check --self-test``: plant known faults and see which claim catches each.

Every fault runs in its own subprocess (``python -m proofs_check.selftest
--fault KEY``): the fault is planted first (a wrapped learner, or a patched
function of the library or of proofs_check), then the claims that could notice
it run on the quick sizes. A fault counts as caught if at least one of them
fails. A control subprocess plants nothing and must pass every claim used. The
exit code is 0 only if the control passes and every fault is caught.

The patched library functions are named in :data:`FAULTS` (``plant_*``
functions below); they are the places to retarget when exactlearn's internals move.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

__all__ = ["FAULTS", "Fault", "render", "run_self_test"]


def _learn_module():
    import exactlearn  # noqa: F401  (loads exactlearn.learn)

    return sys.modules["exactlearn.learn"]  # the module (the package attribute is the function)


def _wrap_learn(wrapper: Callable) -> None:
    from . import library

    real = library.learn
    library.learn = lambda oracle, d, **kwargs: wrapper(real, oracle, d, **kwargs)


def _corrupted(rec):
    first = rec.heads[0]
    wrong = dataclasses.replace(first, v=(first.v[0] + 1,) + tuple(first.v[1:]))
    return dataclasses.replace(rec, heads=(wrong,) + tuple(rec.heads[1:]))


def plant_oracle_peek() -> None:
    """A learner that is right only when it can read the model through its oracle."""
    from exactlearn import MultiHeadAttention

    def peek(real, oracle, d, **kwargs):
        rec = real(oracle, d, **kwargs)
        seen = getattr(oracle, "target", None) or getattr(oracle, "model", None)
        return rec if isinstance(seen, MultiHeadAttention) else _corrupted(rec)

    _wrap_learn(peek)


def plant_extra_sample() -> None:
    """One more sample in every matching configuration, with the library's formulas changed to match."""
    from exactlearn import schedule

    learn_module = _learn_module()
    cls = learn_module.ScheduleRun
    real = cls._query

    def query(self, cfg, where):
        real(self, cfg, where)
        if cfg.at_zero is not None:  # a matching configuration (R(0), R(oo) known): one more sample, k = 2H
            self.ask(schedule.copies_query(cfg.x, cfg.z, 2 * self.H))

    cls._query = query
    def count(d, H, *_):
        return 4 * H * d * d - 2 * H + 1 + (d * d - 1)

    schedule.paper_query_count = count
    learn_module.query_count = count


def plant_swapped_evaluator() -> None:
    """Claim 9's independent evaluator replaced by the library's own evaluation."""
    import sympy as sp

    from exactlearn import MultiHeadAttention

    from . import independent

    def library_evaluation(model, tokens):
        value = MultiHeadAttention.from_dict(model)(tokens)
        return sp.Rational(int(value.p), int(value.q))

    independent.evaluate = library_evaluation


def plant_empty_exceptional_set() -> None:
    """The certificate records no exceptional polynomial (its all-nonzero check holds vacuously)."""
    from exactlearn.symbolic import certificate

    certificate.exceptional_factors = lambda ledger, n_e=0: ([], True)


def plant_spec_matching_tokens() -> None:
    """The learner's matching configuration is the superseded specification's (x + x', z + z')."""
    _learn_module().linked_tokens = lambda kind, p, c: (tuple(a + b for a, b in zip(p[0], c[0])),
                                                        tuple(a + b for a, b in zip(p[1], c[1])))


def plant_library_verdicts() -> None:
    """C understated 100 times, and the library's own sweep verdicts made to pass."""
    from exactlearn import approx
    from exactlearn.approx import evidence

    real = approx.sensitivity

    def understated(*args, **kwargs):
        sens = real(*args, **kwargs)
        return dataclasses.replace(sens, C_upper=sens.C_upper / 100)

    approx.sensitivity = evidence.sensitivity = understated
    evidence.Sweep.failures = lambda self: []
    evidence.SweepRow.bound_holds = property(lambda self: True)
    evidence.Refusal.holds = property(lambda self: True)
    evidence.SLACK = evidence.LINEAR_TOLERANCE = 10**6


def plant_no_uniqueness_check() -> None:
    """The exact path's pairing-uniqueness check removed: the first perfect matching is taken."""
    learn_module = _learn_module()
    real = learn_module._perfect_matchings
    learn_module._perfect_matchings = lambda *args, limit=2: real(*args, limit=1)


def plant_uncounted_query() -> None:
    """A miscounting learner: it asks one query (a one-token query) that its count leaves out."""

    def extra(real, oracle, d, **kwargs):
        oracle([(1,) + (0,) * (d - 1)])
        return real(oracle, d, **kwargs)

    _wrap_learn(extra)


def plant_miscounting_oracle() -> None:
    """The claims' oracle answers every query but leaves the first one out of its log."""
    from . import oracles

    real = oracles.opaque_oracle

    def miscounting(evaluate):
        oracle, log = real(evaluate)
        state = {"first": True}

        def ask(tokens):
            answer = oracle(tokens)
            if state.pop("first", False):
                log.queries.pop()
            return answer

        return ask, log

    oracles.opaque_oracle = miscounting


def plant_skipped_redraw() -> None:
    """The learner redraws its first degenerate configuration without counting or reporting it."""
    cls = _learn_module().ScheduleRun
    real = cls.redraw

    def redraw(self, j, reason):
        real(self, j, reason)
        if not getattr(self, "_skipped", False):
            self._skipped = True
            self.redraws -= 1
            self.redraw_reasons.pop()

    cls.redraw = redraw


def plant_long_query() -> None:
    """A learner that also asks one query of length 2H + 2 (and does not count it)."""

    def longer(real, oracle, d, **kwargs):
        H = kwargs.get("heads") or kwargs.get("heads_bound")
        oracle([(1,) + (0,) * (d - 1)] * (2 * H + 2))
        return real(oracle, d, **kwargs)

    _wrap_learn(longer)


def plant_lenient_bound() -> None:
    """Told a bound H0, the learner retries with H0 + 1, H0 + 2 until it gets a model."""
    from exactlearn.errors import RecoveryError

    def lenient(real, oracle, d, **kwargs):
        for extra in range(4):
            options = dict(kwargs)
            key = "heads" if "heads" in options else "heads_bound"
            options[key] = options[key] + extra
            try:
                return real(oracle, d, **options)
            except RecoveryError:
                continue
        return real(oracle, d, **kwargs)

    _wrap_learn(lenient)


@dataclass(frozen=True)
class Fault:
    key: str
    description: str
    plant: Callable[[], None] | None
    claims: tuple[str, ...]  # the claims run with this fault planted


FAULTS = [
    Fault("oracle-peek", "learner right only if it can read the model via its oracle", plant_oracle_peek,
          ("1", "5", "9")),
    Fault("extra-sample", "one more sample per matching configuration, library formulas changed to match",
          plant_extra_sample, ("2", "3", "4", "7", "40")),
    Fault("swapped-evaluator", "claim 9's evaluator replaced by the library's evaluation",
          plant_swapped_evaluator, ("9",)),
    Fault("empty-exceptional-set", "the certificate's exceptional set is empty", plant_empty_exceptional_set,
          ("40",)),
    Fault("spec-matching-tokens", "matching configuration (x + x', z + z') in the learner",
          plant_spec_matching_tokens, ("1", "7")),
    Fault("library-verdicts", "C understated 100x, library sweep verdicts and tolerances made to pass",
          plant_library_verdicts, ("20",)),
    Fault("no-uniqueness-check", "exact path takes the first pairing, never checks uniqueness",
          plant_no_uniqueness_check, ("8",)),
    Fault("uncounted-query", "miscounting: the learner asks a query it does not count",
          plant_uncounted_query, ("2", "7")),
    Fault("miscounting-oracle", "the claims' oracle log misses one answered query", plant_miscounting_oracle,
          ("2", "3", "7")),
    Fault("skipped-redraw", "a redraw made but not counted or reported", plant_skipped_redraw, ("2", "8")),
    Fault("long-query", "one extra query of length 2H + 2", plant_long_query, ("3",)),
    Fault("lenient-bound", "told H0 < H, the learner retries with larger H0", plant_lenient_bound, ("6",)),
]
CONTROL = Fault("none (control)", "nothing planted: every claim used must pass", None,
                tuple(sorted({c for f in FAULTS for c in f.claims}, key=int)))


def _child(key: str, claims: list[str]) -> int:
    """In the subprocess: plant the fault, run ``claims``, print one JSON line."""
    fault = CONTROL if key == CONTROL.key else next(f for f in FAULTS if f.key == key)
    fault = dataclasses.replace(fault, claims=tuple(claims))
    if fault.plant is not None:
        fault.plant()
    from .claims import (
        all_claims,  # after planting, so claims bind the planted functions
    )
    from .cli import select_claims
    from .registry import Settings
    from .runner import run_claims

    report = run_claims(Settings(mode="quick", seed=0), select_claims(all_claims(), list(fault.claims)))
    rows = [{"number": r.number, "passed": r.passed,
             "why": (r.error or next(iter(r.outcome.details), ""))[:200]} for r in report.results]
    print(json.dumps(rows))
    return 0


def _run_one(fault: Fault) -> dict:
    start = time.perf_counter()
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "proofs_check.selftest", "--fault", fault.key,
               "--claims", ",".join(fault.claims)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, check=False)
    try:
        rows = json.loads(done.stdout.strip().splitlines()[-1])
        crashed = None
    except (IndexError, ValueError):  # the subprocess itself failed: nothing was caught
        rows, crashed = [], f"the subprocess failed: {done.stderr.strip()[-300:]}"
    failed = [r["number"] for r in rows if not r["passed"]]
    ok = crashed is None and (not failed if fault.plant is None else bool(failed))
    return {"fault": fault.key, "description": fault.description, "claims run": list(fault.claims),
            "caught by": failed, "ok": ok,
            "why": [crashed] if crashed else [r["why"] for r in rows if not r["passed"]][:1],
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


def render(console, results: list[dict]) -> None:
    """The self-test table (fits 80 columns): fault, claims run, claims that failed, verdict."""
    from rich.table import Table

    table = Table(title="proofs_check --self-test: planted faults", show_lines=False)
    table.add_column("fault", no_wrap=True)
    table.add_column("claims run")
    table.add_column("caught by")
    table.add_column("", no_wrap=True)
    for r in results:
        control = r["fault"] == CONTROL.key
        verdict = ("PASS" if r["ok"] else "FAIL") if control else ("caught" if r["ok"] else "MISSED")
        style = "green" if r["ok"] else "bold red"
        table.add_row(r["fault"], ", ".join(r["claims run"]), ", ".join(r["caught by"]) or "-",
                      f"[{style}]{verdict}[/]")
    console.print(table)
    import textwrap

    for r in results:
        line = textwrap.fill(f"{r['fault']}: {r['description']}", width=console.width)
        console.print(line, highlight=False, soft_wrap=True)
        for why in r["why"]:
            where = f"claim {r['caught by'][0]}" if r["caught by"] else "self-test"
            text = textwrap.shorten(f"{where}: {why}", width=160, placeholder=" ...")
            console.print(textwrap.fill(text, width=console.width, initial_indent="   ",
                                        subsequent_indent="   "),
                          style="dim", highlight=False, soft_wrap=True)
    missed = [r["fault"] for r in results if not r["ok"]]
    faults = sum(r["fault"] != CONTROL.key for r in results)
    if missed:
        console.print(f"[bold red]FAIL[/]: {', '.join(missed)}")
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
