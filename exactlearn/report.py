"""Readable reports of a recovery: ground truth beside the recovered heads, counts, verdict.

Rendering uses rich and fits the console's width (80 columns included): a
matrix row is never broken across lines. Each head is shown as its ground
truth and its recovery, one matrix row per line, with ``v_h`` as a column
beside ``exp(W_h)`` (and ``exp(w_h)`` for affine attention, with the offset
``c0`` under the table); matrices too wide for the console are summarised in the
table and printed under it, one row per line. The figures come from
:class:`~exactlearn.Recovery` (measured counts) and the oracle's own log.

>>> from flint import fmpq
>>> print(matrix_text([[fmpq(1), fmpq(-1, 2)], [fmpq(3, 4), fmpq(10)]]))
[  1 -1/2]
[3/4   10]
"""

from __future__ import annotations

from typing import Any

from flint import fmpq
from rich import box
from rich.console import Console, Group
from rich.measure import Measurement
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .model import Head, MultiHeadAttention, entry_str
from .recovery import Recovery

__all__ = ["verdict", "render_recovery", "matrix_text", "recovery_summary"]

_MAX_SHOWN_WIDTH = 4


def _cells(rows) -> list[list[str]]:
    return [[entry_str(e) if not isinstance(e, str) else e for e in row] for row in rows]


def matrix_text(rows) -> str:
    """A small exact matrix as aligned text (``p/q`` entries, or a number field's notation), one row per
    line."""
    cells = _cells(rows)
    widths = [max(len(row[c]) for row in cells) for c in range(len(cells[0]))] if cells else []
    return "\n".join("[" + " ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + "]"
                     for row in cells)


def _column_text(v) -> str:
    """A vector as a column, ``[entry]`` per line, right-aligned."""
    return matrix_text([[e] for e in v])


def _summary(head: Head, d: int) -> tuple[str, str]:
    if head.field is not None:
        entries: list[Any] = [e for row in head.exp_W for e in row]  # elements of the field
        bits = max(e.bits() for e in entries)
        return f"{d}x{d} elements of K\n(<= {bits} bits)", f"{d} elements"
    bits = max(max(e.p.bit_length(), e.q.bit_length()) for row in head.exp_W for e in row)
    return f"{d}x{d} rationals\n(<= {bits} bits)", f"{d} rationals"


def _exp_w(head: Head) -> tuple:
    """``exp(w_h)`` of a head (ones without a score term)."""
    return head.exp_w if head.exp_w is not None else (1,) * head.d


def verdict(recovery: Recovery | None, truth: MultiHeadAttention | None,
            error: BaseException | None = None) -> tuple[bool, str]:
    """``(exact, text)``: EXACT only if the recovered canonical model equals the truth by ``==``."""
    if error is not None:
        return False, f"FAILED: {type(error).__name__}: {error}"
    assert recovery is not None
    if not recovery.is_rational:
        return False, "FAILED: recovered weights are not exp-parametrised rationals"
    if truth is None:
        return True, "RECOVERED (no ground truth to compare)"
    if recovery.model == truth.canonical():
        return True, "EXACT"
    return False, "FAILED: the recovered canonical model differs from the ground truth"


def recovery_summary(recovery: Recovery, oracle: Any = None) -> list[tuple[str, str, str, bool | None]]:
    """Rows ``(what, measured, expected, ok)`` shown in the counts table (``ok`` None: no check)."""
    H = recovery.schedule_heads
    sym = "H0" if recovery.heads_bound is not None else "H"
    no_redraw = recovery.redraws == 0
    square = "d(d+1)" if recovery.affine else "d^2"
    rows: list[tuple[str, str, str, bool | None]] = [(
        f"queries ({recovery.schedule}, affine)" if recovery.affine
        else f"queries ({recovery.schedule} schedule)",
        str(recovery.queries),
        f"4{sym}{square}-2{sym}+1 = {recovery.formula} (lean: {recovery.lean_formula})",
        (recovery.queries == recovery.planned) if no_redraw else None,
    )]
    if oracle is not None and hasattr(oracle, "queries"):
        total = recovery.queries + recovery.verification_queries
        rows.append(("queries in the oracle's log", str(oracle.queries), str(total),
                     oracle.queries == total))
    rows.append((
        "longest query (tokens)",
        str(recovery.max_length),
        f"2{sym}+1 = {recovery.formula_max_length}",
        recovery.max_length == recovery.formula_max_length if no_redraw else None,
    ))
    rows.append(("canonical heads found", str(recovery.num_heads),
                 f"{sym} = {H}" if recovery.heads_bound is None else f"<= H0 = {H}", None))
    rows.append(("redraws (degenerate draws)", str(recovery.redraws), "0 for generic draws",
                 recovery.redraws == 0 or None))
    if recovery.verification_queries:
        rows.append(("verification queries (extra)", str(recovery.verification_queries),
                     "all answers equal", True))
    return rows


def _heads_table(truth_heads: list[Head], rec_heads: list[Head], d: int, summarise: bool,
                 affine: bool = False) -> Table:
    table = Table(title="Canonical heads: ground truth and recovered", box=box.SIMPLE_HEAD,
                  title_justify="left")
    table.add_column("head", justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    table.add_column("exp(W_h)", no_wrap=True)
    table.add_column("v_h", no_wrap=True)
    if affine:
        table.add_column("exp(w_h)", no_wrap=True)
    table.add_column("==", justify="center", no_wrap=True)

    def cells(head: Head) -> tuple[str, ...]:
        if summarise:
            return _summary(head, d) + ((f"{d} rationals",) if affine else ())
        shown = (matrix_text(head.exp_W), _column_text(head.v))
        return shown + ((_column_text(_exp_w(head)),) if affine else ())

    remaining = list(rec_heads)
    for i, th in enumerate(truth_heads):
        match = next((r for r in remaining if r == th), None)
        if match is not None:
            remaining.remove(match)
        table.add_row(str(i), "truth", *map(Text, cells(th)), "")
        if match is not None:
            table.add_row("", "recovered", *map(Text, cells(match)), "[green]yes[/]", end_section=True)
        else:
            table.add_row("", "recovered", *(["-"] * (3 if affine else 2)), "[red]no[/]", end_section=True)
    for r in remaining:
        table.add_row("extra", "recovered", *map(Text, cells(r)), "[red]no[/]", end_section=True)
    return table


def _matrices_below(truth_heads: list[Head], rec_heads: list[Head], width: int = 80,
                    affine: bool = False) -> Text:
    """Every matrix row on its own line (used when the matrices do not fit in the table); a row wider than
    ``width`` is written one entry per line."""
    lines = []
    for label, heads in (("truth", truth_heads), ("recovered", rec_heads)):
        for i, head in enumerate(heads):
            lines.append(f"{label} head {i}: exp(W_h) rows, then v_h" + (" and exp(w_h)" if affine else ""))
            rows = matrix_text(head.exp_W).split("\n")
            if max(len(row) for row in rows) + 2 <= width:
                lines.extend("  " + row for row in rows)
            else:
                lines.extend(f"  exp(W_h)[{a}][{b}] = {entry_str(e)}"
                             for a, row in enumerate(head.exp_W) for b, e in enumerate(row))
            values = "  v_h = (" + ", ".join(entry_str(e) for e in head.v) + ")"
            lines.extend([values] if len(values) <= width else
                         [f"  v_h[{a}] = {entry_str(e)}" for a, e in enumerate(head.v)])
            if affine:
                lines.append("  exp(w_h) = (" + ", ".join(entry_str(fmpq(e)) for e in _exp_w(head)) + ")")
    return Text("\n".join(lines))


def _offsets(truth: MultiHeadAttention | None, recovery: Recovery | None) -> Text:
    """The offsets ``c0`` of affine attention: truth and recovered."""
    parts = []
    if truth is not None:
        parts.append(f"truth c0 = {entry_str(truth.c0)}")
    if recovery is not None:
        parts.append(f"recovered c0 = {entry_str(recovery.c0)}")
    same = truth is not None and recovery is not None and truth.c0 == recovery.c0
    return Text("output offset: " + ", ".join(parts) + ("  (equal)" if same else ""))


def _fits(console: Console, table: Table) -> bool:
    return Measurement.get(console, console.options.update(width=10**6), table).maximum <= console.width


def render_recovery(
    console: Console,
    recovery: Recovery | None,
    truth: MultiHeadAttention | None,
    *,
    oracle: Any = None,
    error: BaseException | None = None,
) -> bool:
    """Print the full report; return True iff the recovery is exact."""
    ok, text = verdict(recovery, truth, error)
    parts: list[Any] = []
    truth_heads = list(truth.canonical().heads) if truth is not None else []
    rec_heads: list[Head] = []
    if recovery is not None and recovery.is_rational:
        rec_heads = list(recovery.model.heads)
    d = truth.d if truth is not None else (recovery.d if recovery is not None else 0)
    affine = (recovery is not None and recovery.affine) or (truth is not None and truth.is_affine)
    if truth_heads or rec_heads:
        table = _heads_table(truth_heads, rec_heads, d, d > _MAX_SHOWN_WIDTH, affine)
        if d <= _MAX_SHOWN_WIDTH and not _fits(console, table):
            parts += [_heads_table(truth_heads, rec_heads, d, True),  # exp(w_h) only below
                      _matrices_below(truth_heads, rec_heads, console.width, affine)]
        else:
            parts.append(table)
    if affine:
        parts.append(_offsets(truth, recovery if recovery is not None and recovery.affine else None))
    if recovery is not None:
        counts = Table(title="Counts (measured by the learner)", box=box.SIMPLE_HEAD, title_justify="left")
        counts.add_column("what")
        counts.add_column("measured", justify="right")
        counts.add_column("formula / expected")
        counts.add_column("ok", justify="center")
        for what, measured, expected, good in recovery_summary(recovery, oracle):
            mark = "" if good is None else ("[green]yes[/]" if good else "[red]no[/]")
            counts.add_row(what, measured, expected, mark)
        parts.append(counts)
        parts.append(Text(f"time: {recovery.seconds_total:.3f} s total, {recovery.seconds_oracle:.3f} s in "
                          f"the oracle, {recovery.seconds_learner:.3f} s in the learner"))
        if recovery.redraw_reasons:
            parts.append(Text("redraws: " + "; ".join(recovery.redraw_reasons), style="yellow"))
        for note in getattr(recovery, "notes", ()):
            parts.append(Text("note: " + note, style="yellow"))
    style = "bold green" if ok else "bold red"
    parts.append(Panel(Text(text, style=style), title="verdict", expand=False))
    console.print(Group(*parts))
    return ok
