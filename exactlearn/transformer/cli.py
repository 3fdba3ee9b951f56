"""``exactlearn transformer``: learn a one-layer Transformer through an opaque oracle and report.

The oracle is a closure over the model with its own log (calls, longest query);
the report sets the learner's per-step counts beside that log and the formula
``2(4Hd^2-2H+1)`` for step 1, compares the learned model with the truth by
canonical form and on fresh random sequences, and prints a verdict. Exit code
0 only for a functionally equivalent model; 1 for a refusal (a named condition
or a failed verification: never a wrong model).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ..errors import InvalidArgumentError, InvalidModelError, RecoveryError
from ..jsonio import file_format, writable_problem, write_text
from ..limits import add_limit_option, cli_remedy, limits_of
from ..model import MODEL_FORMAT
from ..querylog import logged
from ..report import (
    QueryProgress,
    counts_table,
    facts,
    header,
    heads_block,
    mark,
    stderr_console,
    verdict_panel,
)
from ..validate import counted, integer_argument, seed_argument
from .errors import TransformerConditionError
from .learn import DEFAULT_MAX_LENGTH, Step, learn_transformer, step1_formula
from .model import Transformer

__all__ = ["FRESH", "add_parser", "run"]

FRESH = 50  # fresh random sequences on which the report compares learned model and truth


_positive = integer_argument(1, "positive")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``transformer`` subcommand to an argparse subparsers object."""
    p = subparsers.add_parser(
        "transformer",
        help="learn a one-layer Transformer (attention + ReLU FFN) exactly, report counts",
        description="Build (or load) a one-layer Transformer, learn it from black-box queries "
        "(odd part -> attention, uniform slice -> merged lines, copy-ratio families -> per-head "
        "split), and report queries per step, the longest query and a verdict. Exit code 0 only "
        "for a functionally equivalent model.",
    )
    p.add_argument("--d", type=_positive, default=3, help="token width d (default 3)")
    p.add_argument("--heads", type=_positive, default=2, help="attention heads H (default 2)")
    p.add_argument("--width", type=_positive, default=4, help="FFN width m (default 4)")
    p.add_argument("--seed", type=seed_argument, default=0,
                   help="seed of the model and the learner (default 0)")
    p.add_argument("--heads-bound", type=_positive, default=None, metavar="H0",
                   help="tell the learner only an upper bound H0 on the heads")
    p.add_argument("--model", type=Path, default=None, metavar="FILE.json", help="load the model from JSON")
    p.add_argument("--residual", action="store_true",
                   help="a residual connection y = x_N + sum_h V_h o_h (model and learner)")
    p.add_argument("--max-length", type=_positive, default=DEFAULT_MAX_LENGTH, metavar="N",
                   help=f"longest query the learner may ask (default {DEFAULT_MAX_LENGTH})")
    p.add_argument("--json", type=Path, default=None, metavar="OUT.json", help="write the result as JSON")
    add_limit_option(p)
    p.set_defaults(func=run)
    return p


def _load(path: Path, limits) -> Transformer:
    """``--model``: the Transformer in ``path``; an attention model's file is pointed to ``recover``."""
    try:
        return Transformer.load(path, limits=limits)
    except InvalidModelError:
        if file_format(path, limits) == MODEL_FORMAT:
            raise InvalidModelError(f"{path} holds a multi-head attention model ({MODEL_FORMAT}); learn it "
                                    f"with exactlearn recover --model {path}") from None
        raise


def run(args: argparse.Namespace, console: Console) -> int:
    problem = None if args.json is None else writable_problem(args.json)
    if problem is not None:  # before any work
        raise InvalidArgumentError(f"cannot write {args.json}: {problem}")
    limits = limits_of(args.limit)
    if args.model is not None:
        truth, source = _load(args.model, limits), str(args.model)
    else:
        truth = Transformer.random(args.d, args.heads, args.width, seed=args.seed, residual=args.residual,
                                   limits=limits)
        source = f"random, seed = {args.seed}" + (", with a residual connection" if args.residual else "")
    form = truth.canonical()
    d, H = truth.d, len(form.heads)
    if H == 0:
        raise InvalidModelError("the model's canonical form has no heads (it is the zero function)")
    told = {"heads_bound": args.heads_bound} if args.heads_bound else {"heads": H}
    told_text = f"H0 = {args.heads_bound} (bound)" if args.heads_bound else f"H = {H} (known)"
    console.print(header("transformer", [
        ("model", source),
        ("sizes", f"d = {d}, H = {counted(H, 'canonical head')}, "
                  f"{counted(len(form.lines), 'canonical line')}"),
        ("learner", f"told {told_text}; step 1: {step1_formula(d, args.heads_bound or H)} queries "
                    f"planned, 2(4Hd^2-2H+1)")]))
    oracle, log = logged(truth)
    rec, error = None, None
    with QueryProgress(stderr_console(console), "learning") as progress:
        def watched(tokens):
            answer = oracle(tokens)
            progress(log["calls"], None)
            return answer

        try:
            rec = learn_transformer(watched, d, seed=args.seed, max_length=args.max_length,
                                    residual=truth.residual, limits=limits, **told)
        except RecoveryError as exc:
            error = exc
    out: dict = {"command": sys.argv, "truth": truth.to_dict(),
                 "oracle_log": {"calls": log["calls"], "max_length": log["max_length"]}}
    if rec is None:
        kind = "condition" if isinstance(error, TransformerConditionError) else "refused"
        console.print(Group(
            facts([("oracle log", f"{log['calls']} calls, longest query {log['max_length']} tokens")]),
            verdict_panel(False, f"REFUSED ({kind}): {cli_remedy(str(error))}")))
        out.update(verdict="REFUSED", error=str(error))
        ok = False
    else:
        ok = _report(console, rec, truth, log, out)
    if args.json is not None:
        write_text(args.json, json.dumps(out, indent=2) + "\n")
        console.print(f"wrote {args.json}")
    return 0 if ok else 1


_STEPS = {Step.RESIDUAL: "0 residual (l_res)", Step.ATTENTION: "1 attention (odd part)",
          Step.SLICE: "2 uniform slice", Step.SPLIT: "3 per-head split", Step.VERIFY: "verification"}


def _steps_table(rec, formula: int) -> Table:
    """Queries and the longest query of each step, from the learner's counts."""
    table = Table(title="Steps (measured by the learner)", box=box.SIMPLE_HEAD, title_justify="left")
    table.add_column("step", no_wrap=True)
    for name in ("queries", "formula", "longest\nquery"):
        table.add_column(name, justify="right", overflow="fold")
    table.add_column("ok", justify="center")
    for key, name in _STEPS.items():
        s = rec.steps[key]
        if key == Step.RESIDUAL and not s.queries:
            continue
        attention = key == Step.ATTENTION
        good = (s.queries == formula) if attention and not rec.redraws else None
        table.add_row(name, str(s.queries), f"2(4Hd^2-2H+1) = {formula}" if attention else "-",
                      str(s.max_length), mark(good), end_section=key == Step.VERIFY)
    table.add_row("total", str(rec.queries), "", str(rec.max_length), "")
    return table


def _heads(form) -> list[tuple]:
    """The canonical heads as ``(exp(W_h), l_h)``: the attention and the FFN's linear block of each."""
    return [(exp_W, linear) for exp_W, linear in zip(form.heads, form.linear)]


def _report(console: Console, rec, truth: Transformer, log: dict, out: dict) -> bool:
    d = rec.d
    formula = step1_formula(d, rec.attention.schedule_heads)
    counted_ok = rec.queries == log["calls"] and rec.max_length == log["max_length"]
    rng = random.Random(f"exactlearn.transformer.cli:{d}")
    fresh = [[tuple(rng.randint(-3, 3) for _ in range(d)) for _ in range(rng.randint(1, 9))]
             for _ in range(FRESH)]
    agree = sum(rec.model(X) == truth(X) for X in fresh)
    same = rec.model == truth
    truth_form = truth.canonical()
    checks = counts_table([
        ("queries in the oracle's log", str(log["calls"]), str(rec.queries), log["calls"] == rec.queries),
        ("longest query in the log", str(log["max_length"]), str(rec.max_length),
         log["max_length"] == rec.max_length),
        ("canonical heads found", str(rec.heads), f"H = {len(truth_form.heads)}", None),
        ("canonical lines found", str(rec.lines), str(len(truth_form.lines)),
         rec.lines == len(truth_form.lines)),
        ("step 1 redraws", str(rec.redraws), "0 for generic draws", rec.redraws == 0 or None),
        ("tokens swept in step 3", str(rec.split_tokens), "", None),
        ("canonical forms equal", "yes" if same else "no", "yes", same),
        ("fresh sequences equal", f"{agree}/{FRESH}", f"{FRESH}/{FRESH}", agree == FRESH),
    ], title="Checks")
    ok = same and agree == FRESH and counted_ok
    console.print(Group(
        *heads_block(console, ("exp(W_h)", "l_h"), _heads(truth_form), _heads(rec.canonical), d),
        _steps_table(rec, formula), checks,
        Text(f"time: {rec.seconds:.3f} s CPU in the learner"),
        verdict_panel(ok, "EXACT: a functionally equivalent Transformer" if ok
                      else "WRONG: the learned model differs from the truth")))
    out.update(verdict="EXACT" if ok else "WRONG", recovery=rec.to_dict(), fresh_equal=agree)
    return ok
