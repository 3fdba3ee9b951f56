"""Run the claims, and render what they measured: a rich table, JSON, Markdown.

:func:`run_claims` runs each claim's ``check`` and never lets one claim's crash
hide the others: an exception, or a check that returns no verdict, becomes a
FAIL row carrying the error. :class:`Report` holds the outcomes with everything
a reader needs to reproduce a row (versions, seed, mode, command line) and the
claims that were asked for. Its :meth:`Report.summary` is the one verdict:
:meth:`Report.to_dict` (the JSON), :meth:`Report.to_markdown`,
:func:`render_table` and the exit code (:func:`exit_code`) all read it, and a
claim that was asked for but has no result is a FAIL row of it.

>>> from proofs_check.registry import Claim, Outcome, Settings
>>> ok = Claim("demo", "Demo", "1 + 1 = 2", "arithmetic",
...            lambda s: Outcome(1 + 1 == 2, "one sum", {"sum": 2}))
>>> report = run_claims(Settings(), [ok])
>>> report.summary().verdict, report.results[0].status, exit_code(report)
('PASS', 'PASS', 0)
"""

from __future__ import annotations

import dataclasses
import json
import platform
import subprocess
import textwrap
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .registry import Claim, Outcome, Settings

__all__ = ["REPORT_FORMAT", "ClaimResult", "Report", "Summary", "claim_number", "environment", "exit_code",
           "render_table", "run_claims", "Progress"]

REPORT_FORMAT = "proofs_check.report/1"
_PACKAGES = ("python-flint", "sympy", "exactlearn", "mpmath", "rich")


def claim_number(claim: Claim) -> str:
    """The table number of a claim: ``7`` for the manifest entry (or a check defined in) ``c07_*``, else
    its key."""
    module = claim.module or getattr(claim.check, "__module__", "") or ""
    name = module.rsplit(".", 1)[-1]
    if len(name) >= 3 and name[0] == "c" and name[1:3].isdigit():
        return str(int(name[1:3]))
    return claim.key


@dataclass
class ClaimResult:
    """One claim's outcome, its run time, and the error if its check raised."""

    claim: Claim
    outcome: Outcome
    seconds: float
    error: str | None = None

    @property
    def number(self) -> str:
        return claim_number(self.claim)

    @property
    def passed(self) -> bool:
        return self.error is None and self.outcome.passed is True

    @property
    def status(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def to_dict(self) -> dict:
        return {
            "number": self.number,
            "key": self.claim.key,
            "title": self.claim.title,
            "statement": self.claim.statement,
            "source": self.claim.source,
            "result": self.status,
            "passed": self.passed,
            "checked": self.outcome.checked,
            "figures": _json_ready(self.outcome.figures),
            "details": list(self.outcome.details),
            "timings": _json_ready(self.outcome.timings),
            "error": self.error,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class Summary:
    """The verdict of a run, as every output shows it: the JSON, the Markdown, the table, the exit code."""

    verdict: str  # "PASS" only if every claim asked for has a result and passed
    passed: int  # claims that passed
    total: int  # claims asked for
    rows: tuple[tuple[str, str, str, float], ...]  # (number, title, PASS/FAIL, seconds) per result
    missing: tuple[str, ...]  # claims asked for that have no result (each a FAIL)

    @property
    def ok(self) -> bool:
        return self.verdict == "PASS"

    @property
    def line(self) -> str:
        return f"{self.verdict}: {self.passed}/{self.total} claims pass"


@dataclass
class Report:
    """The outcome of a proofs_check run and the context needed to reproduce it."""

    settings: Settings
    results: list[ClaimResult]
    seconds: float
    command: str = "python -m proofs_check"
    started: str = ""
    environment: dict = field(default_factory=dict)
    scheduler: str | None = None  # the Dask scheduler's address, if one ran the instances
    claims: list[Claim] = field(default_factory=list)  # the claims asked for (a result may be missing)

    def summary(self) -> Summary:
        """The one verdict of the run."""
        have = {r.claim.key for r in self.results}
        missing = tuple(claim_number(c) for c in self.claims if c.key not in have)
        passed = sum(r.passed for r in self.results)
        total = max(len(self.claims), len(self.results))
        ok = bool(self.results) and not missing and passed == len(self.results)
        rows = tuple((r.number, r.claim.title, r.status, r.seconds) for r in self.results)
        return Summary("PASS" if ok else "FAIL", passed, total, rows, missing)

    @property
    def passed(self) -> bool:
        return self.summary().ok

    def to_dict(self) -> dict:
        summary = self.summary()
        return {
            "format": REPORT_FORMAT,
            "result": summary.verdict,
            "passed": summary.ok,
            "claims passed": f"{summary.passed}/{summary.total}",
            "missing claims": list(summary.missing),
            "command": self.command,
            "mode": self.settings.mode,
            "seed": self.settings.seed,
            "workers": self.settings.workers,
            "scheduler": self.scheduler,
            "started": self.started,
            "seconds": round(self.seconds, 3),
            "environment": self.environment,
            "claims": [r.to_dict() for r in self.results],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def to_markdown(self) -> str:
        """The same figures as :meth:`to_dict`, as a Markdown document."""
        data = self.to_dict()
        lines = [
            "# proofs_check report",
            "",
            f"**{data['result']}**: {data['claims passed']} claims pass. "
            "Reproducing: *Provably Learning Multi-Head Attention with Queries* "
            "(Kim, Kim & Guo, arXiv [2608.03294](https://arxiv.org/abs/2608.03294)).",
            "",
            f"Command: `{data['command']}`",
            "",
            "| setting | value |",
            "|---|---|",
        ]
        for key in ("mode", "seed", "workers", "scheduler", "started", "seconds"):
            lines.append(f"| {key} | {_md(data[key])} |")
        for key, value in data["environment"].items():
            lines.append(f"| {_md(key)} | {_md(value)} |")
        lines += ["", "## Summary", "",
                  "| # | claim | what was checked | measured | result |", "|---|---|---|---|---|"]
        for r in self.results:
            figures = "<br>".join(_md(f"{k}: {v}") for k, v in _scalar_figures(r.outcome.figures))
            lines.append(f"| {r.number} | {_md(r.claim.title)} | {_md(r.outcome.checked)} | {figures} | "
                         f"**{r.status}** |")
        for number in data["missing claims"]:
            lines.append(f"| {number} | (no result) | - | - | **FAIL** |")
        lines += ["", "## Claims", ""]
        for r in data["claims"]:
            lines += [f"### {r['number']}. {r['title']}: {r['result']}", "",
                      f"*Statement.* {r['statement']}", "", f"*Source.* {r['source']}", "",
                      f"*Checked.* {r['checked']} ({r['seconds']} s)", ""]
            if r["error"]:
                lines += ["*Error.*", "", "```", r["error"], "```", ""]
            if r["details"]:
                lines += ["*Details.*", ""] + [f"- {_md(line)}" for line in r["details"]] + [""]
            lines += ["*Figures.*", "", "```json", json.dumps(r["figures"], indent=2), "```", ""]
        return "\n".join(lines)


def _json_ready(value: Any) -> Any:
    """Figures as plain JSON types (exact numbers such as fmpq become strings)."""
    return json.loads(json.dumps(value, default=str))


def _scalar_figures(figures: dict) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in figures.items() if isinstance(v, (str, int, float, bool)) or v is None]


def _md(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def environment() -> dict:
    """Versions of Python and of the packages the figures depend on, the platform, the commit."""
    out = {"Python": f"{platform.python_implementation()} {platform.python_version()}"}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    out["platform"] = platform.platform()
    commit = _git_commit()
    if commit:
        out["exactlearn git commit"] = commit
    return out


def _git_commit() -> str | None:
    """The commit of the source tree this package runs from, if it is a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                              timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


class Progress:
    """Per-step lines for a claim that runs longer than ``after`` seconds (at most one every ``every`` s)."""

    def __init__(self, label: str, write: Callable[[str], None], *, after: float = 10.0, every: float = 5.0):
        self.label, self.write, self.after, self.every = label, write, after, every
        self.start = time.perf_counter()
        self.last = self.start

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if now - self.start >= self.after and (now - self.last >= self.every or done == total):
            self.last = now
            self.write(f"  {self.label}: {done}/{total} tasks, {now - self.start:.0f} s")


def run_claims(
    settings: Settings,
    claims: Sequence[Claim],
    *,
    command: str = "python -m proofs_check",
    on_start: Callable[[int, Claim], None] | None = None,
    on_done: Callable[[int, ClaimResult], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Run every claim's check with ``settings``; a raising check becomes a FAIL with its error.

    ``progress`` receives a line now and then while a claim runs longer than 10 s.
    """
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    begin = time.perf_counter()
    scheduler = _scheduler_label(settings.scheduler)  # while a Client is still connected
    results = []
    for i, claim in enumerate(claims):
        if on_start is not None:
            on_start(i, claim)
        start = time.perf_counter()
        error = None
        run_settings = settings
        if progress is not None:
            reporter = Progress(f"claim {claim_number(claim)}", progress)
            run_settings = dataclasses.replace(settings, progress=reporter)
        try:
            outcome = claim.check(run_settings)
            if outcome is None:
                raise TypeError("the check returned no verdict (None)")
            if not isinstance(outcome, Outcome):
                raise TypeError(f"the check returned {type(outcome).__name__}, not an Outcome")
            if not isinstance(outcome.passed, bool):
                raise TypeError(f"Outcome.passed is {outcome.passed!r}, not a bool")
        except Exception as exc:  # one claim's crash must not hide the others: report it as FAIL
            error = f"{type(exc).__name__}: {exc}"
            outcome = Outcome(False, "the check raised an exception", {},
                              [error] + traceback.format_exc().strip().splitlines()[-6:])
        result = ClaimResult(claim, outcome, time.perf_counter() - start, error)
        results.append(result)
        if on_done is not None:
            on_done(i, result)
    return Report(settings, results, time.perf_counter() - begin, command, started, environment(),
                  scheduler, list(claims))


def exit_code(report: Report) -> int:
    """0 only if the run's summary passes, else 1."""
    return 0 if report.summary().ok else 1


def _scheduler_label(scheduler: Any) -> str | None:
    """An address string for a Dask scheduler given as an address or as a connected Client."""
    if scheduler is None or isinstance(scheduler, str):
        return scheduler
    address = getattr(getattr(scheduler, "scheduler", None), "address", None)
    return str(address) if address else type(scheduler).__name__


def render_table(console: Console, report: Report, *, verbose: bool = False) -> None:
    """Print the summary table, then each claim's figures (and details of failing claims).

    The table has one row per claim (number, title, result, seconds) and fits 80
    columns; what was checked and the measured figures follow under it, one claim
    after another. ``verbose`` adds each claim's statement, source, every figure
    and every detail line.
    """
    mode = report.settings.mode
    summary = report.summary()
    table = Table(title=f"proofs_check ({mode}, seed {report.settings.seed}): arXiv 2608.03294",
                  show_lines=False, expand=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("claim")
    table.add_column("result", justify="center", no_wrap=True)
    table.add_column("s", justify="right", no_wrap=True)
    for number, title, status, seconds in summary.rows:
        table.add_row(number, title, Text(status, style="bold green" if status == "PASS" else "bold red"),
                      f"{seconds:.1f}")
    for number in summary.missing:
        table.add_row(number, "(no result)", Text("FAIL", style="bold red"), "-")
    console.print(table)
    for r in report.results:
        _render_claim(console, r, verbose)
    style = "bold green" if summary.ok else "bold red"
    console.print(Text(f"{summary.line} in {report.seconds:.1f} s", style=style))


#: figures shown per claim without -v
SHOWN_FIGURES = 3


def _render_claim(console: Console, r: ClaimResult, verbose: bool) -> None:
    head = Text(f"{r.number}. {r.claim.title}: ", style="bold")
    head.append(r.status, style="bold green" if r.passed else "bold red")
    console.print(head)
    lines = [f"checked: {r.outcome.checked}"]
    if verbose:
        lines = [f"statement: {r.claim.statement}", f"source: {r.claim.source}"] + lines
    shown = _scalar_figures(r.outcome.figures)
    limit = len(shown) if verbose else SHOWN_FIGURES
    lines += [f"{k}: {v}" for k, v in shown[:limit]]
    hidden = len(r.outcome.figures) - min(limit, len(shown))
    for line in lines:
        console.print(_indented(line, width=console.width), highlight=False, soft_wrap=True)
    if hidden > 0:
        figures = "figure" if hidden == 1 else "figures"
        console.print(Text(f"   ({hidden} more {figures} with -v, --json or --markdown)", style="dim"))
    if r.error:
        console.print(Text(f"   {r.error}", style="red"))
    if (verbose or not r.passed) and r.outcome.details:
        details = r.outcome.details if verbose else r.outcome.details[:12]
        for line in details:
            console.print(_indented(line, style=None if r.passed else "red", width=console.width),
                          highlight=False, soft_wrap=True)
        if len(details) < len(r.outcome.details):
            more = len(r.outcome.details) - len(details)
            console.print(Text(f"   ... {more} more (see --json)", style="dim"))


def _indented(line: str, style: str | None = None, width: int = 80) -> Text:
    """``line`` wrapped to ``width`` columns under a three-space indent (no trailing blanks)."""
    wrapped = textwrap.fill(line, width=width, initial_indent="   ", subsequent_indent="   ",
                            break_on_hyphens=False) or "   "
    return Text(wrapped, style=style or "")
