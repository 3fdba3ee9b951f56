"""Command line: ``exactlearn recover``, ``exactlearn random-model``.

``exactlearn recover`` builds (or loads) a model, learns it through a logged
oracle, prints ground truth beside the recovered heads with the measured counts
against the paper's formulas, and exits 0 only for an exact recovery.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import __version__
from .errors import ExactLearnError, InvalidModelError, RecoveryError
from .learn import DEFAULT_TOKEN_BOUND, learn
from .model import MultiHeadAttention
from .oracle import Oracle
from .report import render_recovery, verdict
from .schedule import SCHEDULES, query_count

__all__ = ["main", "build_parser"]

PROGRESS_THRESHOLD = 400  # planned queries above which a progress bar is shown


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="exactlearn",
        description="Learn multi-head softmax attention from black-box queries, exactly "
        "(Kim, Kim & Guo, arXiv 2608.03294).",
    )
    parser.add_argument("--version", action="version", version=f"exactlearn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    rec = sub.add_parser(
        "recover",
        help="build or load a model, learn it through an oracle, report the exact comparison",
        description="Build (or load) a model, learn it from black-box queries, and report ground truth "
        "beside the recovered canonical heads, the measured query count against 4Hd^2-2H+1, the maximum "
        "length against 2H+1, redraws, time and a verdict. Exit code 0 only for an exact recovery.",
    )
    rec.add_argument("--d", type=_positive, default=3, help="token width d of the random model (default 3)")
    rec.add_argument("--heads", type=_positive, default=2, help="heads H of the random model (default 2)")
    rec.add_argument("--heads-bound", type=_positive, default=None, metavar="H0",
                     help="learn with only an upper bound H0 on the heads (the learner is not told H)")
    rec.add_argument("--seed", type=int, default=0, help="seed of the random model and of the learner (default 0)")
    rec.add_argument("--model", type=Path, default=None, metavar="FILE.json",
                     help="load the ground-truth model from JSON instead of drawing one")
    rec.add_argument("--json", type=Path, default=None, metavar="OUT.json", help="write the full result as JSON")
    rec.add_argument("--schedule", choices=SCHEDULES, default="paper",
                     help="paper: 4Hd^2-2H+1 queries (default); lean: d(2H+1)+(d^2-1)(2H-1)")
    rec.add_argument("--verify", type=_non_negative, default=0, metavar="N",
                     help="compare the learned model with the oracle on N fresh random sequences")
    rec.add_argument("--token-bound", type=_positive, default=DEFAULT_TOKEN_BOUND, metavar="B",
                     help=f"query token entries are drawn from [-B, B] (default {DEFAULT_TOKEN_BOUND})")
    rec.add_argument("--height", type=_positive, default=30,
                     help="random model entries are p/q with |p|, q <= height (default 30)")
    rec.add_argument("--quiet", action="store_true", help="print only the verdict line")
    rec.set_defaults(func=cmd_recover)

    rnd = sub.add_parser("random-model", help="write a random exp-parametrised model as JSON")
    rnd.add_argument("--d", type=_positive, default=3)
    rnd.add_argument("--heads", type=_positive, default=2)
    rnd.add_argument("--seed", type=int, default=0)
    rnd.add_argument("--height", type=_positive, default=30)
    rnd.add_argument("-o", "--output", type=Path, default=None, help="file to write (default: stdout)")
    rnd.set_defaults(func=cmd_random_model)

    # `exactlearn approx ...` is handed to exactlearn.approx (its own options; listed here for --help)
    sub.add_parser("approx", help="approximate oracles: parameter error vs output error, the constant C, torch "
                   "(see exactlearn approx --help)", add_help=False)
    return parser


def cmd_random_model(args: argparse.Namespace, console: Console) -> int:
    model = MultiHeadAttention.random(args.d, args.heads, seed=args.seed, height=max(args.height, 2))
    if args.output is None:
        print(model.to_json())
    else:
        model.save(args.output)
        console.print(f"wrote {args.output} (d = {model.d}, {model.num_heads} heads)")
    return 0


def cmd_recover(args: argparse.Namespace, console: Console) -> int:
    if args.model is not None:
        truth = MultiHeadAttention.load(args.model)
        source = str(args.model)
    else:
        truth = MultiHeadAttention.random(args.d, args.heads, seed=args.seed, height=max(args.height, 2))
        source = f"random (d = {args.d}, heads = {args.heads}, seed = {args.seed}, height = {args.height})"
    d = truth.d
    H = truth.num_canonical_heads
    if H == 0 and args.heads_bound is None:
        raise InvalidModelError("the model's canonical form has no heads (it is the zero function); "
                                "learn it with --heads-bound")
    kwargs = {"heads_bound": args.heads_bound} if args.heads_bound is not None else {"heads": H}
    oracle = Oracle(truth)
    sched_H = args.heads_bound or H
    planned = query_count(d, sched_H, args.schedule)
    if not args.quiet:
        given = f"H0 = {args.heads_bound} (bound)" if args.heads_bound else f"H = {H} (known)"
        console.print(f"[bold]exactlearn recover[/]: model {source}; d = {d}; learner told {given}; "
                      f"{args.schedule} schedule, {planned} queries planned")
    recovery, error = None, None
    start = time.perf_counter()
    show_bar = not args.quiet and planned >= PROGRESS_THRESHOLD and console.is_terminal
    try:
        if show_bar:
            with Progress(TextColumn("querying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=console, transient=True) as bar:
                task = bar.add_task("queries", total=planned)
                recovery = learn(oracle, d, seed=args.seed, schedule=args.schedule, verify=args.verify,
                                 token_bound=args.token_bound,
                                 progress=lambda done, total: bar.update(task, completed=done, total=max(total, done)),
                                 **kwargs)
        else:
            recovery = learn(oracle, d, seed=args.seed, schedule=args.schedule, verify=args.verify,
                             token_bound=args.token_bound, **kwargs)
    except RecoveryError as exc:
        error = exc
    elapsed = time.perf_counter() - start
    if args.quiet:
        ok, text = verdict(recovery, truth, error)
        console.print(text)
    else:
        ok = render_recovery(console, recovery, truth, oracle=oracle, error=error)
    if args.json is not None:
        ok_v, text = verdict(recovery, truth, error)
        out = {
            "verdict": text,
            "exact": ok_v,
            "command": sys.argv,
            "seconds": elapsed,
            "oracle_log": {"queries": oracle.queries, "max_length": oracle.max_length,
                           "lengths": {str(k): v for k, v in sorted(oracle.lengths.items())}},
            "truth": truth.to_dict(),
            "recovery": recovery.to_dict() if recovery is not None else None,
        }
        args.json.write_text(json.dumps(out, indent=2) + "\n")
        if not args.quiet:
            console.print(f"wrote {args.json}")
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["approx"]:
        from .approx.__main__ import main as approx_main

        return approx_main(argv[1:], prog="exactlearn approx")
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console()
    try:
        return args.func(args, console)
    except ExactLearnError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
