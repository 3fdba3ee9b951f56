"""One report style across the commands: a facts header, rich tables, the verdict panel, 80 columns.

``exactlearn recover``, ``transformer`` and ``certify`` at 80 columns and narrower;
``exactlearn approx``'s header, panel and progress (its figures run in the slow test of
test_cli.py); messages a command-line user can act on.
"""

from __future__ import annotations

import json

import pytest

from exactlearn import MultiHeadAttention
from exactlearn.cli import main
from exactlearn.report import matrix_text
from exactlearn.transformer import Transformer

COMMANDS = {
    "recover": ["recover", "--seed", "1"],
    "transformer": ["transformer", "--d", "2", "--heads", "2", "--width", "3", "--seed", "1"],
    "certify": ["certify", "--d", "2", "--heads", "2"],
}


def _run(argv, capsys, monkeypatch, columns=80):
    monkeypatch.setenv("COLUMNS", str(columns))
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _header(out: str) -> list[str]:
    """The facts under the command's name: the indented lines before the first table."""
    lines = out.splitlines()
    body = []
    for line in lines[1:]:
        if not line.startswith("  "):
            break
        body.append(line)
    return body


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_the_same_shape_and_fits(command, columns, capsys, monkeypatch):
    code, out, _ = _run(COMMANDS[command], capsys, monkeypatch, columns)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].strip() == f"exactlearn {command}"
    header = _header(out)
    keys = [line.split()[0] for line in header if line[2] != " "]
    assert keys[:1] == (["model"] if command != "certify" else ["sizes"]) and "learner" in keys
    assert [line for line in lines if len(line.rstrip()) > columns] == []
    assert "\u2026" not in out  # no cell cut short
    assert any(line.startswith("╭") and " verdict " in line for line in lines)  # the panel
    assert any(("EXACT" if command != "certify" else "CERTIFIED") in line and line.startswith("│")
               for line in lines)
    assert "d = 2" in out or "d = 3" in out
    assert "d=2," not in out.split("verdict")[0]  # `d = 3` style before the verdict (which quotes learn())


@pytest.mark.parametrize("command", COMMANDS)
def test_the_header_never_breaks_a_parenthesis_at_80_columns(command, capsys, monkeypatch):
    argv = COMMANDS[command] + (["--height", "1000"] if command == "recover" else [])
    _, out, _ = _run(argv, capsys, monkeypatch)
    assert len(_header(out)) >= 2  # the facts: indented, one key a line
    for line in _header(out):
        assert line.count("(") == line.count(")"), line


def test_the_header_of_an_affine_or_number_field_model_keeps_parentheses_whole(tmp_path, capsys, monkeypatch):
    path = tmp_path / "affine.json"
    MultiHeadAttention.random(3, 2, seed=3, affine=True).save(path)
    for argv in (["recover", "--model", str(path)], ["recover", "--d", "2", "--field", "a^3 - a - 1"]):
        _, out, _ = _run(argv, capsys, monkeypatch)
        assert len(_header(out)) >= 3
        for line in _header(out):
            assert line.count("(") == line.count(")") and len(line.rstrip()) <= 80, line


def test_the_transformer_report_has_a_heads_table(capsys, monkeypatch):
    truth = Transformer.random(2, 2, 3, seed=1).canonical()
    _, out, _ = _run(COMMANDS["transformer"], capsys, monkeypatch)
    lines = out.splitlines()
    assert any(line.startswith("Canonical heads: ground truth and recovered") for line in lines)
    for exp_W in truth.heads:  # every row of every head: once as the truth, once as recovered
        for row in matrix_text(exp_W).splitlines():
            assert sum(row in line for line in lines) == 2, row
    assert sum(line.rstrip().endswith("yes") and "recovered" in line for line in lines) == len(truth.heads)
    for row in ("1 attention (odd part)", "queries in the oracle's log", "fresh sequences equal"):
        assert any(row in line and line.rstrip().endswith("yes") for line in lines), row


def test_the_transformer_report_marks_a_wrong_model(capsys, monkeypatch):
    # a learner that returns another Transformer: the heads table says no, the panel WRONG, exit 1
    import exactlearn.transformer.cli as tcli

    real = tcli.learn_transformer

    def wrong(oracle, d, **kwargs):
        rec = real(oracle, d, **kwargs)
        other = Transformer.random(d, 2, 3, seed=5)
        rec.model, rec.canonical = other, other.canonical()
        return rec

    monkeypatch.setattr(tcli, "learn_transformer", wrong)
    code, out, _ = _run(COMMANDS["transformer"], capsys, monkeypatch)
    assert code == 1 and "WRONG" in out
    assert any("canonical forms equal" in line and line.rstrip().endswith("NO") for line in out.splitlines())
    assert not any("recovered" in line and line.rstrip().endswith("yes") for line in out.splitlines())


@pytest.mark.parametrize("columns", [80, 60])
def test_certify_keeps_each_key_beside_its_value(columns, capsys, monkeypatch):
    _, out, _ = _run(COMMANDS["certify"] + ["--list"], capsys, monkeypatch, columns)
    lines = out.splitlines()
    for key in ("configurations", "links", "polynomials", "all nonzero", "degrees", "reasons", "exact"):
        line = next(line for line in lines if line.startswith(f"  {key} "))
        assert line[len(key) + 2:].strip(), key  # the value starts on the key's line
    assert any(line.startswith("  deg ") and "[" in line for line in lines)  # --list: one polynomial a line


def test_recover_points_a_transformer_file_to_its_command(tmp_path, capsys, monkeypatch):
    path = tmp_path / "t.json"
    Transformer.random(2, 1, 2, seed=0).save(path)
    code, out, err = _run(["recover", "--model", str(path)], capsys, monkeypatch)
    assert code == 2 and out == ""
    assert f"exactlearn transformer --model {path}" in " ".join(err.split())


def test_transformer_points_an_attention_file_to_recover(tmp_path, capsys, monkeypatch):
    path = tmp_path / "m.json"
    MultiHeadAttention.random(2, 1, seed=0).save(path)
    code, out, err = _run(["transformer", "--model", str(path)], capsys, monkeypatch)
    assert code == 2 and out == ""
    assert f"exactlearn recover --model {path}" in " ".join(err.split())


@pytest.mark.parametrize("command", ["recover", "transformer"])
def test_json_errors_name_the_file(command, tmp_path, capsys, monkeypatch):
    path = tmp_path / "broken.json"
    path.write_text("{")
    code, out, err = _run([command, "--model", str(path)], capsys, monkeypatch)
    text = " ".join(err.split())  # the message is wrapped at 80 columns, where depends on the path's length
    assert code == 2 and out == "" and str(path) in text and "not valid JSON" in text


def test_a_refusal_in_the_report_gives_the_command_line_remedy(capsys, monkeypatch):
    import exactlearn.cli as cli
    from exactlearn.errors import RecoveryError
    from exactlearn.limits import lift

    def refuse(*args, **kwargs):
        raise RecoveryError(f"the answer to query 3 has 10^7 bits; {lift('learn_seconds')}")

    monkeypatch.setattr(cli, "learn", refuse)
    for argv in (["recover"], ["recover", "--quiet"]):
        code, out, _ = _run(argv, capsys, monkeypatch)
        assert code == 1 and "--limit learn_seconds=..." in " ".join(out.replace("│", " ").split())
        assert "Limits(" not in out


def test_size_errors_give_the_command_line_remedy(capsys, monkeypatch):
    for argv, flag in ((["recover", "--d", "40"], "--limit d="), (["transformer", "--d", "40"], "--limit d="),
                       (["certify", "--heads", "9"], "--limit certify_heads=")):
        code, out, err = _run(argv, capsys, monkeypatch)
        assert code == 2 and flag in err and "Limits(" not in err, (argv, err)


def test_singular_counts(tmp_path, capsys, monkeypatch):
    path = tmp_path / "m.json"
    _, out, _ = _run(["random-model", "--d", "2", "--heads", "1", "-o", str(path)], capsys, monkeypatch)
    assert "(d = 2, 1 head)" in " ".join(out.split())
    from exactlearn.validate import counted

    assert [counted(n, "pole") for n in (0, 1, 2)] == ["0 poles", "1 pole", "2 poles"]


def test_transformer_shows_progress_without_a_terminal(capsys, monkeypatch):
    import exactlearn.report as report

    monkeypatch.setattr(report, "PROGRESS_LINE_SECONDS", 0.0)
    monkeypatch.setattr(report.QueryProgress.__init__, "__defaults__", (0.0,))
    code, out, err = _run(COMMANDS["transformer"], capsys, monkeypatch)
    assert code == 0 and "learning: " in err and " queries, " in err
    assert "learning:" not in out
    data = [line for line in err.splitlines() if line.startswith("learning: ")]
    assert int(data[-1].split()[1]) > 0


def test_approx_header_progress_and_panel(capsys, monkeypatch):
    # the figures are replaced by stubs: this checks the frame (header, progress, panel), not the figures
    import exactlearn.demos.approx as approx

    def guided(seeds, progress=None):
        for seed in seeds:
            for kind in ("random", "pilot", "model"):
                progress(seed, kind)
        return []

    monkeypatch.setattr(approx, "_print_sweeps", lambda *a: True)
    monkeypatch.setattr(approx, "_print_refusal", lambda *a: True)
    monkeypatch.setattr(approx, "guided_constants", guided)
    code, out, err = _run(["approx", "--json", "/dev/null"], capsys, monkeypatch)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].strip() == "exactlearn approx" and any(line.startswith("  oracle ") for line in lines)
    assert any(line.startswith("│") and "all checks hold" in line for line in lines)
    assert "model 1: model run done" in err and "choosing configurations: 2 models" in err
    assert [line for line in lines + err.splitlines() if len(line.rstrip()) > 80] == []


def test_every_command_json_is_unaffected(tmp_path, capsys, monkeypatch):
    out_file = tmp_path / "t.json"
    code, _, _ = _run(COMMANDS["transformer"] + ["--json", str(out_file)], capsys, monkeypatch)
    data = json.loads(out_file.read_text())
    assert code == 0 and data["verdict"] == "EXACT"
    assert data["recovery"]["queries"] == data["oracle_log"]["calls"]
