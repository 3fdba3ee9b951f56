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

import time
from collections.abc import Callable, Sequence
from typing import Any

from flint import fmpq
from rich import box
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .model import Head, MultiHeadAttention, entry_str
from .recovery import Recovery

__all__ = ["QueryProgress", "counts_table", "facts", "header", "heads_block", "heads_table", "mark",
           "matrices_below", "matrix_text", "recovery_summary", "render_recovery", "stderr_console",
           "verdict", "verdict_panel"]

_MAX_SHOWN_WIDTH = 4
PROGRESS_LINE_SECONDS = 5.0  # without a terminal: one progress line at most this often


def stderr_console(console: Console) -> Console:
    """The console for errors and progress: stderr, with the same width as ``console``."""
    return Console(stderr=True, width=console.width if console.is_terminal else None)


class QueryProgress:
    """``progress(done, total)`` for :func:`exactlearn.learn`: shown on ``console`` (stderr).

    In a terminal a transient bar; otherwise one line at most every ``every``
    seconds, so short runs print nothing. ``total`` may be ``None`` (not known in advance).
    """

    def __init__(self, console: Console, label: str, every: float = PROGRESS_LINE_SECONDS):
        self.console, self.label, self.every = console, label, every
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

    def __call__(self, done: int, total: int | None) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done, total=None if total is None else max(total, done))
            return
        now = time.perf_counter()
        if now - self.last >= self.every:
            self.last = now
            count = f"{done} queries" if total is None else f"{done} of {total} queries"
            self.console.print(f"{self.label}: {count}, {now - self.start:.0f} s", markup=False)




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


def _bits(e: Any) -> int:
    return max(e.p.bit_length(), e.q.bit_length()) if isinstance(e, fmpq) else e.bits()


def _summary_cell(value: tuple) -> str:
    """A matrix or vector too wide to show, as its shape and size."""
    entries = [e for row in value for e in row] if _is_matrix(value) else list(value)
    kind = "rationals" if all(isinstance(e, fmpq) for e in entries) else "elements of K"
    shape = f"{len(value)}x{len(value[0])}" if _is_matrix(value) else f"{len(value)}"
    return f"{shape} {kind}" + (f"\n(<= {max(map(_bits, entries))} bits)" if _is_matrix(value) else "")


def _is_matrix(value: tuple) -> bool:
    return bool(value) and isinstance(value[0], tuple)


def _cell_text(value: tuple) -> str:
    return matrix_text(value) if _is_matrix(value) else _column_text(value)


def heads_table(names: Sequence[str], truth: Sequence[tuple], recovered: Sequence[tuple],
                summarise: bool = False, shown: Sequence[int] | None = None) -> Table:
    """Each ground-truth head above the recovered head equal to it (``==`` on the whole head), one
    column per name (of those ``shown``, by index; all by default).

    A head is a tuple of matrices (tuples of rows) and vectors (tuples of entries), in the order of
    ``names``; ``summarise`` shows each as its shape and size (matrices too wide for the console).
    """
    shown = range(len(names)) if shown is None else shown
    table = Table(title="Canonical heads: ground truth and recovered", box=box.SIMPLE_HEAD,
                  title_justify="left")
    table.add_column("head", justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    for i in shown:
        table.add_column(names[i], no_wrap=True)
    table.add_column("==", justify="center", no_wrap=True)

    def cells(head: tuple) -> list[Text]:
        return [Text(_summary_cell(head[i]) if summarise else _cell_text(head[i])) for i in shown]

    remaining = list(recovered)
    for i, th in enumerate(truth):
        match = next((r for r in remaining if r == th), None)
        table.add_row(str(i), "truth", *cells(th), "")
        if match is not None:
            remaining.remove(match)
            table.add_row("", "recovered", *cells(match), "[green]yes[/]", end_section=True)
        else:
            table.add_row("", "recovered", *(["-"] * len(shown)), "[red]no[/]", end_section=True)
    for r in remaining:
        table.add_row("extra", "recovered", *cells(r), "[red]no[/]", end_section=True)
    return table


def matrices_below(names: Sequence[str], truth: Sequence[tuple], recovered: Sequence[tuple],
                   width: int = 80) -> Text:
    """Every matrix row on its own line (when the matrices do not fit in the table); a row wider than
    ``width`` is written one entry per line, and so is a vector."""
    lines = []
    for label, heads in (("truth", truth), ("recovered", recovered)):
        for i, head in enumerate(heads):
            matrices = [n for n, x in zip(names, head, strict=True) if _is_matrix(x)]
            vectors = [n for n, x in zip(names, head, strict=True) if not _is_matrix(x)]
            lines.append(f"{label} head {i}: {' and '.join(matrices)} rows, then {' and '.join(vectors)}")
            for name, x in zip(names, head, strict=True):
                lines.extend(_below(name, x, width))
    return Text("\n".join(lines))


def _below(name: str, x: tuple, width: int) -> list[str]:
    if _is_matrix(x):
        rows = matrix_text(x).split("\n")
        if max(len(row) for row in rows) + 2 <= width:
            return ["  " + row for row in rows]
        return [f"  {name}[{a}][{b}] = {entry_str(e)}" for a, row in enumerate(x) for b, e in enumerate(row)]
    values = f"  {name} = (" + ", ".join(entry_str(e) for e in x) + ")"
    return [values] if len(values) <= width else [f"  {name}[{a}] = {entry_str(e)}" for a, e in enumerate(x)]


def heads_block(console: Console, names: Sequence[str], truth: Sequence[tuple],
                recovered: Sequence[tuple], d: int) -> list[Any]:
    """The heads table; matrices too wide for ``console`` summarised in it and printed under it."""
    if not truth and not recovered:
        return []
    table = heads_table(names, truth, recovered, d > _MAX_SHOWN_WIDTH)
    if d <= _MAX_SHOWN_WIDTH and not _fits(console, table):
        matrices = [i for i, x in enumerate((truth or recovered)[0]) if _is_matrix(x)]
        return [heads_table(names, truth, recovered, True, shown=matrices),
                matrices_below(names, truth, recovered, console.width)]
    return [table]


def facts(rows: Sequence[tuple[str, str | Text]], title: str | None = None) -> RenderableType:
    """Key and value on one line each; a long value wraps under itself, never under its key.

    A ``str`` value is plain text (brackets are not markup); pass a :class:`~rich.text.Text` to style it.
    """
    table = Table(box=None, show_header=False, padding=(0, 1, 0, 2))
    table.add_column(no_wrap=True, style="bold")
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, Text(value) if isinstance(value, str) else value)
    return table if title is None else Group(Text(title, style="italic"), table)


def header(command: str, rows: Sequence[tuple[str, str | Text]]) -> Group:
    """A command's first lines: its name, then what it runs on as :func:`facts`."""
    return Group(Text(f"exactlearn {command}", style="bold"), facts(rows))


def mark(ok: bool | None) -> str:
    """The ``ok`` column of a counts table: yes, NO, or empty (no check)."""
    return "" if ok is None else ("[green]yes[/]" if ok else "[bold red]NO[/]")


def counts_table(rows: Sequence[tuple[str, str, str, bool | None]],
                 title: str = "Counts (measured by the learner)") -> Table:
    """Rows ``(what, measured, expected, ok)``, as :func:`recovery_summary` gives them."""
    counts = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    counts.add_column("what")
    counts.add_column("measured", justify="right")
    counts.add_column("formula / expected", overflow="fold")
    counts.add_column("ok", justify="center")
    for what, measured, expected, good in rows:
        counts.add_row(Text(what), Text(measured), Text(expected), mark(good))
    return counts


def verdict_panel(ok: bool, text: str) -> Panel:
    """The verdict, last in every report: green for a pass, red otherwise."""
    return Panel(Text(text, style="bold green" if ok else "bold red"), title="verdict", expand=False)


def _head_view(head: Head, affine: bool) -> tuple:
    return (head.exp_W, head.v) + ((_exp_w(head),) if affine else ())


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
    remedy: Callable[[str], str] = str,
) -> bool:
    """Print the full report; return True iff the recovery is exact. ``remedy`` rewrites the verdict's
    text (the command line's :func:`~exactlearn.limits.cli_remedy`)."""
    ok, text = verdict(recovery, truth, error)
    parts: list[Any] = []
    truth_heads = list(truth.canonical().heads) if truth is not None else []
    rec_heads: list[Head] = []
    if recovery is not None and recovery.is_rational:
        rec_heads = list(recovery.model.heads)
    d = truth.d if truth is not None else (recovery.d if recovery is not None else 0)
    affine = (recovery is not None and recovery.affine) or (truth is not None and truth.is_affine)
    names = ("exp(W_h)", "v_h") + (("exp(w_h)",) if affine else ())
    parts += heads_block(console, names, [_head_view(h, affine) for h in truth_heads],
                         [_head_view(h, affine) for h in rec_heads], d)
    if affine:
        parts.append(_offsets(truth, recovery if recovery is not None and recovery.affine else None))
    if recovery is not None:
        parts.append(counts_table(recovery_summary(recovery, oracle)))
        parts.append(Text(f"time: {recovery.seconds_total:.3f} s total, {recovery.seconds_oracle:.3f} s in "
                          f"the oracle, {recovery.seconds_learner:.3f} s in the learner"))
        if recovery.redraw_reasons:
            parts.append(Text("redraws: " + "; ".join(recovery.redraw_reasons), style="yellow"))
        for note in getattr(recovery, "notes", ()):
            parts.append(Text("note: " + note, style="yellow"))
    parts.append(verdict_panel(ok, remedy(text)))
    console.print(Group(*parts))
    return ok
