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

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from . import __version__
from .errors import ExactLearnError, InvalidModelError, RecoveryError
from .jsonio import file_format, writable_problem, write_text
from .learn import DEFAULT_TOKEN_BOUND, learn
from .limits import SLOW_SECONDS, add_limit_option, check_certify, check_learn, cli_remedy, limits_of
from .model import MultiHeadAttention
from .numberfield import NumberField
from .oracle import Oracle
from .report import (
    QueryProgress,
    counts_table,
    facts,
    header,
    mark,
    render_recovery,
    stderr_console,
    verdict,
    verdict_panel,
)
from .schedule import Schedule
from .validate import ArgumentParser, counted, integer_argument, seed_argument

__all__ = ["ArgumentParser", "main", "build_parser", "check_writable", "integer_argument", "writable_problem"]

PROGRESS_THRESHOLD = 400  # planned queries above which recover shows its progress
PROGRESS_LINE_SECONDS = 5.0  # without a terminal: one progress line at most this often
DEFAULT_D, DEFAULT_HEADS, DEFAULT_HEIGHT = 3, 2, 30
RANDOM_MODEL_OPTIONS = ("d", "heads", "height", "field", "root")  # recover options of a random model


class UsageError(Exception):
    """A command-line mistake found after parsing: message on stderr, exit code 2."""


_positive = integer_argument(1, "positive")
_non_negative = integer_argument(0, "non-negative")
_height = integer_argument(2, "height (>= 2)")


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
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
    rec.add_argument("--seed", type=seed_argument, default=0,
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
    rnd = sub.add_parser(
        "random-model", help="write a random exp-parametrised model as JSON",
        description="Draw a random model (exp(W_h) positive rationals, v_h rationals, or elements of a "
        "number field with --field) and write it as JSON, the file that recover --model reads.")
    rnd.add_argument("--d", type=_positive, default=DEFAULT_D, help=f"token width d (default {DEFAULT_D})")
    rnd.add_argument("--heads", type=_positive, default=DEFAULT_HEADS,
                     help=f"number of heads H (default {DEFAULT_HEADS})")
    rnd.add_argument("--seed", type=seed_argument, default=0, help="seed of the random model (default 0)")
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
    cert.add_argument("--seed", type=seed_argument, default=0,
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


def _certificate_counts(cert, args: argparse.Namespace) -> Table:
    """The certificate's checks and counts, measured from the symbolic oracle's log."""
    formula_text = "4Hd^2-2H+1" if args.schedule == "paper" else "d(2H+1)+(d^2-1)(2H-1)"
    perm = ", ".join(f"{h}->{g}" for h, g in enumerate(cert.permutation or []))
    return counts_table([
        ("heads = indeterminates", "yes" if cert.identity else "no",
         f"recovered -> E, V: {perm}" if perm else "identical in Q(E, V)", cert.identity),
        ("queries (oracle log)", str(cert.queries), f"{formula_text} = {cert.formula}", cert.counts_ok),
        ("queries (learner)", str(cert.learner_queries), str(cert.queries), cert.counts_ok),
        ("longest query (tokens)", str(cert.max_length), f"2H+1 = {cert.formula_max_length}",
         cert.max_length == cert.formula_max_length if not cert.redraws else None),
        ("redraws", str(cert.redraws), "0", cert.redraws == 0),
    ], title="Certificate (counts from the symbolic oracle's log)")


def _certificate_chain(cert, args: argparse.Namespace) -> RenderableType:
    """The chain of configurations and how each link was paired."""
    d = args.d
    shared = Counter(k.split()[-1].rstrip(")") for _, _, k in cert.configurations if k.startswith("matching"))
    rows = [("configurations", f"{d * d}, dropped: {cert.dropped}")]
    if cert.links:
        link_text = ", ".join(f"shared {k}: {v}" for k, v in sorted(shared.items()))
        rows.append(("links", f"{cert.links} ({link_text}), each paired by a unique perfect matching on "
                              f"(pole product, residue combination)"))
    else:
        rows.append(("links", "none to pair"))
    if args.schedule == "lean":
        rows.append(("lean", f"{d * d - d} later configurations labelled by predicted residues; fallback: "
                             f"{'yes' if cert.fallback else 'no'}"))
    return facts(rows, title="Chain")


def _certificate_exceptions(cert, args: argparse.Namespace) -> RenderableType:
    """The exceptional set: the factored polynomials the run divided by or relied on being nonzero."""
    kinds = ", ".join(f"{k}: {v}" for k, v in sorted(cert.kinds.items()))
    positive = len(cert.factors) - len(cert.effective)
    rows: list[tuple[str, str | Text]] = [
        ("polynomials", f"{len(cert.factors)} distinct irreducible, from {cert.records} records "
                        f"({cert.trivial} nonzero constants skipped)"),
        ("all nonzero", Text.from_markup(mark(cert.all_nonzero))),
        ("degrees", _degree_text(sorted(cert.degrees.items())) + " (degree: count)"),
        ("on E > 0", f"{positive} have positive coefficients in the E's only, so vanish nowhere; "
                     f"{len(cert.effective)} can vanish"),
        ("reasons", kinds),
    ]
    if args.list:
        rows += [(f"deg {f.degree}", f"{f.poly}" + (" (positive on E > 0)" if f.positive_on_domain else "")
                  + f"   [{', '.join(sorted(f.kinds))}]") for f in cert.factors]
    return facts(rows, title="Exceptional set")


def _certificate_spot_check(sc) -> RenderableType:
    rows: list[tuple[str, str | Text]] = [("exact", Text.from_markup(mark(sc.exact))),
                                         ("same chain of tokens", Text.from_markup(mark(sc.same_tokens))),
                                         ("redraws", str(sc.redraws))]
    return facts(rows + ([("error", str(sc.error))] if sc.error else []),
                 title="Spot check (numeric learner, same seed, a random point off the set)")


def _certificate_verdict(cert, args: argparse.Namespace) -> Panel:
    if not cert.passed:
        return verdict_panel(False, "NOT CERTIFIED")
    schedule = f", schedule={args.schedule!r}" if args.schedule != "paper" else ""
    return verdict_panel(True, f"CERTIFIED: for every model with positive rational exp(W) and rational v off "
                         f"the exceptional set, learn(..., d={args.d}, heads={args.heads}, seed={args.seed}, "
                         f"token_bound={args.token_bound}{schedule}) asks these {cert.queries} queries and "
                         f"returns the model's heads")


def cmd_certify(args: argparse.Namespace, console: Console) -> int:
    from .symbolic import certify

    d, H = args.d, args.heads
    limits = limits_of(args.limit)
    seconds, mb = check_certify(d, H, limits)
    check_learn(d, H, args.token_bound, args.schedule, limits, announce_slow=False)
    n_e, n_v = H * d * d, H * d
    check_writable(args.json)
    estimate = [("estimate", f"{seconds:.0f} s CPU, {mb} MB")] if seconds > SLOW_SECONDS else []
    console.print(header("certify", [
        ("sizes", f"d = {d}, H = {H}: {n_e} E + {n_v} V indeterminates over Q(E, V)"),
        ("learner", f"seed = {args.seed}, token bound = {args.token_bound}, {args.schedule} schedule"),
        *estimate]))
    watch = QueryProgress(stderr_console(console), "schedule over Q(E, V)", every=PROGRESS_LINE_SECONDS)
    with watch as progress:
        cert = certify(d, H, seed=args.seed, token_bound=args.token_bound, schedule=args.schedule,
                       check_point=not args.no_spot_check, progress=progress)
    parts: list = []
    if cert.error is not None:
        parts.append(Text(f"the symbolic run failed: {cli_remedy(str(cert.error))}", style="bold red"))
    else:
        parts += [_certificate_counts(cert, args), _certificate_chain(cert, args),
                  _certificate_exceptions(cert, args)]
        if cert.spot_check is not None:
            parts.append(_certificate_spot_check(cert.spot_check))
    parts.append(Text("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in cert.seconds.items())))
    parts.append(_certificate_verdict(cert, args))
    console.print(Group(*parts))
    if args.json is not None:
        out = cert.to_dict() | {"command": sys.argv}
        _write(args.json, json.dumps(out, indent=2) + "\n")
        console.print(f"wrote {args.json}")
    return 0 if cert.passed else 1


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
        console.print(f"wrote {args.output} (d = {model.d}, {counted(model.num_heads, 'head')})")
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
        return _load_attention(args.model, limits), str(args.model)
    args.d, args.heads = args.d or DEFAULT_D, args.heads or DEFAULT_HEADS
    args.height = args.height or DEFAULT_HEIGHT
    check_learn(args.d, args.heads_bound or args.heads, args.token_bound, args.schedule, limits,
                verify=args.verify, announce_slow=False)  # before drawing
    field = _number_field(args)
    truth = MultiHeadAttention.random(args.d, args.heads, seed=args.seed, height=args.height, limits=limits,
                                      field=field)
    kind = f"random over {field}" if field is not None else "random"
    entries = "coordinates" if field is not None else "entries"
    return truth, (f"{kind}, seed = {args.seed}; {entries} p/q with |p|, q <= height = {args.height}")


def _load_attention(path: Path, limits) -> MultiHeadAttention:
    """``recover --model``: the model in ``path``; a Transformer's file is pointed to its command."""
    from .transformer.model import TRANSFORMER_FORMAT

    try:
        return MultiHeadAttention.load(path, limits=limits)
    except InvalidModelError:
        if file_format(path, limits) == TRANSFORMER_FORMAT:
            raise UsageError(f"{path} holds a one-layer Transformer ({TRANSFORMER_FORMAT}); learn it with "
                             f"exactlearn transformer --model {path}") from None
        raise


def _recover_run(args: argparse.Namespace, console: Console, oracle: Oracle, d: int, kwargs: dict,
                 planned: int):
    """Learn through ``oracle``: ``(recovery or None, RecoveryError or None, seconds)``."""
    recovery, error = None, None
    start = time.perf_counter()
    progress = None
    if not args.quiet and planned >= PROGRESS_THRESHOLD:
        progress = QueryProgress(stderr_console(console), "querying", every=PROGRESS_LINE_SECONDS)
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
        affine = [("attention", "affine attention: the model has biases w_h, c0")] if oracle.affine else []
        console.print(header("recover", [
            ("model", source), ("sizes", f"d = {d}, H = {counted(H, 'canonical head')}"), *affine,
            ("learner", f"told {told}; {args.schedule} schedule, {planned} queries planned")]))
    recovery, error, elapsed = _recover_run(args, console, oracle, d, kwargs, planned)
    if args.quiet:
        ok, text = verdict(recovery, truth, error)
        console.print(cli_remedy(text), markup=False)
    else:
        ok = render_recovery(console, recovery, truth, oracle=oracle, error=error, remedy=cli_remedy)
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
        stderr_console(console).print(f"[bold red]error:[/] {escape(cli_remedy(str(exc)))}")
        return 2
    except KeyboardInterrupt:
        stderr_console(console).print("interrupted")
        return 130
    except OSError as exc:  # a write that fails after the checks (disk full, permissions)
        stderr_console(console).print(f"[bold red]error:[/] cannot write {exc.filename!r}: {exc.strerror}")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
