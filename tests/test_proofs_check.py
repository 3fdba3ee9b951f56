"""The proofs_check suite: a real quick run and its outputs.

The quick suite runs once, as a subprocess exactly as a user runs it
(``COLUMNS=80 python -m proofs_check --quick ... | cat``), in a module-scoped
fixture; the tests read its table, JSON and Markdown. The runner and its
manifest: tests/test_proofs_check_runner.py; the sandbox:
tests/test_proofs_check_sandbox.py; injected failures, claim by claim:
tests/test_proofs_check_claims.py; the self-test: tests/test_proofs_check_selftest.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import exactlearn
from proofs_check.claims import all_claims
from proofs_check.cli import main

ROOT = Path(__file__).resolve().parents[1]
OWN_CLAIMS = ["runner", "exact-recovery", "query-count", "max-length", "upper-bound", "canonical-form",
              "wrong-bound", "symbolic-lemmas", "probability-one", "independent-check", "number-fields"]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One real ``python -m proofs_check --quick`` run: exit code, table, JSON, Markdown."""
    out = tmp_path_factory.mktemp("quick")
    cmd = [sys.executable, "-m", "proofs_check", "--quick", "--seed", "0",
           "--json", str(out / "report.json"), "--markdown", str(out / "report.md")]
    # proofs_check runs from the clone (it is not installed): the clone on PYTHONPATH
    env = dict(os.environ, COLUMNS="80",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(cmd, cwd=out, capture_output=True, text=True, timeout=900, env=env)
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else None
    markdown = (out / "report.md").read_text() if (out / "report.md").exists() else ""
    return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr,
            "json": report, "markdown": markdown}


def _claim(report: dict, key: str) -> dict:
    return next(c for c in report["claims"] if c["key"] == key)


# -- the real quick run ------------------------------------------------------------------------------


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_quick_run_passes_and_exits_zero(quick):
    assert quick["returncode"] == 0, quick["stdout"][-3000:] + quick["stderr"][-3000:]
    assert quick["json"]["passed"] is True and quick["json"]["result"] == "PASS"
    n = len(all_claims())
    assert f"PASS: {n}/{n} claims pass" in quick["stdout"]


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_every_claim_ran_and_has_a_row(quick):
    keys = [c["key"] for c in quick["json"]["claims"]]
    assert keys == [c.key for c in all_claims()]
    assert set(OWN_CLAIMS) <= set(keys)
    for claim in quick["json"]["claims"]:
        assert claim["result"] == "PASS", claim
        assert claim["checked"] and claim["figures"], claim["key"]
    table = quick["stdout"]
    for number in range(0, 10):
        # the column is as wide as the widest claim number (c40 makes it two digits)
        assert re.search(rf"│ +{number} │", table), number
    assert table.count("PASS") >= len(keys)


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_json_carries_versions_seed_and_command(quick):
    report = quick["json"]
    env = report["environment"]
    for package in ("Python", "python-flint", "sympy", "exactlearn"):
        assert env[package] and env[package] != "not installed"
    assert env["exactlearn"] == exactlearn.__version__
    assert report["seed"] == 0 and report["mode"] == "quick" and report["workers"] == 1
    assert report["command"].startswith("python -m proofs_check --quick --seed 0")


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_markdown_carries_the_same_figures(quick):
    md, report = quick["markdown"], quick["json"]
    assert report["command"] in md
    for name in ("python-flint", "sympy", "exactlearn"):
        assert f"| {name} | {report['environment'][name]} |" in md
    for claim in report["claims"]:
        assert f"### {claim['number']}. {claim['title']}: {claim['result']}" in md
        assert json.dumps(claim["figures"], indent=2) in md


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_measured_counts_match_the_abstract(quick):
    """Claim 2's per-cell counts come from the oracle's log; recompute the abstract's numbers here."""
    cells = _claim(quick["json"], "query-count")["figures"]["measured counts per cell"]
    assert len(cells) == 9  # d, H in 1..3
    for cell, counts in cells.items():
        d, H = (int(part.split("=")[1]) for part in cell.split(","))
        assert counts["paper"] == 4 * H * d * d - 2 * H + 1
        assert counts["lean"] == d * (2 * H + 1) + (d * d - 1) * (2 * H - 1)
    lengths = _claim(quick["json"], "max-length")["figures"]["measured max lengths"]
    assert lengths == "H=1: [3]; H=2: [5]; H=3: [7]"


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_redraws_are_reported_not_hidden(quick):
    figures = _claim(quick["json"], "query-count")["figures"]
    paper = figures["paper"]
    assert paper["redraw-free runs"] + paper["runs with redraws"] == paper["runs"]
    assert paper["redraw-free runs equal to formula"] == paper["redraw-free runs"] > 0
    if paper["runs with redraws"]:
        assert paper["extra queries on redraws"] > 0
        notes = _claim(quick["json"], "query-count")["details"]
        with_redraws = paper["runs with redraws"] + figures["lean"]["runs with redraws"]
        assert sum("redraw(s)" in line for line in notes) == with_redraws


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_degenerate_rate_falls_below_the_bound(quick):
    figures = _claim(quick["json"], "probability-one")["figures"]
    measurements = figures["measurements"]
    assert {m["B"] for m in measurements} == {1, 2, 4, 8, 16, 32}
    for m in measurements:
        assert set(m["links"]) == {"x", "a"}
        for link in m["links"].values():
            assert link["degenerate"] / link["draws"] <= link["c"] / (2 * m["B"] + 1)
            assert link["true pairing missing"] == 0
    first = sum(link["degenerate"] for m in measurements if m["B"] == 1 for link in m["links"].values())
    last = sum(link["degenerate"] for m in measurements if m["B"] == 32 for link in m["links"].values())
    assert 0 < last < first


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_models_with_equal_values_are_measured_and_learned(quick):
    """The correction: equal v is no degenerate condition.

    Such models are recovered, and the lean schedule falls back to matching queries.
    """
    measurements = _claim(quick["json"], "probability-one")["figures"]["measurements"]
    shared = [m for m in measurements if m["equal v"]]
    assert shared and len(shared) < len(measurements)
    for m in shared:
        # the old rule (two equal residues) would have flagged every link of these models
        assert all(link["equal residues (old condition)"] == link["draws"] for link in m["links"].values())
        assert m["learner"]["paper"]["wrong"] == 0 and m["learner"]["lean"]["wrong"] == 0
        assert m["learner"]["lean"]["fallback"] >= m["learner"]["lean"]["exact"]
        if m["B"] == 32:
            assert m["learner"]["paper"]["exact"] == m["learner"]["paper"]["runs"]


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_number_fields_are_learned_exactly_with_the_abstracts_counts(quick):
    """Claim 21 over Q(sqrt 2) and Q(2^(1/3)): every run exact, redraw-free counts the formula's, wrong
    bounds refused, a unit in every model."""
    figures = _claim(quick["json"], "number-fields")["figures"]
    assert figures["fields"] == "Q(sqrt 2), Q(2^(1/3))"
    for label in ("Q(sqrt 2)", "Q(2^(1/3))"):
        field = figures[label]
        known, bound = (int(n) for n in field["runs learned (H known / H0 >= H)"].split(" / "))
        assert known >= 4 and bound == 2
        assert field["exact (== and sympy)"] == f"{known + bound}/{known + bound}"
        assert field["longest query == 2H+1 (H0 for H)"] == f"{known + bound}/{known + bound}"
        clean = field["redraw-free runs == 4Hd^2-2H+1 (H0 for H)"].split("/")
        assert clean[0] == clean[1] != "0"
        assert field["H0 < H rejected"] == "2/2"
        runs = known + bound + 2  # and two told H0 < H
        assert field["models with a unit exp(W) entry (norm +-1)"] == f"{runs}/{runs}"
    assert figures["evaluator control (hand values, exactlearn arithmetic off)"] == "passed"


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_symbolic_lemmas_cover_both_link_kinds(quick):
    lemmas = [r["lemma"] for r in _claim(quick["json"], "symbolic-lemmas")["figures"]["lemmas"]]
    for kind in ("x", "a"):
        assert [name for name in lemmas if name.startswith(f"C (shared {kind},")] == \
            [f"C (shared {kind}, d={d})" for d in (1, 2, 3)]
        assert any(name.startswith(f"E (shared {kind},") for name in lemmas)
    assert any(name.startswith("C' ") for name in lemmas)
    assert any(name.startswith("D (chain, d=3") for name in lemmas)


# -- the same claims through a process pool give the same figures ------------------------------------


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_workers_give_the_same_figures(quick, tmp_path, capsys):
    path = tmp_path / "w2.json"
    assert main(["--claim", "exact-recovery", "--workers", "2", "--json", str(path)]) == 0
    capsys.readouterr()
    pooled = json.loads(path.read_text())
    assert pooled["workers"] == 2
    assert _claim(pooled, "exact-recovery")["figures"] == _claim(quick["json"], "exact-recovery")["figures"]


# -- the JSON and the printed table say the same ------------------------------------------------------


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_the_json_and_the_table_agree(quick):
    """One summary gives both: the verdict, the counts and every row's status."""
    report, table = quick["json"], quick["stdout"]
    rows = re.findall(r"│ +(\d+) │ (.+?) +│ +(PASS|FAIL) +│ +[\d.]+ │", table)
    assert [(n, status) for n, _, status in rows] == [(c["number"], c["result"]) for c in report["claims"]]
    assert [title.strip() for _, title, _ in rows] == [c["title"] for c in report["claims"]]
    passed = sum(c["result"] == "PASS" for c in report["claims"])
    assert report["claims passed"] == f"{passed}/{len(report['claims'])}"
    assert f"{report['result']}: {report['claims passed']} claims pass" in table
    assert report["missing claims"] == [] and (quick["returncode"] == 0) == (report["result"] == "PASS")


# -- output for people: 80 columns, reproducible figures, progress ---------------------------------------


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_quick_output_fits_80_columns(quick):
    lines = quick["stdout"].splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "checked:" in quick["stdout"]
    assert "statement:" not in quick["stdout"]  # the full statement comes with -v


@pytest.mark.slow  # reads the quick run (the module fixture: about 35 s)
def test_the_same_seed_gives_the_same_figures(quick, tmp_path, capsys):
    path = tmp_path / "again.json"
    assert main(["--claim", "symbolic-lemmas", "--claim", "generic-certificate", "--json", str(path)]) == 0
    capsys.readouterr()
    again = json.loads(path.read_text())
    for key in ("symbolic-lemmas", "generic-certificate"):
        assert _claim(again, key)["figures"] == _claim(quick["json"], key)["figures"]
    assert "seconds" not in json.dumps(_claim(again, "generic-certificate")["figures"])


# -- examples in docstrings and in docs/reproduce.md run ---------------------------------------------


@pytest.mark.parametrize("name", sorted(
    info.name for info in __import__("pkgutil").walk_packages(
        [str(ROOT / "proofs_check")], prefix="proofs_check.") if not info.name.endswith("__main__")))
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, name


@pytest.mark.parametrize("doc", ["reproduce.md", "claims.md"])
def test_python_examples_in_docs_print_what_they_say(doc, capsys):
    text = (ROOT / "docs" / doc).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    for block in blocks:
        expected = "\n".join(line[2:] for line in block.splitlines() if line.startswith("# "))
        exec(compile(block, doc, "exec"), {})
        assert capsys.readouterr().out.strip() == expected.strip()
