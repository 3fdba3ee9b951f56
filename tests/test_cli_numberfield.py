"""The exactlearn command over a number field: --field, --root, models with a field, 80 columns."""

from __future__ import annotations

import json

import pytest

from exactlearn import MultiHeadAttention, NumberField, paper_query_count
from exactlearn.cli import main


def run(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("argv", [
    ["--field", "a^2 - 2", "--root", "1.414", "--d", "2", "--heads", "2"],
    ["--field", "a^3 - 2", "--d", "3", "--heads", "1", "--seed", "2"],
    ["--field", "a^2 - 2", "--root", "1,2", "--d", "2", "--heads", "2", "--schedule", "lean"],
])
def test_recover_over_a_number_field_is_exact_in_80_columns(monkeypatch, capsys, argv):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(["recover", *argv], capsys)
    assert code == 0 and "EXACT" in out and "random over Q(a)" in out
    assert not [line for line in out.splitlines() if len(line.rstrip()) > 80]
    assert "exp(W_h)" in out and " a" in out  # entries in the field's notation


def test_random_model_writes_the_field_and_recover_reads_it(tmp_path, capsys):
    path = tmp_path / "k.json"
    code, _, _ = run(["random-model", "--field", "a^2 - 2", "--root", "1.414", "--d", "2", "--heads", "2",
                      "-o", str(path)], capsys)
    assert code == 0
    model = MultiHeadAttention.load(path)
    assert model.field == NumberField("a^2 - 2", root=1.414)
    out_json = tmp_path / "out.json"
    code, out, _ = run(["recover", "--model", str(path), "--json", str(out_json)], capsys)
    assert code == 0 and "EXACT" in out
    data = json.loads(out_json.read_text())
    assert data["oracle_log"]["queries"] == data["recovery"]["queries"] == paper_query_count(2, 2)
    assert MultiHeadAttention.from_dict(data["recovery"]["model"]) == model.canonical()


@pytest.mark.parametrize("argv, why", [
    (["recover", "--field", "a^2 - 4"], "reducible over Q"),
    (["recover", "--field", "a^2 - 2"], "2 real roots"),
    (["recover", "--field", "a^2 - 2", "--root", "0"], "isolates no real root"),
    (["recover", "--root", "1.4"], "give --field too"),
    (["random-model", "--field", "a^2 + 1"], "no real root"),
])
def test_bad_fields_are_refused_with_exit_code_2(capsys, argv, why):
    code, _, err = run(argv, capsys)
    assert code == 2 and why in " ".join(err.split())


def test_field_options_conflict_with_a_model_file(tmp_path, capsys):
    path = tmp_path / "m.json"
    MultiHeadAttention.random(1, 1).save(path)
    code, _, err = run(["recover", "--model", str(path), "--field", "a^3 - 2"], capsys)
    assert code == 2 and "--field" in err and "conflicts with --model" in " ".join(err.split())
