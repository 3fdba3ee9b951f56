"""The exactlearn command: report, JSON, exit codes, clear errors, 80-column output, progress."""

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


def run_both(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def long_lines(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if len(line.rstrip()) > width]


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
    truth = MultiHeadAttention.from_dict(data["truth"])
    assert MultiHeadAttention.from_dict(rec["model"]) == truth.canonical()


def test_recover_from_model_file(tmp_path, capsys):
    path = tmp_path / "m.json"
    code, _ = run(["random-model", "--d", "2", "--heads", "3", "--seed", "4", "-o", str(path)], capsys)
    assert code == 0
    code, out = run(["recover", "--model", str(path)], capsys)
    assert code == 0 and "EXACT" in out and "H = 3 (known)" in out


@pytest.mark.parametrize("columns, d", [(80, 2), (80, 3), (60, 3)])
def test_recover_a_model_file_with_biases_shows_w_and_c0(tmp_path, monkeypatch, capsys, columns, d):
    from exactlearn.report import matrix_text

    monkeypatch.setenv("COLUMNS", str(columns))
    truth = MultiHeadAttention.random(d, 2, seed=3, affine=True)
    path, out_file = tmp_path / "m.json", tmp_path / "out.json"
    truth.save(path)
    code, out = run(["recover", "--model", str(path), "--json", str(out_file)], capsys)
    assert code == 0 and "EXACT" in out and "affine attention" in out and long_lines(out, columns) == []
    formula = paper_query_count(d, 2, affine=True)
    assert f"4Hd(d+1)-2H+1 = {formula}" in out and "exp(w_h)" in out
    assert f"truth c0 = {truth.c0}" in out and f"recovered c0 = {truth.c0}" in out and "(equal)" in out
    assert "…" not in out  # no cell cut short
    lines = out.splitlines()
    for head in truth.heads:  # exp(w_h) shown for the truth and for the recovery: as a column, or below
        column = matrix_text([[e] for e in head.exp_w or ()]).splitlines()
        below = "exp(w_h) = (" + ", ".join(str(e) for e in head.exp_w or ()) + ")"
        assert all(sum(row in line for line in lines) == 2 for row in column) or out.count(below) == 2
    data = json.loads(out_file.read_text())
    assert data["recovery"]["affine"] is True and data["recovery"]["c0"] == str(truth.c0)
    assert data["oracle_log"]["queries"] == data["recovery"]["queries"]
    assert MultiHeadAttention.from_dict(data["recovery"]["model"]) == truth.canonical()


def test_wrong_bound_fails_with_exit_1(capsys):
    code, out = run(["recover", "--d", "2", "--heads", "3", "--heads-bound", "2"], capsys)
    assert code == 1
    assert "FAILED: InconsistentAnswersError" in out


def test_bad_model_file_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"heads": [{"exp_W": [["0"]], "v": ["1"]}]}))
    code, out, err = run_both(["recover", "--model", str(path)], capsys)
    assert code == 2 and out == ""
    assert "error:" in err and "not positive" in err
    code, out, err = run_both(["recover", "--model", str(tmp_path / "missing.json")], capsys)
    assert code == 2 and out == "" and "cannot read model file" in err


@pytest.mark.parametrize("argv", [
    ["random-model", "-o", "{missing}/x.json"],
    ["recover", "--d", "1", "--heads", "1", "--json", "{missing}/r.json"],
    ["certify", "--d", "1", "--heads", "1", "--json", "{missing}/c.json"],
    ["recover", "--d", "1", "--heads", "1", "--json", "{tmp}"],
    # issue 25: every subcommand checks its output before the first query
    ["transformer", "--d", "2", "--heads", "1", "--width", "1", "--json", "{missing}/t.json"],
    ["transformer", "--d", "2", "--heads", "1", "--width", "1", "--json", "/proc/t.json"],
    ["random-model", "-o", "/proc/x.json"],
    ["certify", "--d", "1", "--heads", "1", "--json", "/proc/c.json"],
])
def test_unwritable_output_is_refused_before_any_work(tmp_path, capsys, argv):
    argv = [a.format(missing=tmp_path / "missing", tmp=tmp_path) for a in argv]
    code, out, err = run_both(argv, capsys)
    assert code == 2
    assert out == ""  # refused before the run: no report, no header
    assert "error: cannot write" in err and "Traceback" not in err
    assert not (tmp_path / "missing").exists()


def test_model_file_conflicts_with_random_model_options(tmp_path, capsys):
    path = tmp_path / "m.json"
    assert main(["random-model", "--d", "2", "--heads", "3", "-o", str(path)]) == 0
    capsys.readouterr()
    code, out, err = run_both(["recover", "--model", str(path), "--heads", "3", "--d", "5"], capsys)
    assert code == 2 and out == ""
    assert "--d and --heads" in err and "conflict with --model" in err
    code, out, err = run_both(["recover", "--model", str(path), "--height", "7"], capsys)
    assert code == 2 and "--height describes a random model" in err
    # --seed (the learner's seed) and --heads-bound do not describe the model: accepted
    code, out, err = run_both(["recover", "--model", str(path), "--seed", "3", "--heads-bound", "4"], capsys)
    assert code == 0 and "EXACT" in out


def test_user_errors_print_no_traceback_from_the_command_line(tmp_path):
    for argv in (["random-model", "-o", str(tmp_path / "no" / "x.json")],
                 ["recover", "--json", str(tmp_path / "no" / "r.json")],
                 ["recover", "--model", str(tmp_path / "missing.json")]):
        result = subprocess.run([sys.executable, "-m", "exactlearn", *argv], capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 2, (argv, result.stderr)
        assert "Traceback" not in result.stderr and result.stderr.startswith("error:"), result.stderr


def test_interrupt_is_a_line_not_a_traceback(monkeypatch, capsys):
    import exactlearn.cli as cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "learn", interrupted)
    code, out, err = run_both(["recover", "--d", "1", "--heads", "1"], capsys)
    assert code == 130 and err.strip() == "interrupted"


def test_header_explains_height(capsys):
    code, out = run(["recover", "--d", "1", "--heads", "1", "--height", "7"], capsys)
    assert code == 0 and "entries p/q with |p|, q <= height = 7" in " ".join(out.split())


@pytest.mark.parametrize("columns, argv", [
    (80, ["recover"]),
    (80, ["recover", "--d", "4", "--heads", "3", "--seed", "2", "--height", "1000"]),
    # at 60 columns the matrices go under the table
    (60, ["recover", "--d", "4", "--heads", "1", "--seed", "2", "--height", "1000"]),
])
def test_recover_report_fits_the_width_and_keeps_matrix_rows_whole(monkeypatch, capsys, columns, argv):
    from exactlearn.report import matrix_text

    monkeypatch.setenv("COLUMNS", str(columns))
    code, out = run(argv, capsys)
    assert code == 0 and "EXACT" in out
    assert long_lines(out, columns) == []
    args = dict(zip(argv[1::2], argv[2::2], strict=True))
    truth = MultiHeadAttention.random(int(args.get("--d", 3)), int(args.get("--heads", 2)),
                                      seed=int(args.get("--seed", 0)), height=int(args.get("--height", 30)))
    lines = out.splitlines()
    for head in truth.canonical().heads:
        # every matrix row whole on one line, once for the truth and once for the recovery
        for row in matrix_text(head.exp_W).splitlines():
            assert sum(row in line for line in lines) == 2, row


@pytest.mark.slow  # runs the approximate figures in full: about a minute of CPU
def test_approx_fits_80_columns_without_truncating_numbers(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    code, out = run(["approx"], capsys)
    assert code == 0 and "all checks hold" in out
    assert "\u2026" not in out  # rich's ellipsis: a truncated cell
    assert long_lines(out, 80) == []
    assert "1.0e-40" in out and "25520.8" in out  # eps and error/eps printed whole


@pytest.mark.parametrize("where", ["{tmp}/missing/a.json", "/proc/a.json", "{tmp}"])
def test_approx_refuses_an_unwritable_json_before_running(tmp_path, capsys, where):
    with pytest.raises(SystemExit) as exc:
        main(["approx", "--json", where.format(tmp=tmp_path)])
    captured = capsys.readouterr()
    assert exc.value.code == 2 and captured.out == ""
    assert "cannot write" in captured.err


def test_approx_torch_hint_comes_first_and_keeps_the_extra_in_brackets(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    code, out = run(["approx", "--torch"], capsys)
    assert code == 2
    assert 'pip install "exactlearn[torch]"' in out
    assert "parameter error" not in out  # refused before the figures, not after a minute of them


def test_certify_reports_progress_on_stderr(monkeypatch, capsys):
    import exactlearn.cli as cli

    monkeypatch.setattr(cli, "PROGRESS_LINE_SECONDS", 0.0)  # a line on every query
    code, out, err = run_both(["certify", "--d", "1", "--heads", "2", "--no-spot-check"], capsys)
    assert code == 0 and "CERTIFIED" in out
    assert "schedule over Q(E, V): 5 of 5 queries" in err
    assert "of 5 queries" not in out  # progress only on stderr


def test_recover_progress_lines_without_a_terminal(monkeypatch, capsys):
    import exactlearn.cli as cli

    monkeypatch.setattr(cli, "PROGRESS_LINE_SECONDS", 0.0)
    monkeypatch.setattr(cli, "PROGRESS_THRESHOLD", 1)
    code, out, err = run_both(["recover", "--d", "2", "--heads", "1"], capsys)
    assert code == 0 and "EXACT" in out
    assert f"querying: {paper_query_count(2, 1)} of {paper_query_count(2, 1)} queries" in err


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
    argv = ["recover", "--d", "2", "--heads", "1", "--quiet"]
    result = subprocess.run([sys.executable, "-m", "exactlearn", *argv],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "EXACT"


@pytest.mark.parametrize("argv", [["recover", "--seed", "9" * 5000], ["recover", "--d", "9" * 5000],
                                  ["recover", "--limit", "d=" + "9" * 5000],
                                  ["transformer", "--seed", "-" + "9" * 5000]])
def test_an_integer_of_thousands_of_digits_is_refused_by_its_length(argv, capsys):
    # Python's int() refuses texts over 4300 digits with its own ValueError; argparse then said
    # "invalid int value" (false) and echoed every digit
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert "an integer of 5000 digits: at most 100 are accepted" in " ".join(err.split())
    assert "9" * 200 not in err and long_lines(err, 80) == []
