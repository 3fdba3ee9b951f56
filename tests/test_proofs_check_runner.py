"""The runner and its manifest: every claim gets a row, and every output gives one verdict."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

import proofs_check.claims as claims_package
from proofs_check.claims import MANIFEST, all_claims, load_claims
from proofs_check.cli import main
from proofs_check.registry import Claim, Outcome, Settings
from proofs_check.runner import exit_code, render_table, run_claims

ROOT = Path(__file__).resolve().parents[1]


def test_the_manifest_lists_every_claim_module():
    """Nothing is discovered: the manifest is the list, and it names every claim module there is."""
    files = sorted(p.stem for p in Path(claims_package.__file__).parent.glob("c[0-9][0-9]_*.py"))
    assert list(MANIFEST) == files
    assert [c.module for c in all_claims()] == list(MANIFEST)
    assert len({c.key for c in all_claims()}) == len(MANIFEST)


def test_an_entry_that_cannot_be_loaded_is_a_fail_row():
    claims = load_claims(["c01_exact_recovery", "c99_no_such_claim", "chain_check"])
    report = run_claims(Settings(), claims[1:])
    assert [r.status for r in report.results] == ["FAIL", "FAIL"]
    assert "cannot be imported" in report.results[0].error and "defines no CLAIM" in report.results[1].error
    assert [r.number for r in report.results] == ["99", "chain_check"]
    assert exit_code(report) == 1


def _mixed() -> list[Claim]:
    def fine(settings):
        return Outcome(True, "nothing", {"answer": 1})

    def crash(settings):
        raise ZeroDivisionError("injected")

    def nothing(settings):
        return None

    return [Claim("fine", "Fine claim", "-", "test", fine),
            Claim("crash", "Crashing claim", "-", "test", crash),
            Claim("nothing", "No verdict", "-", "test", nothing)]


def test_json_table_and_exit_code_come_from_one_summary():
    report = run_claims(Settings(), _mixed())
    summary = report.summary()
    data = json.loads(report.to_json())
    buffer = io.StringIO()
    render_table(Console(file=buffer, width=80, color_system=None), report)
    table = buffer.getvalue()
    assert (summary.verdict, summary.passed, summary.total) == ("FAIL", 1, 3)
    assert (data["result"], data["passed"], data["claims passed"]) == ("FAIL", False, "1/3")
    assert [(c["key"], c["result"]) for c in data["claims"]] == [("fine", "PASS"), ("crash", "FAIL"),
                                                                 ("nothing", "FAIL")]
    assert "FAIL: 1/3 claims pass" in table and "**FAIL**: 1/3 claims pass" in report.to_markdown()
    rows = re.findall(r"│ +(\S+) │ (.+?) +│ +(PASS|FAIL) +│", table)
    assert [(key, status) for key, _, status in rows] == [("fine", "PASS"), ("crash", "FAIL"),
                                                          ("nothing", "FAIL")]
    assert exit_code(report) == 1
    assert "no verdict" in data["claims"][2]["error"]


def test_a_claim_without_a_result_is_a_fail_row():
    """A runner that lost a row still reports the claim, as FAIL (the manifest cannot shrink)."""
    report = run_claims(Settings(), _mixed()[:1])
    report.claims.append(_mixed()[1])  # asked for, no result
    summary = report.summary()
    assert summary.verdict == "FAIL" and summary.missing == ("crash",) and exit_code(report) == 1
    buffer = io.StringIO()
    render_table(Console(file=buffer, width=80, color_system=None), report)
    assert "(no result)" in buffer.getvalue() and report.to_dict()["missing claims"] == ["crash"]


def test_a_crashing_check_is_a_fail_row_not_a_traceback(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr("proofs_check.cli.all_claims", lambda: _mixed()[:2])
    path = tmp_path / "failing.json"
    code = main(["--json", str(path)])
    out = capsys.readouterr().out
    report = json.loads(path.read_text())
    assert code == 1
    ok, crashed = report["claims"]
    assert crashed["result"] == "FAIL" and crashed["error"] == "ZeroDivisionError: injected"
    assert ok["result"] == "PASS"
    assert "ZeroDivisionError: injected" in out and "Traceback" not in out


def test_run_claims_rejects_a_non_boolean_verdict():
    claim = Claim("bad", "Bad", "-", "test", lambda s: Outcome("yes", "x"))  # type: ignore[arg-type]
    report = run_claims(Settings(), [claim])
    assert not report.passed and "not a bool" in report.results[0].error


def test_claim_0_checks_the_runner_it_runs_with(monkeypatch):
    """Claim 0 passes with the runner as it is, and fails when the JSON's verdict is computed apart."""
    from proofs_check import runner
    from proofs_check.claims import c00_runner

    assert c00_runner.check(Settings()).passed
    real = runner.Report.to_dict

    def optimistic(self):
        data = real(self)
        data["result"] = "PASS" if any(r.passed for r in self.results) else "FAIL"
        return data

    monkeypatch.setattr(runner.Report, "to_dict", optimistic)
    outcome = c00_runner.check(Settings())
    assert not outcome.passed and any("the JSON says PASS" in d for d in outcome.details)


@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "expected a positive integer"),
    (["--seed", "x"], "expected a non-negative integer"),
    (["--claim", "99"], "unknown claim '99'"),
    (["--quick", "--full"], "not allowed with argument"),
    (["--json", "/nonexistent-dir/r.json"], "does not exist"),
    (["--json", "/proc/x.json"], "cannot write /proc/x.json"),
])
def test_bad_arguments_exit_2_with_a_message(args, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("args", [["--json", "/proc/x.json"], ["--markdown", "{tmp}"],
                                  ["--json", "{tmp}/missing/r.json"]])
def test_unwritable_output_is_refused_before_any_claim_runs(args, tmp_path, monkeypatch, capsys):
    import proofs_check.cli as cli

    def run_claims(*a, **k):
        raise AssertionError("a claim ran before the output was checked")

    monkeypatch.setattr(cli, "run_claims", run_claims)
    with pytest.raises(SystemExit) as exc:
        main([a.format(tmp=tmp_path) for a in args])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"{args[0]}: cannot write" in err and "Traceback" not in err


def test_list_names_every_claim_and_cites_docs(capsys):
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    for claim in all_claims():
        assert claim.key in out
    assert "docs/claims.md" in out
    assert not re.search(r"issue|\.py\b|LAYOUT|ALGORITHM\.md", out)


def test_progress_lines_for_long_claims():
    from proofs_check.runner import Progress

    lines = []
    progress = Progress("claim 8", lines.append, after=0.0, every=0.0)
    settings = Settings(progress=progress)
    assert settings.map(abs, [-1, -2, -3]) == [1, 2, 3]
    assert lines[-1].startswith("  claim 8: 3/3 tasks")
    quiet = []
    Settings(progress=Progress("claim 1", quiet.append)).map(abs, [-1])
    assert quiet == []  # short claims stay quiet
