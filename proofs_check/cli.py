"""``python -m proofs_check``: run the claims and print one table.

Exit code 0 only if every claim passes; 1 if any claim fails; 2 for a usage or
environment error (bad arguments, an unwritable output file, an unreachable
Dask scheduler). ``--self-test`` plants known faults instead
(:mod:`proofs_check.selftest`): exit code 0 only if every fault takes effect and is caught.
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from exactlearn.cli import ArgumentParser, integer_argument, writable_problem

from .claims import all_claims
from .registry import Claim, Settings
from .runner import claim_number, exit_code, render_table, run_claims

__all__ = ["build_parser", "main", "select_claims"]


_positive = integer_argument(1, "positive")
_non_negative = integer_argument(0, "non-negative")


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="python -m proofs_check",
        description="Check the claims of 'Provably Learning Multi-Head Attention with Queries' "
        "(Kim, Kim & Guo, arXiv 2608.03294) with exact arithmetic: a table of the claims with PASS/FAIL, "
        "then what each claim checked and measured. Exit code 0 only if every claim passes.",
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="mode", action="store_const", const="quick",
                      help="small grids, about a minute (the default)")
    size.add_argument("--full", dest="mode", action="store_const", const="full",
                      help="larger grids and more instances (d up to 6, H up to 4)")
    parser.set_defaults(mode="quick")
    parser.add_argument("--seed", type=_non_negative, default=0, metavar="S",
                        help="seed of every random model and draw (default 0); the same seed gives the same "
                             "figures")
    parser.add_argument("--workers", type=_positive, default=1, metavar="N",
                        help="run instances on a local pool of N processes (default 1: in this process)")
    parser.add_argument("--scheduler", default=None, metavar="ADDR",
                        help="run instances on a Dask cluster, e.g. tcp://host:8786 "
                             "(needs exactlearn[dask]); "
                             "overrides --workers")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE",
                        help="write the full report as JSON")
    parser.add_argument("--markdown", type=Path, default=None, metavar="FILE",
                        help="write the full report as Markdown")
    parser.add_argument("--claim", action="append", default=None, metavar="KEY",
                        help="run only this claim (its number or key, e.g. 2 or query-count); repeatable")
    parser.add_argument("--list", action="store_true", help="list the claims and exit")
    parser.add_argument("--self-test", action="store_true",
                        help="plant known faults (wrong learners, patched library functions), one "
                             "subprocess each, "
                             "and report which claim catches each; exit 1 if one is missed")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print every claim's statement, source, figures, details and notes")
    return parser


def select_claims(claims: Sequence[Claim], wanted: Sequence[str] | None) -> list[Claim]:
    """The claims named by number (``2`` or ``02``) or key, in table order; ValueError names unknown ones."""
    if not wanted:
        return list(claims)
    names = {c.key: c for c in claims} | {claim_number(c): c for c in claims}
    chosen, unknown = set(), []
    for w in wanted:
        claim = names.get(w) or names.get(w.lstrip("0"))
        if claim is None:
            unknown.append(w)
        else:
            chosen.add(claim.key)
    if unknown:
        known = ", ".join(f"{claim_number(c)} ({c.key})" for c in claims)
        raise ValueError(f"unknown claim {', '.join(map(repr, unknown))}; choose from {known}")
    return [c for c in claims if c.key in chosen]


def _check_output(parser: argparse.ArgumentParser, path: Path | None, option: str) -> None:
    """Refuse, before any claim runs, an output file that cannot be written (a probe file is created)."""
    problem = None if path is None else writable_problem(path)
    if problem is not None:
        parser.error(f"{option}: cannot write {path}: {problem}")


def _connect(parser: argparse.ArgumentParser, address: str):
    if importlib.util.find_spec("distributed") is None:
        parser.error("--scheduler needs dask.distributed, which is not installed: pip install "
                     "\"exactlearn[dask]\"")
    from distributed import Client

    try:
        return Client(address, timeout="10s")
    except (OSError, TimeoutError, ValueError) as exc:
        parser.error(f"--scheduler {address}: cannot connect to a Dask scheduler there ({exc})")


def _list(console: Console, claims: Sequence[Claim]) -> None:
    import textwrap

    for c in claims:
        console.print(f"{claim_number(c):>3}  {c.key}: {c.title}", highlight=False, soft_wrap=True)
        console.print(textwrap.fill(f"source: {c.source}", width=console.width, initial_indent="     ",
                                    subsequent_indent="     "), highlight=False, soft_wrap=True, style="dim")
    console.print(textwrap.fill("Statements and checks: docs/claims.md; running proofs_check and reading its "
                                "report: docs/reproduce.md", width=console.width),
                  highlight=False, soft_wrap=True)


def _self_test(console: Console, workers: int) -> int:
    from .selftest import render, run_self_test

    status = Console(stderr=True)
    results = run_self_test(parallel=max(2, workers), on_done=lambda r: status.print(
        f"  {r['fault']}: {r['verdict']} ({r['seconds']} s)", highlight=False))
    render(console, results)
    return 0 if all(r["ok"] for r in results) else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    console = Console()  # a pipe or a log file: COLUMNS, else 80 columns
    claims = all_claims()
    if args.list:
        _list(console, claims)
        return 0
    if args.self_test:
        return _self_test(console, args.workers)
    try:
        claims = select_claims(claims, args.claim)
    except ValueError as exc:
        parser.error(str(exc))
    _check_output(parser, args.json, "--json")
    _check_output(parser, args.markdown, "--markdown")
    client = _connect(parser, args.scheduler) if args.scheduler is not None else None
    settings = Settings(mode=args.mode, seed=args.seed, workers=args.workers, scheduler=client)
    status = Console(stderr=True)

    def done(i: int, result) -> None:
        style = "green" if result.passed else "red"
        status.print(f"[{i + 1}/{len(claims)}] {result.claim.title}: [{style}]{result.status}[/] "
                     f"({result.seconds:.1f} s)", highlight=False)

    try:
        report = run_claims(settings, claims, command=shlex.join(["python", "-m", "proofs_check", *argv]),
                            on_done=done, progress=lambda line: status.print(line, highlight=False))
    finally:
        if client is not None:
            client.close()
    render_table(console, report, verbose=args.verbose)
    for path, text in ((args.json, report.to_json), (args.markdown, report.to_markdown)):
        if path is None:
            continue
        try:
            path.write_text(text())
        except OSError as exc:
            console.print(f"[bold red]error:[/] cannot write {path}: {exc.strerror}")
            return 2
        status.print(f"wrote {path}")
    return exit_code(report)
