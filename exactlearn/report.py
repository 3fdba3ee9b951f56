"""Readable reports of a recovery: ground truth beside the recovered heads, counts, verdict.

Rendering uses rich; the figures themselves come from :class:`~exactlearn.Recovery`
(measured counts) and the oracle's own log.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .exact import brief, rational_str
from .model import Head, MultiHeadAttention
from .recovery import Recovery

__all__ = ["verdict", "render_recovery", "matrix_text", "recovery_summary"]

_MAX_SHOWN_WIDTH = 4


def matrix_text(rows) -> str:
    """A small exact matrix as aligned text (``p/q`` entries)."""
    cells = [[rational_str(e) if not isinstance(e, str) else e for e in row] for row in rows]
    widths = [max(len(row[c]) for row in cells) for c in range(len(cells[0]))] if cells else []
    return "\n".join("[" + " ".join(c.rjust(w) for c, w in zip(row, widths)) + "]" for row in cells)


def _vector_text(v) -> str:
    return "(" + ", ".join(rational_str(e) for e in v) + ")"


def _head_cells(head: Head | None, d: int) -> tuple[str, str]:
    if head is None:
        return "-", "-"
    if d > _MAX_SHOWN_WIDTH:
        bits = max(max(e.p.bit_length(), e.q.bit_length()) for row in head.exp_W for e in row)
        return f"{d}x{d} rationals (<= {bits} bits)", f"{d} rationals"
    return matrix_text(head.exp_W), _vector_text(head.v)


def verdict(recovery: Recovery | None, truth: MultiHeadAttention | None, error: BaseException | None = None) -> tuple[bool, str]:
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
    """Rows ``(what, measured, expected, ok)`` shown in the counts table."""
    H = recovery.schedule_heads
    sym = "H0" if recovery.heads_bound is not None else "H"
    rows: list[tuple[str, str, str, bool | None]] = []
    no_redraw = recovery.redraws == 0
    rows.append((
        f"queries ({recovery.schedule} schedule)",
        str(recovery.queries),
        f"4{sym}d^2-2{sym}+1 = {recovery.formula}" + (f"; lean = {recovery.lean_formula}" if True else ""),
        (recovery.queries == recovery.planned) if no_redraw else None,
    ))
    if oracle is not None and hasattr(oracle, "queries"):
        rows.append(("queries in the oracle's own log", str(oracle.queries), str(recovery.queries + recovery.verification_queries), oracle.queries == recovery.queries + recovery.verification_queries))
    rows.append((
        "maximum query length",
        str(recovery.max_length),
        f"2{sym}+1 = {recovery.formula_max_length}",
        recovery.max_length == recovery.formula_max_length if no_redraw else None,
    ))
    rows.append(("canonical heads found", str(recovery.num_heads), f"{sym} = {H}" if recovery.heads_bound is None else f"<= H0 = {H}", None))
    rows.append(("redraws (degenerate configurations)", str(recovery.redraws), "0 expected for generic draws", recovery.redraws == 0 or None))
    if recovery.verification_queries:
        rows.append(("verification queries (not counted above)", str(recovery.verification_queries), "all equal", True))
    rows.append(("time: total / oracle / learner", f"{recovery.seconds_total:.3f}s / {recovery.seconds_oracle:.3f}s / {recovery.seconds_learner:.3f}s", "", None))
    return rows


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
    if truth_heads or rec_heads:
        table = Table(title="Canonical heads: ground truth | recovered", show_lines=True)
        table.add_column("head", justify="right")
        table.add_column("exp(W_h) truth")
        table.add_column("v_h truth")
        table.add_column("exp(W_h) recovered")
        table.add_column("v_h recovered")
        table.add_column("==", justify="center")
        remaining = list(rec_heads)
        for i, th in enumerate(truth_heads):
            match = next((r for r in remaining if r == th), None)
            if match is not None:
                remaining.remove(match)
            cells = _head_cells(th, d) + _head_cells(match, d)
            table.add_row(str(i), *cells, "[green]yes[/]" if match is not None else "[red]no[/]")
        for r in remaining:
            table.add_row("extra", "-", "-", *_head_cells(r, d), "[red]no[/]")
        parts.append(table)
    if recovery is not None:
        counts = Table(title="Counts (measured by the learner)")
        counts.add_column("what")
        counts.add_column("measured", justify="right")
        counts.add_column("formula / expected")
        counts.add_column("ok", justify="center")
        for what, measured, expected, good in recovery_summary(recovery, oracle):
            mark = "" if good is None else ("[green]yes[/]" if good else "[red]no[/]")
            counts.add_row(what, measured, expected, mark)
        parts.append(counts)
        if recovery.redraw_reasons:
            parts.append(Text("redraws: " + "; ".join(recovery.redraw_reasons), style="yellow"))
        for note in getattr(recovery, "notes", ()):
            parts.append(Text("note: " + note, style="yellow"))
    style = "bold green" if ok else "bold red"
    parts.append(Panel(Text(text, style=style), title="verdict", expand=False))
    console.print(Group(*parts))
    return ok
