"""The exactlearn command: report, JSON, exit codes, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from exactlearn import MultiHeadAttention, paper_query_count
from exactlearn.cli import main


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr().out
    return code, out


def test_recover_default_is_exact(capsys):
    code, out = run(["recover"], capsys)
    assert code == 0
    assert "EXACT" in out
    assert f"4Hd^2-2H+1 = {paper_query_count(3, 2)}" in out
    assert "2H+1 = 5" in out


def test_recover_with_bound_lean_verify_and_json(tmp_path, capsys):
    out_file = tmp_path / "out.json"
    code, out = run(["recover", "--d", "2", "--heads", "2", "--heads-bound", "3", "--schedule", "lean",
                     "--verify", "4", "--json", str(out_file)], capsys)
    assert code == 0 and "EXACT" in out
    data = json.loads(out_file.read_text())
    assert data["exact"] is True and data["verdict"] == "EXACT"
    rec = data["recovery"]
    assert rec["num_heads"] == 2 and rec["heads_bound"] == 3
    assert rec["formula"] == paper_query_count(2, 3) and rec["lean_formula"] == rec["planned"]
    # the oracle's own log: schedule queries plus the separately reported verification queries
    assert data["oracle_log"]["queries"] == rec["queries"] + rec["verification_queries"] == rec["planned"] + 4
    assert MultiHeadAttention.from_dict(rec["model"]) == MultiHeadAttention.from_dict(data["truth"]).canonical()


def test_recover_from_model_file(tmp_path, capsys):
    path = tmp_path / "m.json"
    code, _ = run(["random-model", "--d", "2", "--heads", "3", "--seed", "4", "-o", str(path)], capsys)
    assert code == 0
    code, out = run(["recover", "--model", str(path)], capsys)
    assert code == 0 and "EXACT" in out and "H = 3 (known)" in out


def test_wrong_bound_fails_with_exit_1(capsys):
    code, out = run(["recover", "--d", "2", "--heads", "3", "--heads-bound", "2"], capsys)
    assert code == 1
    assert "FAILED: InconsistentAnswersError" in out


def test_bad_model_file_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"heads": [{"exp_W": [["0"]], "v": ["1"]}]}))
    code, out = run(["recover", "--model", str(path)], capsys)
    assert code == 2
    assert "error:" in out and "not positive" in out
    code, out = run(["recover", "--model", str(tmp_path / "missing.json")], capsys)
    assert code == 2 and "cannot read model file" in out


def test_argument_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["recover", "--d", "0"])
    assert exc.value.code == 2
    assert "expected a positive integer" in capsys.readouterr().err


def test_quiet_prints_only_the_verdict(capsys):
    code, out = run(["recover", "--d", "1", "--heads", "2", "--quiet"], capsys)
    assert code == 0 and out.strip() == "EXACT"


def test_console_script_entry_point():
    # the installed command and `python -m exactlearn` are the same program
    result = subprocess.run([sys.executable, "-m", "exactlearn", "recover", "--d", "2", "--heads", "1", "--quiet"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "EXACT"
