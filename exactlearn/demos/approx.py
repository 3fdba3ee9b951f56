"""``exactlearn approx`` (also ``python -m exactlearn approx``): the approximate-oracle figures.

Prints, for the evidence models (:func:`exactlearn.demos.evidence.evidence_models`):
the sensitivity constant ``C`` with its conditions, and for every noise level
``eps`` the measured parameter error, ``error / eps`` against ``C``, the
agreement with the first-order prediction, and the query counts from the
oracle's own log; then a refusal under large noise; with ``--torch`` a torch
attention layer learned from float64 answers. Exit code 0 iff every check holds.
Floats appear only in printing (mpmath numbers shown with a few digits).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import mpmath
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..approx.core.balls import to_mpf
from ..jsonio import writable_problem, write_text
from ..report import header, stderr_console, verdict_panel
from ..validate import ArgumentParser
from .evidence import (
    EPS_FULL,
    EPS_QUICK,
    GUIDED_EPS,
    LINEAR_TOLERANCE,
    NEAR_TIE_SEED,
    SLACK,
    evidence_models,
    guided_constants,
    refusal_demo,
    sweep,
)

__all__ = ["main", "build_parser"]

#: The held-out models (gaussian_model seeds) of the "choosing configurations" table: every seed is
#: three learning runs of several seconds each, so the default shows the first two, --full all four.
GUIDED_SEEDS_QUICK = (0, 1)
GUIDED_SEEDS_FULL = (0, 1, 2, 3)


def _n(x, digits: int = 4) -> str:
    return "-" if x is None else mpmath.nstr(x, digits)


def build_parser(prog: str = "exactlearn approx") -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=prog,
        description="Approximate oracles: parameter error against output error eps, the sensitivity "
        "constant C, a refusal under large noise, and (with --torch) a torch attention layer learned from "
        "float64 answers.",
    )
    parser.add_argument("--full", action="store_true",
                        help="more models, eps = 1e-8, 1e-10, ..., 1e-40 and four held-out models "
                        "(default: two models, every 4 decades, two held-out models)")
    parser.add_argument("--torch", action="store_true",
                        help="also learn torch.nn.MultiheadAttention layers (needs torch)")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT.json",
                        help="write the figures as JSON")
    return parser


def _note(console: Console, text: str) -> None:
    """A paragraph under a table, indented by two columns, its wrapped lines too (rich markup)."""
    console.print(Padding(Text.from_markup(text), (0, 0, 0, 2)))


def _table(title: str, columns: Sequence[str]) -> Table:
    """A compact table whose number columns fold rather than truncate (they fit 80 columns)."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in columns:
        table.add_column(col, justify="right", overflow="fold")
    return table


def _sweep_tables(sw) -> list[Table]:
    """Two tables of one sweep, one row per noise level: the errors, then the first-order check."""
    errors = _table(f"{sw.name}: parameter error under noise eps",
                    ("eps", "queries", "redraws", "same\nqueries", "error", "error/eps", "error/\n(C eps)"))
    first = _table("  first order: C, prediction, remainder, error radii",
                   ("eps", "C", "1st-order\nprediction", "2nd-order\npart", "radius/eps"))
    for r in sw.rows:
        eps = to_mpf(r.eps)
        if not r.recovered:
            errors.add_row(_n(eps, 2), str(r.oracle_queries), "-", "-", "[red]refused[/]", "-", "-")
            first.add_row(_n(eps, 2), "-", "-", "-", "-")
            continue
        errors.add_row(_n(eps, 2), str(r.oracle_queries), str(r.redraws), "yes" if r.same_queries else "no",
                       _n(r.error, 3), _n(r.ratio, 6), _n(r.ratio / r.C, 3))
        first.add_row(_n(eps, 2), _n(r.C, 5), _n(r.predicted, 6), _n(r.deviation, 2), _n(r.radius_ratio, 3))
    return [errors, first]


def _torch_layers(learn_layer, progress: Console, what: str, queries: str):
    """``(heads, seed, result)`` for the four torch layers (H = 2, 4; seeds 0, 1), a progress line each."""
    for heads in (2, 4):
        for seed in (0, 1):
            t = time.perf_counter()
            result = learn_layer(heads, seed)
            progress.print(f"torch layer H = {heads}, seed = {seed}, {what}: {getattr(result, queries)} "
                           f"queries in {time.perf_counter() - t:.1f} s", markup=False)
            yield heads, seed, result


def _torch_guided(console: Console, progress: Console, figures: dict) -> None:
    """The torch layers as black boxes: a pilot, then configurations chosen by it (no parameter used)."""
    from ..targets.torch_demo import torch_guided

    table = _table("  the same layers as black boxes: a pilot, then configurations it chose "
                   "(guide=pilot, scale 2; formula 4Hd^2 - 2H + 1)",
                   ("H", "seed", "pilot\nqueries", "guided\nqueries", "total", "C",
                    "rel. error\n(per param.)", "entries\n> 1e-6", "max |err|\n/ C e64"))
    figures["torch_guided"] = []
    for heads, seed, g in _torch_layers(torch_guided, progress, "guided by a pilot", "total_queries"):
        table.add_row(str(heads), str(seed), str(g.pilot_queries), str(g.final_queries),
                      str(g.total_queries), _n(g.C, 3), _n(g.rel_param, 3),
                      f"{g.entries_above} of {g.entries}", _n(g.max_abs / (g.C * g.float_error), 3))
        figures["torch_guided"].append({
            "heads": heads, "seed": seed, "pilot_queries": g.pilot_queries,
            "final_queries": g.final_queries,
            "total_queries": g.total_queries, "formula": g.formula, "redraws": g.redraws, "C": str(g.C),
            "max_abs": str(g.max_abs), "rel_param": str(g.rel_param), "rel_entry": str(g.rel_entry),
            "entries_above_1e-6": g.entries_above, "float_error": str(g.float_error)})
    console.print(table)
    _note(console, "e64 = the largest float64 error of the guided run's answers (against 256 bits): "
                   "C e64 is the first-order limit of float64 answers.")


def _torch_default(console: Console, progress: Console, figures: dict) -> None:
    """The layers learned with default settings, learn_approx(oracle, 4, heads=H) (a sketch for H = 4)."""
    from ..targets.torch_demo import torch_default

    table = _table("  default settings: learn_approx(oracle, 4, heads=H); for H = 4 a sketch "
                   "chooses the configurations (target: at most 1.5x the formula)",
                   ("H", "seed", "sketch\n+ run", "total", "C", "C e64", "rel.err\n/param",
                    "rel.err\n/entry", ">1e-6"))
    figures["torch_default"] = []
    layers = [(2, 0), (2, 1), (4, 0), (4, 1), (4, 2)]
    for heads, seed in layers:
        t = time.perf_counter()
        g = torch_default(heads, seed)
        progress.print(f"torch layer H = {heads}, seed = {seed}, default settings: {g.total_queries} "
                       f"queries in {time.perf_counter() - t:.1f} s", markup=False)
        table.add_row(str(heads), str(seed), f"{g.pilot_queries}+{g.final_queries}",
                      str(g.total_queries), _n(g.C, 2), _n(g.C * g.float_error, 2), _n(g.rel_param, 2),
                      _n(g.rel_entry, 2), f"{g.entries_above}/{g.entries}")
        figures["torch_default"].append({
            "heads": heads, "seed": seed, "sketch_queries": g.pilot_queries, "total_queries": g.total_queries,
            "formula": g.formula, "redraws": g.redraws, "C": str(g.C), "max_abs": str(g.max_abs),
            "rel_param": str(g.rel_param), "rel_entry": str(g.rel_entry),
            "entries_above_1e-6": g.entries_above, "float_error": str(g.float_error)})
    console.print(table)
    _note(console, "formula 4Hd^2 - 2H + 1 = 125 (H = 2), 249 (H = 4); queries are the oracle's own "
                   "log; max |err| and the formula are in the JSON.")
    _note(console, _default_target(figures["torch_default"]))


def _default_target(rows: list[dict]) -> str:
    """The verdict on the default-settings target, from the measured rows: at most 1.5x the formula
    and a relative error per parameter of at most 1e-6 (the seeds measured here only)."""
    met = [r for r in rows
           if 2 * r["total_queries"] <= 3 * r["formula"] and mpmath.mpf(r["rel_param"]) <= mpmath.mpf("1e-6")]
    return f"target <= 1.5x formula, rel.err/param <= 1e-6: met on {len(met)} of {len(rows)} layers above"


def _print_sweeps(full: bool, eps_values, console: Console, figures: dict, progress: Console) -> bool:
    """Per evidence model: the sweep tables, the sensitivity summary and the linear-scaling verdict."""
    ok = True
    for name, model in evidence_models(full).items():
        t = time.perf_counter()
        sw = sweep(model, eps_values, name=name)
        progress.print(f"{name}: {len(eps_values)} noise levels learned in {time.perf_counter() - t:.1f} s",
                       markup=False)
        for table in _sweep_tables(sw):
            console.print(table)
        for line in sw.reference.summary().split("\n"):
            _note(console, escape(line))
        failures = sw.failures()
        verdict = "[green]PASS[/]" if not failures else "[red]FAIL[/]"
        _note(console, f"linear scaling: slope of log error vs log eps = {_n(sw.slope, 8)}, "
                       f"spread of error/eps = {_n(sw.ratio_spread, 3)} "
                       f"(tolerance {LINEAR_TOLERANCE})  {verdict}")
        for f in failures:
            _note(console, f"[red]{escape(f)}[/]")
        console.print()
        ok &= not failures
        figures["models"][name] = {
            "C": str(sw.reference.C_upper), "noise_threshold": str(sw.reference.noise_threshold),
            "slope": str(sw.slope), "spread": str(sw.ratio_spread), "failures": failures,
            "rows": [{"eps": str(r.eps), "recovered": r.recovered, "error": str(r.error),
                      "ratio": str(r.ratio), "C": str(r.C), "queries": r.oracle_queries, "redraws": r.redraws,
                      "same_queries": r.same_queries} for r in sw.rows],
        }
    return ok


def _print_refusal(console: Console, figures: dict, progress: Console) -> bool:
    """The refusal demo: AmbiguousAnswersError above the pairing threshold, a recovery below it."""
    # refusal: two heads with the same v, told apart by pole products only, under noise above the
    # pairing threshold
    t = time.perf_counter()
    demo = refusal_demo()
    progress.print(f"refusal demo: {time.perf_counter() - t:.1f} s", markup=False)
    large, small = demo.eps
    console.print("[bold]Refusal[/]: two heads with the same v and W 1/16 apart (near_tie_model, "
                  f"learner seed {NEAR_TIE_SEED}); noise threshold {_n(demo.threshold, 3)}, "
                  f"set by {demo.binding}.")
    if demo.first is not None:
        _note(console, f"eps = {large}, max_redraws = 0: AmbiguousAnswersError at the first problem: "
                       f"{escape('; '.join(demo.first.reasons))}")
    if demo.refused is not None:
        _note(console, f"eps = {large}, default budget: AmbiguousAnswersError after "
                       f"{len(demo.refused.reasons)} redraws, "
                       f"{demo.refused.ambiguous_matchings} of them for an ambiguous pairing. Message: "
                       f"{escape(str(demo.refused)[:300])}...")
    else:
        _note(console, f"[red]eps = {large}: the learner returned a result instead of refusing[/]")
    if demo.recovered is not None:
        _note(console, f"eps = {small}: recovered with {demo.recovered.queries} queries, "
                       f"{demo.recovered.redraws} redraws, "
                       f"error/eps = {_n(demo.error / mpmath.mpf(small), 4)} <= C = {_n(demo.C, 4)}  "
                       + ("[green]PASS[/]" if demo.holds else "[red]FAIL[/]") + "\n")
    else:
        _note(console, f"[red]eps = {small}: refused although below the threshold[/]\n")
    figures["refusal"] = {"threshold": str(demo.threshold), "binding": demo.binding,
                          "first_reasons": list(demo.first.reasons) if demo.first else [],
                          "refused": demo.refused is not None,
                          "ambiguous_matchings": getattr(demo.refused, "ambiguous_matchings", 0),
                          "redraws": len(demo.refused.reasons) if demo.refused else 0,
                          "holds": demo.holds}
    return demo.holds


def _guided_rows(progress: Console, seeds: Sequence[int]):
    """:func:`guided_constants` one seed at a time, a progress line each (three runs per seed)."""
    progress.print(f"choosing configurations: {len(seeds)} models, 3 runs each (random, guided by the "
                   "pilot, guided by the model)", markup=False)
    start = time.perf_counter()

    def done(seed: int, kind: str) -> None:
        progress.print(f"  model {seed}: {kind} run done, {time.perf_counter() - start:.0f} s", markup=False)

    yield from guided_constants(seeds=seeds, progress=done)


def _print_guided(console: Console, figures: dict, progress: Console, seeds: Sequence[int]) -> bool:
    """C of held-out models (seeds ``seeds``) with random and with guided configurations."""
    ok = True
    guided = _table(f"Choosing configurations: gaussian W, v (d = 3, H = 2), eps = {GUIDED_EPS}",
                    ("seed", "random:\nqueries", "C", "error", "guided by\npilot: C", "error",
                     "guided by\nmodel: C"))
    figures["guided"] = []
    for i, row in zip(seeds, _guided_rows(progress, seeds)):
        (q0, C0, e0), (_, C1, e1), (_, C2, _) = row.random, row.pilot, row.model
        guided.add_row(str(i), str(q0), _n(C0, 3), _n(e0, 3), _n(C1, 3),
                       ("[green]" if row.holds else "[red]") + _n(e1, 3) + "[/]", _n(C2, 3))
        ok &= row.holds
        figures["guided"].append({"name": row.name, "random": [q0, str(C0), str(e0)],
                                  "pilot": [row.pilot[0], str(C1), str(e1)],
                                  "model": [row.model[0], str(C2), str(row.model[2])]})
    console.print(guided)
    _note(console, "guided: learn_approx(..., guide=pilot) chooses each configuration's tokens by the "
                   "conditioning the pilot (the random run's recovery) predicts; 69 queries each, on top "
                   "of the pilot's.\n")
    return ok


def _print_torch(console: Console, figures: dict, progress: Console) -> bool:
    """The torch layers learned from float64 answers (torch is installed: :func:`main` checked)."""
    import torch

    from ..targets.torch_demo import torch_demo
    ok = True
    torch.set_num_threads(1)  # tiny tensors: threads only add overhead
    runs = _table("torch.nn.MultiheadAttention(4, H, bias=False) + readout, float64 answers",
                  ("H", "seed", "scale", "queries", "redraws", "C", "float64 error\nof answers",
                   "declared\neps"))
    errors = _table("  parameter error of the learned torch layers",
                    ("H", "seed", "max |error|", "rel. error\n(per parameter)", "rel. error\n(per entry)",
                     "entries\n> 1e-6"))
    figures["torch"] = []
    for heads, seed, r in _torch_layers(torch_demo, progress, "learned", "oracle_queries"):
        eps = to_mpf(r.eps)
        good = r.rel_param <= mpmath.mpf("1e-6") and r.float_error <= eps
        ok &= good
        runs.add_row(str(heads), str(seed), str(r.scale), str(r.oracle_queries), str(r.redraws),
                     _n(r.C, 3), _n(r.float_error, 3), _n(eps, 2))
        errors.add_row(str(heads), str(seed), _n(r.max_abs, 3),
                       ("[green]" if good else "[red]") + _n(r.rel_param, 3) + "[/]",
                       _n(r.rel_entry, 3), f"{r.entries_above} of {r.entries}")
        figures["torch"].append({"heads": heads, "seed": seed, "scale": str(r.scale),
                                 "queries": r.oracle_queries, "C": str(r.C),
                                 "rel_param": str(r.rel_param),
                                 "rel_entry": str(r.rel_entry), "entries_above_1e-6": r.entries_above,
                                 "entries": r.entries, "worst_entry_scale": str(r.worst_entry_scale),
                                 "redraws": r.redraws, "max_abs": str(r.max_abs),
                                 "float_error": str(r.float_error)})
    console.print(runs)
    console.print(errors)
    _torch_guided(console, progress, figures)
    ok &= all(mpmath.mpf(g["rel_param"]) <= mpmath.mpf("1e-6") for g in figures["torch_guided"])
    _torch_default(console, progress, figures)
    ok &= all(mpmath.mpf(g["rel_param"]) <= mpmath.mpf("1e-6") for g in figures["torch_default"])
    _note(console, "W_h = W_K,h^T W_Q,h / sqrt(d_head), v_h = W_V,h^T W_O,h^T readout; relative "
                   "error per parameter = max|error| / max|entry| of each W_h and v_h (required <= 1e-6); "
                   "per entry = |error| / |entry|, unbounded for entries near 0 (entries > 1e-6: how many "
                   "exceed it).\n")
    return ok


def run(args: argparse.Namespace, console: Console) -> int:
    start = time.perf_counter()
    eps_values = EPS_FULL if args.full else EPS_QUICK
    figures: dict = {"models": {}, "slack": str(SLACK), "linear_tolerance": str(LINEAR_TOLERANCE),
                     "max_condition": "10^(2H+1)"}
    progress = stderr_console(console)  # a line per phase: the run takes a minute or more
    console.print(header("approx", [
        ("oracle", "answers f(X) + noise(X), |noise| <= eps, the noise known exactly (NoisyOracle)"),
        ("error", "max |theta_hat - theta| over all entries of W_h (the real matrix) and v_h"),
        ("claim", f"error <= C eps (slack {SLACK}), error/eps constant (linear) across eps"),
        ("redraws", "configurations with condition > 10^(2H+1) are redrawn (counted)"),
        ("noise", f"eps = {', '.join(map(str, eps_values))}"),
        ("floats", "balls of high precision (arb); floats only in printing")]))
    console.print()
    ok = _print_sweeps(args.full, eps_values, console, figures, progress)
    ok &= _print_refusal(console, figures, progress)
    ok &= _print_guided(console, figures, progress, GUIDED_SEEDS_FULL if args.full else GUIDED_SEEDS_QUICK)
    if args.torch:
        ok &= _print_torch(console, figures, progress)
    seconds = time.perf_counter() - start
    text = "all checks hold" if ok else "some checks fail"
    console.print(verdict_panel(ok, f"{text} ({seconds:.1f} s)"))
    if args.json is not None:
        figures["passed"] = ok
        figures["seconds"] = seconds
        try:
            write_text(args.json, json.dumps(figures, indent=2) + "\n")
        except OSError as exc:
            message = f"error: cannot write {args.json}: {exc.strerror or exc}"
            Console(stderr=True).print(message, markup=False)
            return 2
    return 0 if ok else 1


def _torch_installed() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: Sequence[str] | None = None, prog: str = "exactlearn approx") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    problem = None if args.json is None else writable_problem(args.json)
    if problem is not None:  # before any work
        parser.error(f"--json: cannot write {args.json}: {problem}")
    if args.torch and not _torch_installed():  # before any work, not after a minute of figures
        Console().print("[red]--torch: torch is not installed[/] "
                        + escape('(pip install "exactlearn[torch]")'))
        return 2
    try:
        return run(args, Console())  # the terminal's width, or $COLUMNS, or 80
    except KeyboardInterrupt:
        Console(stderr=True).print("interrupted")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
