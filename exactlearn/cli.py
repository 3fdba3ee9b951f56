"""Command line: ``exactlearn recover``, ``exactlearn random-model``, ``exactlearn certify``.

``exactlearn recover`` builds (or loads) a model, learns it through a logged
oracle, prints ground truth beside the recovered heads with the measured counts
against the paper's formulas, and exits 0 only for an exact recovery.
``exactlearn certify`` runs the schedule once with indeterminate weights (the
generic certificate, :mod:`exactlearn.symbolic`) and exits 0 only if it holds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import __version__
from .errors import ExactLearnError, InvalidModelError, RecoveryError
from .jsonio import writable_problem, write_text
from .learn import DEFAULT_TOKEN_BOUND, learn
from .limits import SLOW_SECONDS, add_limit_option, check_certify, check_learn, cli_remedy, limits_of
from .model import MultiHeadAttention
from .numberfield import NumberField
from .oracle import Oracle
from .report import render_recovery, verdict
from .schedule import Schedule
from .validate import integer_argument

__all__ = ["main", "build_parser", "check_writable"]

PROGRESS_THRESHOLD = 400  # planned queries above which recover shows its progress
PROGRESS_LINE_SECONDS = 5.0  # without a terminal: one progress line at most this often
DEFAULT_D, DEFAULT_HEADS, DEFAULT_HEIGHT = 3, 2, 30
RANDOM_MODEL_OPTIONS = ("d", "heads", "height", "field", "root")  # recover options of a random model


class UsageError(Exception):
    """A command-line mistake found after parsing: message on stderr, exit code 2."""


class QueryProgress:
    """``progress(done, total)`` for :func:`exactlearn.learn`: shown on ``console`` (stderr).

    In a terminal a transient bar; otherwise one line at most every
    :data:`PROGRESS_LINE_SECONDS` seconds, so short runs print nothing.
    """

    def __init__(self, console: Console, label: str):
        self.console, self.label = console, label
        self.start = self.last = time.perf_counter()
        self.bar: Progress | None = None
        if console.is_terminal:
            self.bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                console=console, transient=True)
            self.task = self.bar.add_task(label, total=None)

    def __enter__(self) -> QueryProgress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, done: int, total: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done, total=max(total, done))
            return
        now = time.perf_counter()
        if now - self.last >= PROGRESS_LINE_SECONDS:
            self.last = now
            elapsed = now - self.start
            self.console.print(f"{self.label}: {done} of {total} queries, {elapsed:.0f} s", markup=False)


_positive = integer_argument(1, "positive")
_non_negative = integer_argument(0, "non-negative")
_height = integer_argument(2, "height (>= 2)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="exactlearn",
        description="Learn multi-head softmax attention from black-box queries, exactly "
        "(Kim, Kim & Guo, arXiv 2608.03294).",
    )
    parser.add_argument("--version", action="version", version=f"exactlearn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_recover(sub)
    _add_random_model(sub)
    _add_certify(sub)
    # `exactlearn approx ...` is handed to exactlearn.demos.approx (its own options; listed here for --help)
    sub.add_parser("approx", add_help=False,
                   help="approximate oracles: parameter error vs output error, the constant C, torch "
                   "(see exactlearn approx --help)")
    from .transformer.cli import add_parser as add_transformer  # `exactlearn transformer`

    add_transformer(sub)
    return parser


def _add_recover(sub) -> None:
    rec = sub.add_parser(
        "recover",
        help="build or load a model, learn it through an oracle, report the exact comparison",
        description="Build (or load) a model, learn it from black-box queries, and report each ground-truth "
        "head above its recovered canonical head, the measured query count against 4Hd^2-2H+1, the maximum "
        "length against 2H+1, redraws, time and a verdict. Exit code 0 only for an exact recovery.",
    )
    rec.add_argument("--d", type=_positive, default=None,
                     help="token width d of the random model (default 3; not with --model)")
    rec.add_argument("--heads", type=_positive, default=None,
                     help="heads H of the random model (default 2; not with --model)")
    rec.add_argument("--heads-bound", type=_positive, default=None, metavar="H0",
                     help="learn with only an upper bound H0 on the heads (the learner is not told H)")
    rec.add_argument("--seed", type=int, default=0,
                     help="seed of the random model and of the learner (default 0)")
    rec.add_argument("--model", type=Path, default=None, metavar="FILE.json",
                     help="load the ground-truth model from JSON instead of drawing one")
    rec.add_argument("--json", type=Path, default=None, metavar="OUT.json",
                     help="write the full result as JSON")
    rec.add_argument("--schedule", choices=[s.value for s in Schedule], default="paper",
                     help="paper: 4Hd^2-2H+1 queries (default); lean: d(2H+1)+(d^2-1)(2H-1)")
    rec.add_argument("--verify", type=_non_negative, default=0, metavar="N",
                     help="compare the learned model with the oracle on N fresh random sequences")
    rec.add_argument("--token-bound", type=_positive, default=DEFAULT_TOKEN_BOUND, metavar="B",
                     help=f"query token entries are drawn from [-B, B] (default {DEFAULT_TOKEN_BOUND})")
    rec.add_argument("--height", type=_height, default=None,
                     help=f"height of the random model: its entries are p/q with |p|, q <= height "
                     f"(default {DEFAULT_HEIGHT}; not with --model)")
    _add_field_options(rec)
    rec.add_argument("--quiet", action="store_true", help="print only the verdict line")
    add_limit_option(rec)
    rec.set_defaults(func=cmd_recover)


def _add_field_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--field", default=None, metavar="POLY",
                        help="draw the random model over the number field Q(a) with this minimal polynomial, "
                        "e.g. 'a^2 - 2' (docs/number-fields.md)")
    parser.add_argument("--root", default=None, metavar="R",
                        help="with --field: the real root a stands for, an approximation (1.414) or an "
                        "isolating interval LO,HI (needed when the polynomial has several real roots)")


def _number_field(args: argparse.Namespace) -> NumberField | None:
    """The field of ``--field`` and ``--root`` (``None`` without ``--field``)."""
    if args.field is None:
        if args.root is not None:
            raise UsageError("--root chooses the real root of --field; give --field too")
        return None
    root = args.root
    if isinstance(root, str) and "," in root:
        root = tuple(part.strip() for part in root.split(","))
    return NumberField(args.field, root=root)


def _add_random_model(sub) -> None:
    rnd = sub.add_parser("random-model", help="write a random exp-parametrised model as JSON")
    rnd.add_argument("--d", type=_positive, default=3)
    rnd.add_argument("--heads", type=_positive, default=2)
    rnd.add_argument("--seed", type=int, default=0)
    rnd.add_argument("--height", type=_height, default=DEFAULT_HEIGHT,
                     help=f"entries are p/q with |p|, q <= height (default {DEFAULT_HEIGHT})")
    rnd.add_argument("-o", "--output", type=Path, default=None, help="file to write (default: stdout)")
    _add_field_options(rnd)
    add_limit_option(rnd)
    rnd.set_defaults(func=cmd_random_model)


def _add_certify(sub) -> None:
    cert = sub.add_parser(
        "certify",
        help="run the schedule with indeterminate weights: a certificate for all models off an "
             "exceptional set",
        description="Run the schedule once over Q(E, V), with exp(W_h) and v_h indeterminates, and print the "
        "generic certificate: recovered heads identical to the indeterminates, queries and maximum length "
        "from the symbolic oracle's log, and the exceptional set (the factored polynomials the run divided "
        "by or relied on being nonzero). Exit code 0 only if every check holds.",
    )
    cert.add_argument("--d", type=_positive, default=2, help="token width d (default 2)")
    cert.add_argument("--heads", type=_positive, default=2, help="number of heads H (default 2)")
    cert.add_argument("--seed", type=int, default=0,
                      help="seed of the learner's tokens, as in recover (default 0)")
    cert.add_argument("--token-bound", type=_positive, default=DEFAULT_TOKEN_BOUND, metavar="B",
                      help=f"query token entries are drawn from [-B, B] (default {DEFAULT_TOKEN_BOUND})")
    cert.add_argument("--schedule", choices=[s.value for s in Schedule], default="paper",
                      help="paper (default) or lean")
    cert.add_argument("--json", type=Path, default=None, metavar="OUT.json",
                      help="write the certificate, with every exceptional polynomial, as JSON")
    cert.add_argument("--list", action="store_true", help="print every exceptional polynomial")
    cert.add_argument("--no-spot-check", action="store_true",
                      help="skip the numeric learner at a random point off the exceptional set")
    add_limit_option(cert)
    cert.set_defaults(func=cmd_certify)


def _mark(ok: bool) -> str:
    return "[green]yes[/]" if ok else "[bold red]NO[/]"


def _degree_text(hist: list[tuple[int, int]]) -> str:
    """``degree: count`` pairs, or buckets when there are many distinct degrees (the JSON has them all)."""
    if len(hist) <= 10:
        return ", ".join(f"{k}: {v}" for k, v in hist)
    parts = []
    for lo, hi in [(1, 1), (2, 9), (10, 99), (100, None)]:
        n = sum(v for k, v in hist if k >= lo and (hi is None or k <= hi))
        if n:
            label = str(lo) if lo == hi else (f"{lo}-{hi}" if hi else f">={lo}")
            parts.append(f"{label}: {n}")
    return ", ".join(parts) + f"; max {hist[-1][0]}"


def _print_certificate(console: Console, cert, args: argparse.Namespace) -> None:
    """The certificate's checks, counts, chain and exceptional set (a successful symbolic run)."""
    d = args.d
    perm = ", ".join(f"{h}->{g}" for h, g in enumerate(cert.permutation or []))
    console.print(f"identity verified (recovered heads = indeterminate heads in Q(E, V)): "
                  f"{_mark(cert.identity)}"
                  + (f"  (recovered head -> indeterminate head: {perm})" if perm else ""))
    formula_text = "4Hd^2-2H+1" if args.schedule == "paper" else "d(2H+1)+(d^2-1)(2H-1)"
    console.print(f"queries (symbolic oracle log): {cert.queries}   {formula_text} = {cert.formula}   "
                  f"learner counted {cert.learner_queries}   {_mark(cert.counts_ok)}")
    console.print(f"max length (symbolic oracle log): {cert.max_length}   2H+1 = {cert.formula_max_length}   "
                  f"redraws: {cert.redraws}")
    shared = Counter(k.split()[-1].rstrip(")") for _, _, k in cert.configurations if k.startswith("matching"))
    link_text = ", ".join(f"shared {k}: {v}" for k, v in sorted(shared.items()))
    lean_text = ""
    if args.schedule == "lean":
        lean_text = (f"; {d * d - d} later configurations labelled by predicted residues, "
                     f"fallback: {'yes' if cert.fallback else 'no'}")
    if cert.links:
        links = (f"{cert.links} link{'s' if cert.links > 1 else ''} ({link_text}), each paired by a unique "
                 f"perfect matching on (pole product, residue combination)")
    else:
        links = "no link to pair"
    console.print(f"chain: {d * d} configuration{'s' if d > 1 else ''}, {links}{lean_text}; "
                  f"dropped configurations: {cert.dropped}")
    degrees = _degree_text(sorted(cert.degrees.items()))
    console.print(f"exceptional set: {len(cert.factors)} distinct irreducible polynomials from "
                  f"{cert.records} records ({cert.trivial} nonzero constants skipped); all nonzero: "
                  f"{_mark(cert.all_nonzero)}")
    console.print(f"  degrees (degree: count): {degrees}")
    console.print(f"  {len(cert.factors) - len(cert.effective)} of them have positive coefficients in the "
                  f"E's only, so vanish nowhere on E > 0; {len(cert.effective)} can vanish on the domain")
    kinds = ", ".join(f"{k}: {v}" for k, v in sorted(cert.kinds.items()))
    console.print(f"  recorded as (reason: polynomials): {kinds}")
    if args.list:
        for f in cert.factors:
            mark = " (positive on E > 0)" if f.positive_on_domain else ""
            console.print(f"  deg {f.degree}{mark}: {f.poly}   [{', '.join(sorted(f.kinds))}]", markup=False)
    if cert.spot_check is not None:
        sc = cert.spot_check
        console.print(f"spot check (numeric learner, same seed, at a random point off the exceptional set): "
                      f"exact {_mark(sc.exact)}, same chain of tokens {_mark(sc.same_tokens)}, "
                      f"redraws {sc.redraws}" + (f", error: {sc.error}" if sc.error else ""))


def cmd_certify(args: argparse.Namespace, console: Console) -> int:
    from .symbolic import certify

    d, H = args.d, args.heads
    limits = limits_of(args.limit)
    seconds, mb = check_certify(d, H, limits)
    check_learn(d, H, args.token_bound, args.schedule, limits, announce_slow=False)
    n_e, n_v = H * d * d, H * d
    check_writable(args.json)
    estimate = f"; estimated {seconds:.0f} s CPU, {mb} MB" if seconds > SLOW_SECONDS else ""
    console.print(f"[bold]exactlearn certify[/]: d = {d}, H = {H}, seed = {args.seed}, token bound = "
                  f"{args.token_bound}, {args.schedule} schedule over Q(E, V) ({n_e} E + {n_v} V "
                  f"indeterminates){estimate}")
    with QueryProgress(_stderr(console), "schedule over Q(E, V)") as progress:
        cert = certify(d, H, seed=args.seed, token_bound=args.token_bound, schedule=args.schedule,
                       check_point=not args.no_spot_check, progress=progress)
    if cert.error is not None:
        console.print(f"[bold red]the symbolic run failed:[/] {cert.error}")
    else:
        _print_certificate(console, cert, args)
    secs = cert.seconds
    console.print("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in secs.items()))
    if cert.passed:
        console.print("[bold green]CERTIFIED[/]: for every model with positive rational exp(W) and rational "
                      "v off "
                      f"the exceptional set, learn(..., d={d}, heads={H}, seed={args.seed}, "
                      f"token_bound={args.token_bound}"
                      + (f", schedule={args.schedule!r}" if args.schedule != "paper" else "")
                      + f") asks these {cert.queries} queries and returns the model's heads")
    else:
        console.print("[bold red]NOT CERTIFIED[/]")
    if args.json is not None:
        out = cert.to_dict() | {"command": sys.argv}
        _write(args.json, json.dumps(out, indent=2) + "\n")
        console.print(f"wrote {args.json}")
    return 0 if cert.passed else 1


def _stderr(console: Console) -> Console:
    """The console for errors and progress: stderr, with the same width as ``console``."""
    return Console(stderr=True, width=console.width if console.is_terminal else None)


def check_writable(path: Path | None) -> None:
    """Refuse, before any work is done, an output file that cannot be written (every subcommand)."""
    problem = None if path is None else writable_problem(path)
    if problem is not None:
        raise UsageError(f"cannot write {path}: {problem}")


def _write(path: Path, text: str) -> None:
    """Write an output file whole or not at all (:func:`exactlearn.jsonio.write_text`)."""
    try:
        write_text(path, text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def cmd_random_model(args: argparse.Namespace, console: Console) -> int:
    check_writable(args.output)
    model = MultiHeadAttention.random(args.d, args.heads, seed=args.seed, height=args.height,
                                      limits=limits_of(args.limit), field=_number_field(args))
    if args.output is None:
        print(model.to_json())
    else:
        _write(args.output, model.to_json() + "\n")
        console.print(f"wrote {args.output} (d = {model.d}, {model.num_heads} heads)")
    return 0


def _recover_truth(args: argparse.Namespace) -> tuple[MultiHeadAttention, str]:
    """The ground truth of ``recover`` (loaded or drawn) and the words that describe where it came from."""
    given = [f"--{name}" for name in RANDOM_MODEL_OPTIONS if getattr(args, name) is not None]
    if args.model is not None and given:
        raise UsageError(f"{' and '.join(given)} describe{'s' if len(given) == 1 else ''} a random model and "
                         f"conflict{'s' if len(given) == 1 else ''} with --model (the file sets the model); "
                         f"drop {'it' if len(given) == 1 else 'them'}")
    check_writable(args.json)
    limits = limits_of(args.limit)
    if args.model is not None:
        return MultiHeadAttention.load(args.model, limits=limits), str(args.model)
    args.d, args.heads = args.d or DEFAULT_D, args.heads or DEFAULT_HEADS
    args.height = args.height or DEFAULT_HEIGHT
    check_learn(args.d, args.heads_bound or args.heads, args.token_bound, args.schedule, limits,
                verify=args.verify, announce_slow=False)  # before drawing
    field = _number_field(args)
    truth = MultiHeadAttention.random(args.d, args.heads, seed=args.seed, height=args.height, limits=limits,
                                      field=field)
    if field is not None:
        return truth, (f"random over {field} (d = {args.d}, heads = {args.heads}, seed = {args.seed}; "
                       f"coordinates p/q with |p|, q <= height = {args.height})")
    return truth, (f"random (d = {args.d}, heads = {args.heads}, seed = {args.seed}; entries p/q with "
                   f"|p|, q <= height = {args.height})")


def _recover_run(args: argparse.Namespace, console: Console, oracle: Oracle, d: int, kwargs: dict,
                 planned: int):
    """Learn through ``oracle``: ``(recovery or None, RecoveryError or None, seconds)``."""
    recovery, error = None, None
    start = time.perf_counter()
    progress = None
    if not args.quiet and planned >= PROGRESS_THRESHOLD:
        progress = QueryProgress(_stderr(console), "querying")
    try:
        with progress or nullcontext():
            recovery = learn(oracle, d, seed=args.seed, schedule=args.schedule, verify=args.verify,
                             token_bound=args.token_bound, progress=progress, limits=limits_of(args.limit),
                             **kwargs)
    except RecoveryError as exc:
        error = exc
    return recovery, error, time.perf_counter() - start


def _recover_json(args: argparse.Namespace, console: Console, oracle: Oracle, truth: MultiHeadAttention,
                  recovery, error, elapsed: float) -> None:
    """Write ``--json``: verdict, command, time, the oracle's log, truth and recovery."""
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
    _write(args.json, json.dumps(out, indent=2) + "\n")
    if not args.quiet:
        console.print(f"wrote {args.json}")


def cmd_recover(args: argparse.Namespace, console: Console) -> int:
    truth, source = _recover_truth(args)
    d = truth.d
    H = truth.num_canonical_heads
    if H == 0 and args.heads_bound is None:
        raise InvalidModelError("the model's canonical form has no heads (it is the zero function); "
                                "learn it with --heads-bound")
    kwargs = {"heads_bound": args.heads_bound} if args.heads_bound is not None else {"heads": H}
    oracle = Oracle(truth, max_bits=limits_of(args.limit).oracle_bits)
    sched_H = args.heads_bound or H
    planned = Schedule(args.schedule).query_count(d, sched_H, affine=oracle.affine)
    if not args.quiet:
        told = f"H0 = {args.heads_bound} (bound)" if args.heads_bound else f"H = {H} (known)"
        kind = " of affine attention (the model has biases w_h, c0)" if oracle.affine else ""
        console.print(f"[bold]exactlearn recover[/]: model {source}; d = {d}; learner told {told}; "
                      f"{args.schedule} schedule{kind}, {planned} queries planned")
    recovery, error, elapsed = _recover_run(args, console, oracle, d, kwargs, planned)
    if args.quiet:
        ok, text = verdict(recovery, truth, error)
        console.print(text)
    else:
        ok = render_recovery(console, recovery, truth, oracle=oracle, error=error)
    if args.json is not None:
        _recover_json(args, console, oracle, truth, recovery, error, elapsed)
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["approx"]:
        from .demos.approx import main as approx_main

        return approx_main(argv[1:], prog="exactlearn approx")
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console()
    try:
        return args.func(args, console)
    except (ExactLearnError, UsageError) as exc:
        _stderr(console).print(f"[bold red]error:[/] {escape(cli_remedy(str(exc)))}")
        return 2
    except KeyboardInterrupt:
        _stderr(console).print("interrupted")
        return 130
    except OSError as exc:  # a write that fails after the checks (disk full, permissions)
        _stderr(console).print(f"[bold red]error:[/] cannot write {exc.filename!r}: {exc.strerror}")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
