"""``exactlearn transformer``: report, verdict, exit codes, JSON, 80 columns."""

from __future__ import annotations

import json

from exactlearn.cli import main
from exactlearn.transformer import Transformer


def _run(capsys, *argv):
    rc = main(["transformer", *argv])
    return rc, capsys.readouterr().out


def test_report_and_json(capsys, tmp_path):
    out_json = tmp_path / "r.json"
    rc, out = _run(capsys, "--d", "2", "--heads", "2", "--width", "3", "--seed", "1", "--json", str(out_json))
    assert rc == 0, out
    assert "EXACT" in out and "1 attention" in out
    lines = out.splitlines()
    log_row = next(line.split() for line in lines if "queries in the oracle's log" in line)
    assert log_row[-3] == log_row[-2] and log_row[-1] == "yes"  # the log's count equals the learner's
    assert max(len(line.rstrip()) for line in lines) <= 80
    data = json.loads(out_json.read_text())
    assert data["verdict"] == "EXACT"
    assert data["recovery"]["queries"] == data["oracle_log"]["calls"]


def test_model_file_and_bound(capsys, tmp_path):
    path = tmp_path / "m.json"
    Transformer.random(3, 1, 2, seed=4).save(path)
    rc, out = _run(capsys, "--model", str(path), "--heads-bound", "2")
    assert rc == 0 and "H0 = 2" in out


def test_refusal_exits_1(capsys):
    rc, out = _run(capsys, "--d", "3", "--heads", "2", "--max-length", "6")
    assert rc == 1 and "REFUSED" in out and "PER_HEAD_SPLIT" in out


def test_bad_input_exits_2(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    rc = main(["transformer", "--model", str(bad)])
    captured = capsys.readouterr()
    assert rc == 2 and "error" in captured.err and not captured.out  # errors go to stderr
    try:
        main(["transformer", "--d", "0"])
    except SystemExit as exc:
        assert exc.code == 2
    else:  # pragma: no cover
        raise AssertionError("argparse accepted --d 0")


def test_residual_flag(capsys):
    rc, out = _run(capsys, "--d", "2", "--heads", "2", "--width", "3", "--residual")
    assert rc == 0 and "0 residual" in out and "EXACT" in out
