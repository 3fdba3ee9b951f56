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

from rich.console import Console

from ..errors import InvalidArgumentError, InvalidModelError, RecoveryError
from ..jsonio import writable_problem, write_text
from ..limits import add_limit_option, limits_of
from ..querylog import logged
from ..validate import integer_argument
from .errors import TransformerConditionError
from .learn import DEFAULT_MAX_LENGTH, learn_transformer, step1_formula
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
    p.add_argument("--seed", type=int, default=0, help="seed of the model and the learner (default 0)")
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


def run(args: argparse.Namespace, console: Console) -> int:
    problem = None if args.json is None else writable_problem(args.json)
    if problem is not None:  # before any work
        raise InvalidArgumentError(f"cannot write {args.json}: {problem}")
    limits = limits_of(args.limit)
    if args.model is not None:
        truth = Transformer.load(args.model, limits=limits)
        source = str(args.model)
    else:
        truth = Transformer.random(args.d, args.heads, args.width, seed=args.seed, residual=args.residual,
                                   limits=limits)
        source = (f"random (d={args.d}, H={args.heads}, m={args.width}, seed={args.seed}"
                  + (", residual)" if args.residual else ")"))
    form = truth.canonical()
    d, H = truth.d, len(form.heads)
    if H == 0:
        raise InvalidModelError("the model's canonical form has no heads (it is the zero function)")
    told = {"heads_bound": args.heads_bound} if args.heads_bound else {"heads": H}
    console.print(f"[bold]exactlearn transformer[/]: model {source}")
    console.print(f"truth: d = {d}, {H} canonical heads, {len(form.lines)} lines; learner told "
                  + (f"H0 = {args.heads_bound}" if args.heads_bound else f"H = {H}"))
    oracle, log = logged(truth)
    rec, error = None, None
    try:
        rec = learn_transformer(oracle, d, seed=args.seed, max_length=args.max_length,
                                residual=truth.residual, limits=limits, **told)
    except RecoveryError as exc:
        error = exc
    out: dict = {"command": sys.argv, "truth": truth.to_dict(),
                 "oracle_log": {"calls": log["calls"], "max_length": log["max_length"]}}
    if rec is None:
        console.print(f"oracle log: {log['calls']} calls, longest query {log['max_length']} tokens")
        kind = "condition" if isinstance(error, TransformerConditionError) else "refused"
        console.print(f"[bold red]REFUSED[/] ({kind}): {error}")
        out.update(verdict="REFUSED", error=str(error))
        ok = False
    else:
        ok = _report(console, rec, truth, log, out)
    if args.json is not None:
        write_text(args.json, json.dumps(out, indent=2) + "\n")
        console.print(f"wrote {args.json}")
    return 0 if ok else 1


def _report(console: Console, rec, truth: Transformer, log: dict, out: dict) -> bool:
    d = rec.d
    formula = step1_formula(d, rec.attention.schedule_heads)
    console.print(f"{'step':<22}{'queries':>9}{'formula':>9}{'max length':>12}")
    names = {"residual": "0 residual (l_res)", "attention": "1 attention (odd part)",
             "slice": "2 uniform slice", "split": "3 per-head split",
             "verify": "  verification"}
    for key, name in names.items():
        s = rec.steps[key]
        if key == "residual" and not s.queries:
            continue
        f = str(formula) if key == "attention" else "-"
        console.print(f"{name:<22}{s.queries:>9}{f:>9}{s.max_length:>12}")
    console.print(f"{'total':<22}{rec.queries:>9}{'':>9}{rec.max_length:>12}")
    counted = rec.queries == log["calls"] and rec.max_length == log["max_length"]
    console.print(f"oracle log: {log['calls']} calls, longest {log['max_length']} tokens; "
                  f"learner's counts agree: {'yes' if counted else 'NO'}")
    console.print(f"step 1 redraws: {rec.redraws}; lines learned: {rec.lines}; "
                  f"tokens swept in step 3: {rec.split_tokens}")
    rng = random.Random(f"exactlearn.transformer.cli:{d}")
    fresh = [[tuple(rng.randint(-3, 3) for _ in range(d)) for _ in range(rng.randint(1, 9))]
             for _ in range(FRESH)]
    agree = sum(rec.model(X) == truth(X) for X in fresh)
    same = rec.model == truth
    console.print(f"canonical forms equal: {'yes' if same else 'NO'}; "
                  f"fresh sequences equal: {agree}/{FRESH}")
    ok = same and agree == FRESH and counted
    console.print("[bold green]EXACT[/]: functionally equivalent Transformer" if ok
                  else "[bold red]WRONG[/]: the learned model differs from the truth")
    out.update(verdict="EXACT" if ok else "WRONG", recovery=rec.to_dict(), fresh_equal=agree)
    return ok
