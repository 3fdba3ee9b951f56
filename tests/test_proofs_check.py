"""The proofs_check suite: a real quick run, its outputs, the self-test, and injected failures.

The quick suite runs once, as a subprocess exactly as a user runs it
(``COLUMNS=80 python -m proofs_check --quick ... | cat``), in a module-scoped
fixture; the other tests read its table, JSON and Markdown. The self-test
(``--self-test``) runs once too. Injected failures run single claims in-process
with a broken formula, learner or check, and must turn the exit code to 1 and
the row to FAIL.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import exactlearn
import proofs_check.library
from exactlearn import schedule
from exactlearn.transformer import step1_formula
from proofs_check.claims import all_claims
from proofs_check.cli import main
from proofs_check.registry import Claim, Outcome, Settings
from proofs_check.runner import run_claims

ROOT = Path(__file__).resolve().parents[1]
OWN_CLAIMS = ["exact-recovery", "query-count", "max-length", "upper-bound", "canonical-form", "wrong-bound",
              "symbolic-lemmas", "probability-one", "independent-check"]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One real ``python -m proofs_check --quick`` run: exit code, table, JSON, Markdown."""
    out = tmp_path_factory.mktemp("quick")
    cmd = [sys.executable, "-m", "proofs_check", "--quick", "--seed", "0",
           "--json", str(out / "report.json"), "--markdown", str(out / "report.md")]
    env = dict(os.environ, COLUMNS="80")
    done = subprocess.run(cmd, cwd=out, capture_output=True, text=True, timeout=900, env=env)
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else None
    markdown = (out / "report.md").read_text() if (out / "report.md").exists() else ""
    return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr,
            "json": report, "markdown": markdown}


def _claim(report: dict, key: str) -> dict:
    return next(c for c in report["claims"] if c["key"] == key)


# -- the real quick run ------------------------------------------------------------------------------


def test_quick_run_passes_and_exits_zero(quick):
    assert quick["returncode"] == 0, quick["stdout"][-3000:] + quick["stderr"][-3000:]
    assert quick["json"]["passed"] is True and quick["json"]["result"] == "PASS"
    n = len(all_claims())
    assert f"PASS: {n}/{n} claims pass" in quick["stdout"]


def test_every_claim_ran_and_has_a_row(quick):
    keys = [c["key"] for c in quick["json"]["claims"]]
    assert keys == [c.key for c in all_claims()]
    assert set(OWN_CLAIMS) <= set(keys)
    for claim in quick["json"]["claims"]:
        assert claim["result"] == "PASS", claim
        assert claim["checked"] and claim["figures"], claim["key"]
    table = quick["stdout"]
    for number in range(1, 10):
        # the column is as wide as the widest claim number (c40 makes it two digits)
        assert re.search(rf"│ +{number} │", table), number
    assert table.count("PASS") >= len(keys)


def test_json_carries_versions_seed_and_command(quick):
    report = quick["json"]
    env = report["environment"]
    for package in ("Python", "python-flint", "sympy", "exactlearn"):
        assert env[package] and env[package] != "not installed"
    assert env["exactlearn"] == exactlearn.__version__
    assert report["seed"] == 0 and report["mode"] == "quick" and report["workers"] == 1
    assert report["command"].startswith("python -m proofs_check --quick --seed 0")


def test_markdown_carries_the_same_figures(quick):
    md, report = quick["markdown"], quick["json"]
    assert report["command"] in md
    for name in ("python-flint", "sympy", "exactlearn"):
        assert f"| {name} | {report['environment'][name]} |" in md
    for claim in report["claims"]:
        assert f"### {claim['number']}. {claim['title']}: {claim['result']}" in md
        assert json.dumps(claim["figures"], indent=2) in md


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


def test_symbolic_lemmas_cover_both_link_kinds(quick):
    lemmas = [r["lemma"] for r in _claim(quick["json"], "symbolic-lemmas")["figures"]["lemmas"]]
    for kind in ("x", "a"):
        assert [name for name in lemmas if name.startswith(f"C (shared {kind},")] == \
            [f"C (shared {kind}, d={d})" for d in (1, 2, 3)]
        assert any(name.startswith(f"E (shared {kind},") for name in lemmas)
    assert any(name.startswith("C' ") for name in lemmas)
    assert any(name.startswith("D (chain, d=3") for name in lemmas)


def test_symbolic_chain_is_the_librarys_chain():
    """Claim 7 restates the chain without importing exactlearn; it must be the learner's chain."""
    import sympy as sp

    import proofs_check.claims.c07_symbolic_lemmas as c07

    for d in range(1, 6):
        links = range(1, d * d)
        assert [c07.link_kind(j, d) for j in links] == [schedule.link_kind(j, d) for j in links]
    prev = {"x": ((1, 0), (1, 2)), "a": ((1, 0), (2, 1))}
    cur = {"x": ((1, 0), (0, 1)), "a": ((0, 1), (1, 2))}
    for kind in ("x", "a"):
        pairs = [tuple(sp.Matrix(v) for v in pair) for pair in (prev[kind], cur[kind])]
        symbolic = c07.matching_tokens(kind, *pairs)
        expected = schedule.linked_tokens(kind, prev[kind], cur[kind])
        assert tuple(tuple(int(e) for e in v) for v in symbolic) == expected


# -- the same claims through a process pool give the same figures ------------------------------------


def test_workers_give_the_same_figures(quick, tmp_path, capsys):
    path = tmp_path / "w2.json"
    assert main(["--claim", "exact-recovery", "--workers", "2", "--json", str(path)]) == 0
    capsys.readouterr()
    pooled = json.loads(path.read_text())
    assert pooled["workers"] == 2
    assert _claim(pooled, "exact-recovery")["figures"] == _claim(quick["json"], "exact-recovery")["figures"]


# -- injected failures -----------------------------------------------------------------------------


def _run_failing(args, tmp_path, capsys) -> tuple[int, dict, str]:
    path = tmp_path / "failing.json"
    code = main([*args, "--json", str(path)])
    out = capsys.readouterr().out
    return code, json.loads(path.read_text()), out


def test_the_librarys_schedule_formulas_agree_with_the_abstract():
    """The claims use the abstract's formulas; the library's own must agree with them."""
    for d in range(1, 8):
        for H in range(1, 7):
            assert schedule.paper_query_count(d, H) == 4 * H * d * d - 2 * H + 1
            assert schedule.max_query_length(H) == 2 * H + 1
            assert schedule.lean_query_count(d, H) == d * (2 * H + 1) + (d * d - 1) * (2 * H - 1)
            assert step1_formula(d, H) == 2 * (4 * H * d * d - 2 * H + 1)  # the Transformer's step 1


def test_the_claims_use_their_own_formulas_not_the_librarys():
    import proofs_check.claims as claims_package

    for path in Path(claims_package.__file__).parent.glob("c*.py"):
        source = path.read_text()
        for name in ("paper_query_count", "max_query_length", "lean_query_count", "query_count(",
                     "step1_formula"):
            assert name not in source, (path.name, name)


def test_wrong_formula_fails_query_count(monkeypatch, tmp_path, capsys):
    import proofs_check.claims.c02_query_count as c02
    import proofs_check.claims.c04_upper_bound as c04

    monkeypatch.setitem(c02.FORMULAS, "paper", lambda d, h: 4 * h * d * d - 2 * h + 2)
    monkeypatch.setattr(c04, "abstract_count", lambda d, h: 4 * h * d * d - 2 * h + 2)
    code, report, out = _run_failing(["--claim", "query-count", "--claim", "upper-bound"], tmp_path, capsys)
    assert code == 1
    assert [c["result"] for c in report["claims"]] == ["FAIL", "FAIL"]
    assert "FAIL: 0/2 claims pass" in out
    assert any("no redraws, but the oracle logged" in line for line in report["claims"][0]["details"])


def test_wrong_length_formula_fails_max_length(monkeypatch, tmp_path, capsys):
    import proofs_check.claims.c03_max_length as c03

    monkeypatch.setattr(c03, "abstract_length", lambda h: 2 * h)
    code, report, _ = _run_failing(["--claim", "3"], tmp_path, capsys)
    assert code == 1 and report["claims"][0]["result"] == "FAIL"


def test_broken_learner_fails_recovery_and_cross_check(monkeypatch, tmp_path, capsys):
    real_learn = proofs_check.library.learn

    def broken_learn(*args, **kwargs):
        rec = real_learn(*args, **kwargs)
        first = rec.heads[0]
        wrong = dataclasses.replace(first, v=(first.v[0] + 1,) + first.v[1:])
        return dataclasses.replace(rec, heads=(wrong,) + rec.heads[1:])

    monkeypatch.setattr(proofs_check.library, "learn", broken_learn)
    argv = ["--claim", "exact-recovery", "--claim", "independent-check"]
    code, report, out = _run_failing(argv, tmp_path, capsys)
    assert code == 1
    recovery, cross = report["claims"]
    assert recovery["result"] == "FAIL" and recovery["figures"]["exact"] == 0
    assert cross["result"] == "FAIL"
    assert any("disagree" in line for line in cross["details"])
    assert "FAIL" in out


def test_learner_ignoring_a_wrong_bound_fails(monkeypatch, tmp_path, capsys):
    """A learner that retries a wrong bound with larger ones returns a model: claim 6 fails."""
    from proofs_check.faults import plant_lenient_bound

    monkeypatch.setattr(proofs_check.library, "learn", proofs_check.library.learn)
    plant_lenient_bound()
    code, report, _ = _run_failing(["--claim", "wrong-bound"], tmp_path, capsys)
    assert code == 1
    assert report["claims"][0]["figures"]["rejected with RecoveryError"] == 0


# -- opaque oracles and the independent evaluator ----------------------------------------------------


def test_opaque_oracle_carries_no_model():
    from proofs_check.oracles import model_oracle

    model = exactlearn.MultiHeadAttention.random(2, 2, seed=1)
    oracle, log = model_oracle(model)
    assert not isinstance(oracle, exactlearn.Oracle)
    assert vars(oracle) == {}
    public = [getattr(oracle, name) for name in dir(oracle) if not name.startswith("_")]
    assert not any(isinstance(value, exactlearn.MultiHeadAttention) for value in public)
    assert getattr(oracle, "target", None) is None and getattr(oracle, "model", None) is None
    rec = exactlearn.learn(oracle, 2, heads=2)
    assert rec.model == model.canonical()
    assert (log.count, rec.queries, rec.redraws, log.max_length) == (29, 29, 0, 5)


def test_independent_evaluator_imports_nothing_from_exactlearn():
    from proofs_check import independent

    tree = ast.parse(Path(independent.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert not any(alias.name.split(".")[0] == "exactlearn" for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and (node.module or "").split(".")[0] != "exactlearn", ast.dump(node)
            assert (node.module or "").split(".")[0] != "proofs_check"


def test_a_swapped_evaluator_fails_claim_9(monkeypatch):
    import sympy as sp

    from proofs_check import independent
    from proofs_check.claims.c09_independent_check import evaluator_control

    assert evaluator_control() == []

    def library_evaluation(model, tokens):
        value = exactlearn.MultiHeadAttention.from_dict(model)(tokens)
        return sp.Rational(int(value.p), int(value.q))

    monkeypatch.setattr(independent, "evaluate", library_evaluation)
    assert any("exactlearn's model evaluation" in p for p in evaluator_control())


# -- the self-test -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def self_test():
    env = dict(os.environ, COLUMNS="80")
    command = [sys.executable, "-m", "proofs_check", "--self-test"]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)


@pytest.mark.slow  # plants 16 faults, each in its own quick run: about 2 minutes of CPU
def test_self_test_catches_every_planted_fault(self_test):
    from proofs_check.selftest import FAULTS

    assert self_test.returncode == 0, self_test.stdout[-3000:] + self_test.stderr[-3000:]
    assert len(FAULTS) >= 9
    for fault in FAULTS:
        row = next(line for line in self_test.stdout.splitlines() if line.startswith(f"│ {fault.key} "))
        assert "caught" in row and not re.search("MISSED|BROKEN|NOT EXERCISED", row), row
    assert self_test.stdout.count("took effect:") == len(FAULTS)
    assert "none (control)" in self_test.stdout and "PASS: the control passes" in self_test.stdout
    # claim 50 runs in the control and catches the Transformer faults
    control = next(line for line in self_test.stdout.splitlines() if line.startswith("│ none (control) "))
    tail = self_test.stdout.splitlines()[self_test.stdout.splitlines().index(control) + 1]
    assert "50" in control + tail
    for key in ("tf-wrong-line", "tf-uncounted-verify", "tf-unpaired-step1", "tf-oracle-peek"):
        assert "50" in next(f for f in FAULTS if f.key == key).claims
        row = next(line for line in self_test.stdout.splitlines() if line.startswith(f"│ {key} "))
        assert re.search(r"│ 50 +│ caught", row), row
    assert max(len(line) for line in self_test.stdout.splitlines()) <= 80


def test_self_test_exits_1_when_a_fault_is_missed(monkeypatch, capsys):
    from proofs_check import selftest

    # a real fault, but only a claim that cannot see it runs
    unseen = dataclasses.replace(next(f for f in selftest.FAULTS if f.key == "long-query"), claims=("6",))
    results = selftest.run_self_test([unseen], parallel=1, control=False)
    assert [r["ok"] for r in results] == [False]
    selftest.render(__import__("rich.console").console.Console(width=80), results)
    assert "MISSED" in capsys.readouterr().out


def test_self_test_reports_broken_and_unexercised_plants():
    """A plant that cannot be planted, one that crashes (wrong signature) and one whose effect never
    occurs in the claims run are failures of the self-test, never catches."""
    from proofs_check import selftest
    from proofs_check.faults import SELF_TEST_CHECKS

    lenient = next(f for f in selftest.FAULTS if f.key == "lenient-bound")
    results = selftest.run_self_test([*SELF_TEST_CHECKS, dataclasses.replace(lenient, claims=("3",))],
                                     parallel=2, control=False)
    verdicts = {r["fault"]: r["verdict"] for r in results}
    assert verdicts == {"stale-target": "BROKEN PLANT", "wrong-signature": "BROKEN PLANT",
                        "lenient-bound": "NOT EXERCISED"}, results
    assert not any(r["ok"] or r["caught by"] for r in results)
    wrong = next(r for r in results if r["fault"] == "wrong-signature")
    assert any("TypeError" in why for why in wrong["why"])


def test_probe_counts_effects_and_unexpected_exceptions():
    from exactlearn.errors import InconsistentAnswersError, OracleOutputError
    from proofs_check.faults import Probe, patch

    probe = Probe()
    probe.expect("seen")

    def refuse():
        raise InconsistentAnswersError("a refusal")

    def crash():
        raise TypeError("a crash")

    def chained():
        try:
            crash()
        except TypeError as exc:
            raise OracleOutputError("the oracle raised") from exc

    for fn, error in ((refuse, InconsistentAnswersError), (crash, TypeError), (chained, OracleOutputError)):
        with pytest.raises(error):
            probe.wrap(fn.__name__, fn)()
    assert probe.missing() == ["seen"] and dict(probe.calls) == {"refuse": 1, "crash": 1, "chained": 1}
    assert [u.split(":")[0] for u in probe.unexpected] == ["crash", "chained"]
    with pytest.raises(AttributeError, match="retarget"):
        patch(exactlearn, "no_such_function", None)


def test_library_reads_redraw_reasons_and_ledger_kinds():
    from exactlearn.states import Redraw, RedrawReason
    from exactlearn.symbolic import KINDS

    reason = RedrawReason.AMBIGUOUS_PAIRING
    ambiguous = Redraw(f"configuration 3: {reason.value}", reason)
    assert proofs_check.library.is_ambiguous_pairing(ambiguous)
    assert not proofs_check.library.is_ambiguous_pairing(str(ambiguous))  # text alone decides nothing
    too_few = Redraw("configuration 1", RedrawReason.TOO_FEW_POLES)
    assert not proofs_check.library.is_ambiguous_pairing(too_few)
    assert set(proofs_check.library.HIDING_KINDS) <= set(KINDS)


def test_claim_8_finds_ambiguous_links_the_learner_did_not_redraw(monkeypatch):
    """Without the uniqueness check the learner goes past ambiguous links; claim 8 finds them in its log."""
    import proofs_check.claims.c08_probability_one as c08

    learn_module = sys.modules["exactlearn.learn"]
    real = learn_module.link_matchings
    monkeypatch.setattr(learn_module, "link_matchings", lambda *args, limit=2: real(*args, limit=limit)[:1])
    results = [c08.ambiguous_runs((i, 4)) for i in range(15)]
    assert sum(r["ambiguous"] for r in results) == 0
    assert sum(r["ambiguous links queried but not redrawn"] for r in results) > 0
    _, failures = c08.judge_ambiguous(results)
    assert any("without redrawing them" in f for f in failures)


def test_claim_8_draws_further_batches_until_an_ambiguous_pairing(monkeypatch):
    import proofs_check.claims.c08_probability_one as c08

    calls = []

    def fake(task):
        calls.append(task)
        return {"ambiguous": int(len(calls) > 3 and seen[0]), "model": task[0]}

    seen = [True]
    monkeypatch.setattr(c08, "ambiguous_runs", fake)
    results, batches = c08.ambiguous_family(Settings(seed=0), 3, 2)
    assert (batches, len(results)) == (2, 6) and [t[0] for t in calls] == list(range(6))
    seen[0], calls[:] = False, []
    results, batches = c08.ambiguous_family(Settings(seed=0), 3, 2)
    assert (batches, len(results)) == (c08.MAX_FAMILY_BATCHES, 3 * c08.MAX_FAMILY_BATCHES)


def test_a_rate_above_the_bound_fails(monkeypatch, tmp_path, capsys):
    import proofs_check.claims.c08_probability_one as c08

    monkeypatch.setattr(c08, "degenerate_conditions", lambda Es, vs, kind, prev, cur: {"zero residue"})
    code, report, _ = _run_failing(["--claim", "probability-one"], tmp_path, capsys)
    assert code == 1
    assert any("exceeds the bound" in line for line in report["claims"][0]["details"])


def _specification_matching_tokens(kind, prev, cur):
    """The superseded draft's matching configuration (x + x', z + z'), docs/algorithm.md section 4."""
    return prev[0] + cur[0], prev[1] + cur[1]


def test_the_specifications_matching_tokens_fail_the_symbolic_lemmas(monkeypatch, tmp_path, capsys):
    import proofs_check.claims.c07_symbolic_lemmas as c07

    monkeypatch.setattr(c07, "matching_tokens", _specification_matching_tokens)
    code, report, _ = _run_failing(["--claim", "symbolic-lemmas"], tmp_path, capsys)
    assert code == 1
    assert any(line.startswith("lemma C (shared x") for line in report["claims"][0]["details"])
    assert any(line.startswith("lemma C (shared a") for line in report["claims"][0]["details"])


def test_the_specifications_matching_tokens_fail_the_measured_links(monkeypatch, tmp_path, capsys):
    import proofs_check.claims.c08_probability_one as c08

    def added(kind, prev, cur):
        return tuple(p + q for p, q in zip(prev[0], cur[0])), tuple(p + q for p, q in zip(prev[1], cur[1]))

    monkeypatch.setattr(c08, "linked_tokens", added)
    code, report, _ = _run_failing(["--claim", "probability-one"], tmp_path, capsys)
    assert code == 1
    details = report["claims"][0]["details"]
    assert any("the true pairing is not a perfect matching" in line for line in details)


def test_a_crashing_check_is_a_fail_row_not_a_traceback(monkeypatch, tmp_path, capsys):
    def crash(settings):
        raise ZeroDivisionError("injected")

    def fine(settings):
        return Outcome(True, "nothing", {"answer": 1})

    claims = [Claim("crash", "Crashing claim", "-", "test", crash),
              Claim("fine", "Fine claim", "-", "test", fine)]
    monkeypatch.setattr("proofs_check.cli.all_claims", lambda: claims)
    code, report, out = _run_failing([], tmp_path, capsys)
    assert code == 1
    crashed, ok = report["claims"]
    assert crashed["result"] == "FAIL" and crashed["error"] == "ZeroDivisionError: injected"
    assert ok["result"] == "PASS"
    assert "ZeroDivisionError: injected" in out and "Traceback" not in out


def test_run_claims_rejects_a_non_boolean_verdict():
    claim = Claim("bad", "Bad", "-", "test", lambda s: Outcome("yes", "x"))  # type: ignore[arg-type]
    report = run_claims(Settings(), [claim])
    assert not report.passed and "not a bool" in report.results[0].error


# -- bad input: clear messages, exit code 2 ----------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "expected a positive integer"),
    (["--seed", "x"], "expected a non-negative integer"),
    (["--claim", "99"], "unknown claim '99'"),
    (["--quick", "--full"], "not allowed with argument"),
    (["--json", "/nonexistent-dir/r.json"], "does not exist"),
])
def test_bad_arguments_exit_2_with_a_message(args, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_list_names_every_claim_and_cites_docs(capsys):
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    for key in OWN_CLAIMS + ["approximate-oracle", "generic-certificate"]:
        assert key in out
    assert "docs/claims.md" in out
    assert not re.search(r"issue|\.py\b|LAYOUT|ALGORITHM\.md", out)


# -- output for people: 80 columns, reproducible figures, progress ---------------------------------------


def test_quick_output_fits_80_columns(quick):
    lines = quick["stdout"].splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "checked:" in quick["stdout"]
    assert "statement:" not in quick["stdout"]  # the full statement comes with -v


def test_the_same_seed_gives_the_same_figures(quick, tmp_path, capsys):
    path = tmp_path / "again.json"
    assert main(["--claim", "symbolic-lemmas", "--claim", "generic-certificate", "--json", str(path)]) == 0
    capsys.readouterr()
    again = json.loads(path.read_text())
    for key in ("symbolic-lemmas", "generic-certificate"):
        assert _claim(again, key)["figures"] == _claim(quick["json"], key)["figures"]
    assert "seconds" not in json.dumps(_claim(again, "generic-certificate")["figures"])


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
