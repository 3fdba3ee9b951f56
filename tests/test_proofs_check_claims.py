"""The claims' own checks, one at a time: each must fail on the fault it is there to see.

Injected failures run a claim in-process (its judge) with a broken formula,
condition or library function; faults that belong in the learner's or the
oracle's process are planted there through the sandbox's hooks (the
``planted`` fixture), as the self-test does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exactlearn import MultiHeadAttention, schedule
from exactlearn.transformer import Transformer, step1_formula
from proofs_check import sandbox
from proofs_check.cli import main
from proofs_check.registry import Settings

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def planted():
    """``planted(key)``: this process's sandbox starts with fault ``key`` planted in its processes (and
    without it again after the test)."""

    def plant(key: str) -> None:
        sandbox.use_hooks([("proofs_check.faults:install", (key,))])

    yield plant
    sandbox.use_hooks(())


def _run_failing(args, tmp_path, capsys) -> tuple[int, dict, str]:
    path = tmp_path / "failing.json"
    code = main([*args, "--json", str(path)])
    out = capsys.readouterr().out
    return code, json.loads(path.read_text()), out


# -- the abstract's formulas, written in the claims --------------------------------------------------


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

    for path in Path(claims_package.__file__).parent.glob("*.py"):
        source = path.read_text()
        for name in ("paper_query_count", "max_query_length", "lean_query_count", "query_count(",
                     "step1_formula", ".formula", ".planned"):
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


# -- faults in the learner's process ------------------------------------------------------------------


def test_a_wrong_learner_fails_recovery_and_cross_check(planted, tmp_path, capsys):
    planted("oracle-peek")  # one v entry off by one, in the learner's process
    code, report, out = _run_failing(["--claim", "exact-recovery", "--claim", "independent-check"], tmp_path,
                                     capsys)
    assert code == 1
    recovery, cross = report["claims"]
    assert recovery["result"] == "FAIL" and recovery["figures"]["exact"] == 0
    assert cross["result"] == "FAIL" and any("disagree" in line for line in cross["details"])


def test_a_learner_ignoring_a_wrong_bound_fails(planted, tmp_path, capsys):
    planted("lenient-bound")
    code, report, _ = _run_failing(["--claim", "wrong-bound"], tmp_path, capsys)
    assert code == 1 and report["claims"][0]["figures"]["rejected with RecoveryError"] == 0


def test_a_self_reported_length_fails_claims_2_and_3(planted, tmp_path, capsys):
    planted("self-reported-length")
    code, report, _ = _run_failing(["--claim", "3"], tmp_path, capsys)
    assert code == 1 and any("longest query of" in line for line in report["claims"][0]["details"])


def test_claim_8_finds_ambiguous_links_the_learner_did_not_redraw(planted):
    """Without the uniqueness check the learner goes past ambiguous links; claim 8 finds them in its log."""
    import proofs_check.claims.c08_probability_one as c08

    planted("no-uniqueness-check")
    results = [c08.ambiguous_runs((i, 4)) for i in range(15)]
    assert sum(r["ambiguous"] for r in results) == 0
    assert sum(r["ambiguous links queried but not redrawn"] for r in results) > 0
    _, failures = c08.judge_ambiguous(results)
    assert any("without redrawing them" in f for f in failures)


def test_claim_8_draws_further_batches_until_its_target(monkeypatch):
    import proofs_check.claims.c08_probability_one as c08

    calls = []

    def fake(task):
        calls.append(task)
        found = int(len(calls) > 3 and seen[0])
        return {"ambiguous": found, "ambiguous links in the logs": found, "model": task[0]}

    seen = [True]
    monkeypatch.setattr(c08, "ambiguous_runs", fake)
    results, batches = c08.ambiguous_family(Settings(seed=0), 3, 2)
    assert (batches, len(results)) == (2, 6) and [t[0] for t in calls] == list(range(6))
    seen[0], calls[:] = False, []
    results, batches = c08.ambiguous_family(Settings(seed=0), 3, 2)
    assert (batches, len(results)) == (c08.MAX_FAMILY_BATCHES["quick"], 3 * c08.MAX_FAMILY_BATCHES["quick"])
    assert c08.detection(300) == "0.95" and c08.detection(0) == "0.00"


# -- claim 5: the canonical form against the raw model -----------------------------------------------


def test_near_merged_variants_differ_in_one_entry_of_each_row():
    import random

    from proofs_check.claims.c05_canonical_form import variants

    base = MultiHeadAttention.random(3, 2, seed=4)
    models = variants(base, random.Random(0))
    merged = models["merged"].heads
    for row in range(3):
        near = models[f"near-merged (row {row})"]
        a, b = near.heads[0].exp_W, near.heads[-1].exp_W
        diff = [(i, j) for i in range(3) for j in range(3) if a[i][j] != b[i][j]]
        assert len(diff) == 1 and diff[0][0] == row, diff
        assert near.canonical().num_heads == base.canonical().num_heads + 1
        assert near.heads[:-1] == merged[:-1]


def test_first_row_merging_fails_claim_5(planted, monkeypatch):
    """canonical() that merges heads sharing the first row of exp(W): == still holds between the learned
    model and the truth, but the independent evaluator and the near-merged variants see it."""
    from proofs_check import plants
    from proofs_check.claims import c05_canonical_form as c05
    from proofs_check.probe import Probe
    from proofs_check.wire import Role

    planted("first-row-canonical")
    monkeypatch.setattr(MultiHeadAttention, "canonical", MultiHeadAttention.canonical)
    probe = Probe()
    plants.first_row_canonical(probe, Role.JUDGE)
    result = c05.run(c05.Task(2, 1, 0, 500))
    failures, _, _ = c05._judge([result])
    assert probe.effects["heads with equal first rows merged"] > 0
    assert any("near-merged (row 1)" in f for f in failures)


# -- claim 40: conditions derived from the chain -----------------------------------------------------


def test_claim_40_derives_its_conditions_from_the_chain(monkeypatch):
    from exactlearn.symbolic import certify
    from proofs_check import library
    from proofs_check.claims.c40_generic_certificate import derived_conditions, uncovered

    cert = certify(2, 2, seed=0, check_point=False)
    ctx = library.symbolic_model(2, 2).field.ctx
    conditions = derived_conditions(ctx, cert.configurations, 2, 2)
    assert len(conditions) == len(cert.configurations) * (2 + 1)  # two residues, one pole difference each
    assert uncovered(conditions, cert.factors) == []
    first = next(f for f in cert.factors if f.recorded("pole difference"))
    missing = uncovered(conditions, [f for f in cert.factors if f is not first])
    assert missing and all("pole difference" in m for m in missing)
    assert uncovered(conditions, [])  # an empty set covers nothing


# -- claim 50: every instance learned, refusals confirmed -----------------------------------------------


def test_claim_50_confirms_a_refusal_from_the_parameters():
    from proofs_check.claims.transformer_conditions import violated

    truth = Transformer.random(3, 2, 3, seed=0).to_dict()
    for condition in ("LINES_ON_SLICE", "HEADS_VISIBLE", "ODD_ATTENTION", "NO_RESIDUAL", "PER_HEAD_SPLIT",
                      "RATIONAL", "WIDTH"):
        assert not violated(truth, 2, condition), condition
    assert violated(truth, 3, "ODD_ATTENTION")  # told three heads, the odd part has two
    assert violated(dict(truth, residual=True), 2, "NO_RESIDUAL")
    hidden = dict(truth, a=["0"] * len(truth["a"]))
    assert violated(hidden, 2, "HEADS_VISIBLE")
    parallel = dict(truth, U=[truth["U"][0], [str(2 * __import__("fractions").Fraction(x))
                                              for x in truth["U"][0]], truth["U"][2]])
    assert not violated(parallel, 2, "LINES_ON_SLICE")  # parallel neurons merge into one line
    one = Transformer.random(1, 2, 2, seed=0).to_dict()
    assert violated(one, 2, "PER_HEAD_SPLIT")


def test_a_refused_class_of_transformers_fails_claim_50(planted, tmp_path, capsys):
    planted("refused-transformers")
    code, report, _ = _run_failing(["--claim", "50"], tmp_path, capsys)
    assert code == 1
    assert any("refused naming LINES_ON_SLICE, but the model meets that condition" in line
               for line in report["claims"][0]["details"])


# -- claims 7 and 8: the chain's tokens ----------------------------------------------------------------


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


# -- claim 9: the independent evaluators ---------------------------------------------------------------


@pytest.mark.parametrize("module", ["independent", "independent_fields"])
def test_independent_evaluator_imports_nothing_from_exactlearn(module):
    import ast
    import importlib

    source = Path(importlib.import_module(f"proofs_check.{module}").__file__).read_text()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert not any(alias.name.split(".")[0] == "exactlearn" for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and (node.module or "").split(".")[0] != "exactlearn", ast.dump(node)
            assert (node.module or "").split(".")[0] != "proofs_check"


def test_the_evaluators_agree_with_the_oracle_on_raw_models():
    import random

    from proofs_check.independent import evaluate_rational, evaluate_transformer

    rng = random.Random(1)
    model = MultiHeadAttention.random(3, 3, seed=2)
    t = Transformer.random(2, 2, 3, seed=2)
    for _ in range(5):
        X = [tuple(rng.randint(-2, 2) for _ in range(3)) for _ in range(rng.randint(1, 6))]
        Y = [tuple(rng.randint(-2, 2) for _ in range(2)) for _ in range(rng.randint(1, 6))]
        assert evaluate_rational(model.to_dict(), X) == model(X)
        assert evaluate_transformer(t.to_dict(), Y) == t(Y)


def test_a_swapped_evaluator_fails_claim_9(monkeypatch):
    import sympy as sp

    from proofs_check import independent
    from proofs_check.claims.c09_independent_check import evaluator_control

    assert evaluator_control() == []

    def library_evaluation(model, tokens):
        value = MultiHeadAttention.from_dict(model)(tokens)
        return sp.Rational(int(value.p), int(value.q))

    monkeypatch.setattr(independent, "evaluate", library_evaluation)
    assert any("exactlearn's model evaluation" in p for p in evaluator_control())


def test_library_reads_redraw_reasons():
    from exactlearn.states import Redraw, RedrawReason
    from proofs_check import library

    reason = RedrawReason.AMBIGUOUS_PAIRING
    ambiguous = Redraw(f"configuration 3: {reason.value}", reason)
    assert library.is_ambiguous_pairing(ambiguous)
    assert not library.is_ambiguous_pairing(str(ambiguous))  # text alone decides nothing
    too_few = Redraw("configuration 1", RedrawReason.TOO_FEW_POLES)
    assert not library.is_ambiguous_pairing(too_few)


# -- claim 21: number fields ---------------------------------------------------------------------------


def _claim_21_runs(count: int = 3) -> list[dict]:
    from proofs_check.claims import c21_number_fields as c21

    chosen = [t for t in c21.tasks(Settings()) if not t.wrong][:count]
    return [c21.run(t) for t in chosen]


def test_a_unit_factor_in_exp_w_fails_claim_21(planted):
    """The learner's exp(W) off by a unit of K (in the learner's process): == and the sympy evaluator
    both see it."""
    planted("unit-factor")
    runs = _claim_21_runs()
    for r in runs:
        assert not r["exact"]
        assert "the recovered canonical model differs from the truth's (==)" in r["problems"]
        assert "the recovered canonical form differs from the truth's (sympy)" in r["problems"]
    assert any("fresh sequences (sympy)" in p for r in runs for p in r["problems"])


def test_claim_21_counts_with_its_own_formula(monkeypatch):
    from proofs_check.claims import c21_number_fields as c21

    assert all(r["exact"] and not r["problems"] for r in _claim_21_runs(2))
    monkeypatch.setattr(c21, "abstract_count", lambda d, h: 4 * h * d * d - 2 * h + 2)
    monkeypatch.setattr(c21, "abstract_length", lambda h: 2 * h)
    problems = [p for r in _claim_21_runs(2) for p in r["problems"]]
    assert any("no redraws, but the oracle logged" in p for p in problems)
    assert any("longest logged query" in p for p in problems)


def test_a_library_evaluator_fails_claim_21s_control(monkeypatch):
    """The sympy evaluator swapped for exactlearn's arithmetic over K: right values, caught by the control
    that runs with that arithmetic disabled."""
    import sympy as sp

    from proofs_check import independent_fields
    from proofs_check.claims.c21_number_fields import evaluator_control

    assert evaluator_control() == []

    def library_evaluation(model, tokens):
        value = MultiHeadAttention.from_dict(model.source)(tokens)
        return tuple(sp.Rational(int(c.p), int(c.q)) for c in value.coordinates())

    monkeypatch.setattr(independent_fields, "evaluate", library_evaluation)
    assert any("exactlearn's model evaluation" in p for p in evaluator_control())
