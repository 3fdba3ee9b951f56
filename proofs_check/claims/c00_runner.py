"""Claim 0: the runner reports every claim, and every output says the same.

Statement. A run of proofs_check passes (exit code 0, ``"result": "PASS"`` in
the JSON, ``PASS: n/n`` under the table) only if every claim asked for ran and
passed. A claim whose module cannot be imported, whose check raises, returns no
verdict (``None``) or a verdict that is not a bool, is a FAIL row; a claim that
has no result at all is a FAIL row too. The JSON, the Markdown, the printed
table and the exit code come from one summary and agree.

Source: this project's reproducibility rules (docs/reproduce.md, "Run the
checks"; docs/claims.md, "Every claim can fail"); not a claim of the paper.

Check. The runner of this very run (:func:`proofs_check.runner.run_claims`,
:func:`proofs_check.claims.load_claims`, the report's JSON and Markdown,
:func:`proofs_check.runner.render_table`, :func:`proofs_check.runner.exit_code`)
is run on a manifest of demonstration claims: one that passes, one that fails,
one that raises, one that returns ``None``, one that returns a verdict that is
not a bool, and a manifest entry whose module does not exist. Every entry must
have a row, in order, with the status this module expects; the JSON's verdict,
counts and rows, the table's rows and last line, the Markdown's verdict and the
exit code must all say FAIL with 1 of 6 passing. The passing claim alone must
give PASS everywhere and exit code 0.
"""

from __future__ import annotations

import io
import json

from rich.console import Console

from ..registry import Claim, Outcome, Settings

#: the demonstration manifest: (key, the status its row must have)
EXPECTED = (("demo-pass", "PASS"), ("demo-fail", "FAIL"), ("demo-raise", "FAIL"), ("demo-none", "FAIL"),
            ("demo-not-bool", "FAIL"), ("c99_no_such_claim", "FAIL"))


def _passes(settings: Settings) -> Outcome:
    return Outcome(True, "a passing demonstration claim")


def _fails(settings: Settings) -> Outcome:
    return Outcome(False, "a failing demonstration claim", details=["fails by its own judgement"])


def _raises(settings: Settings) -> Outcome:
    raise ZeroDivisionError("a demonstration claim that raises")


def _returns_none(settings: Settings) -> Outcome:
    return None  # type: ignore[return-value]


def _not_bool(settings: Settings) -> Outcome:
    return Outcome("yes", "a verdict that is not a bool")  # type: ignore[arg-type]


def demonstration() -> list[Claim]:
    """The demonstration manifest (the last entry is a module that does not exist)."""
    from . import load_claims

    checks = (_passes, _fails, _raises, _returns_none, _not_bool)
    claims = [Claim(key, key, "-", "proofs_check/claims/c00_runner.py", check, module=f"c0{i}_{key}")
              for i, ((key, _), check) in enumerate(zip(EXPECTED, checks))]
    return claims + load_claims([EXPECTED[-1][0]])


def _outputs(claims: list[Claim]) -> dict:
    """Run ``claims`` and read every output of the run."""
    from ..runner import exit_code, render_table, run_claims

    report = run_claims(Settings(), claims)
    buffer = io.StringIO()
    render_table(Console(file=buffer, width=80, force_terminal=False, color_system=None), report)
    data = json.loads(report.to_json())
    return {"rows": [(r.claim.key, r.status) for r in report.results], "json": data,
            "table": buffer.getvalue(), "markdown": report.to_markdown(), "exit code": exit_code(report)}


def _agreement(out: dict, verdict: str, passed: int, total: int, rows: list[tuple[str, str]]) -> list[str]:
    """What in ``out`` differs from the expected verdict, counts and rows."""
    problems = []
    data, line = out["json"], f"{verdict}: {passed}/{total} claims pass"
    if out["rows"] != rows:
        problems.append(f"rows {out['rows']}, expected {rows}")
    said = (data["result"], data["passed"], data["claims passed"])
    if said != (verdict, verdict == "PASS", f"{passed}/{total}"):
        problems.append(f"the JSON says {data['result']} ({data['claims passed']}), expected {verdict} "
                        f"({passed}/{total})")
    if [(c["key"], c["result"]) for c in data["claims"]] != rows:
        problems.append("the JSON's rows differ from the report's")
    if line not in out["table"]:
        problems.append(f"the table does not end with '{line}'")
    table_rows = sum(status in text for text in out["table"].splitlines() if text.startswith("│")
                     for status in ("PASS", "FAIL"))
    if table_rows != total:
        problems.append(f"the table has {table_rows} rows with a status, expected {total}")
    if f"**{verdict}**: {passed}/{total} claims pass" not in out["markdown"]:
        problems.append(f"the Markdown does not say {verdict} with {passed}/{total}")
    if out["exit code"] != (0 if verdict == "PASS" else 1):
        problems.append(f"exit code {out['exit code']} for a {verdict}")
    return problems


def check(settings: Settings) -> Outcome:
    claims = demonstration()
    mixed = _outputs(claims)
    alone = _outputs(claims[:1])
    problems = _agreement(mixed, "FAIL", 1, len(EXPECTED), list(EXPECTED))
    problems += [f"passing claim alone: {p}" for p in _agreement(alone, "PASS", 1, 1, [EXPECTED[0]])]
    errors = [c["error"] or "" for c in mixed["json"]["claims"]]
    for (key, _), error in zip(EXPECTED[2:], errors[2:]):
        if not error:
            problems.append(f"{key}: the FAIL row carries no error")
    figures = {"demonstration rows": len(mixed["rows"]), "exit code (mixed / passing)":
               f"{mixed['exit code']} / {alone['exit code']}",
               "JSON verdict (mixed / passing)": f"{mixed['json']['result']} / {alone['json']['result']}"}
    return Outcome(passed=not problems,
                   checked="a demonstration manifest (pass, fail, raise, None, not a bool, missing "
                           "module): rows, JSON, table, Markdown and exit code agree",
                   figures=figures, details=problems)


CLAIM = Claim(
    key="runner",
    title="Runner reports every claim",
    statement="A claim that cannot be imported, raises or returns no verdict is a FAIL row; the JSON, the "
              "table, the Markdown and the exit code give one verdict.",
    source="docs/reproduce.md; docs/claims.md (not a claim of the paper)",
    check=check,
)
