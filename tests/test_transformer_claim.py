"""proofs_check claim 50 (the one-layer Transformer): passes, and fails on planted faults.

The learner runs in the sandbox's learner process, so faults of the learner are planted there, through
the hook the self-test uses (``proofs_check.faults.install``); what each did comes back in the
processes' probe snapshots.
"""

from __future__ import annotations

import random

import pytest

import proofs_check.claims.c50_transformer as c50
from exactlearn.transformer import Transformer
from exactlearn.transformer.structured import structured_cases
from proofs_check import cheats, independent, library, sandbox
from proofs_check.probe import Probe, merge
from proofs_check.registry import Settings
from proofs_check.wire import Role


@pytest.fixture
def planted():
    """``planted(key)``: claim 50 with fault ``key`` planted in the sandbox's processes; returns the
    outcome and the effects the processes saw."""

    def plant(key: str):
        box = sandbox.use_hooks([("proofs_check.faults:install", (key,))])
        outcome = c50.check(Settings())
        return outcome, merge(list(box.snapshots.values()))

    yield plant
    sandbox.use_hooks(())


def test_quick_check_passes():
    outcome = c50.check(Settings())
    assert outcome.passed, outcome.details
    figures = outcome.figures
    assert figures["wrong models"] == 0
    assert figures["solved (functionally equivalent)"] == figures["instances"] == 14
    assert figures["fresh sequences equal (independent evaluator)"] == f"{14 * c50.FRESH}/{14 * c50.FRESH}"
    assert figures["log = learner's count"] == "14/14" and figures["control told apart"] == "14/14"


def test_the_claim_learns_in_another_process(monkeypatch):
    """Nothing in this (the judge's) process learns: a learner here that raises is never called."""

    def never(*args, **kwargs):
        raise AssertionError("the judge's process must not learn")

    monkeypatch.setattr(library, "learn_transformer", never)
    box = sandbox.current()
    before = box.sessions
    result = c50.run(c50.Task(2, 2, 3, 0))
    assert result["solved"] and result["fresh_equal"] == c50.FRESH and result["problems"] == []
    assert box.sessions == before + 1


def test_the_transformer_evaluator_is_independent_and_agrees():
    rng = random.Random(0)
    models = [Transformer.random(d, H, m, seed=s)
              for d in (2, 3) for H in (1, 2) for m in (1, 3) for s in (0, 1)]
    models += list(structured_cases(2).values()) + [Transformer.random(2, 2, 2, seed=3, residual=True)]
    for model in models:
        for _ in range(5):
            X = [tuple(rng.randint(-3, 3) for _ in range(model.d)) for _ in range(rng.randint(1, 8))]
            assert independent.evaluate_transformer(model.to_dict(), X) == model(X)
    hand = {"heads": [{"exp_W": [["2", "1"], ["1", "3"]], "V": [["1", "0"], ["0", "1"]]}],
            "U": [["1", "-1"]], "a": ["2"]}
    assert str(independent.evaluate_transformer(hand, [(0, 1), (1, 0)])) == "2/3"


def test_a_wrong_formula_fails(monkeypatch):
    monkeypatch.setattr(c50, "abstract_formula", lambda d, H: 4 * H * d * d - 2 * H + 2)
    outcome = c50.check(Settings())
    assert not outcome.passed and any("2(4Hd^2-2H+1)" in line for line in outcome.details)


def test_a_library_equality_that_agrees_with_anything_is_not_trusted(planted, monkeypatch):
    """Equivalence is judged by the independent evaluator: a wrong model fails even if the library's
    == is made to call every pair of Transformers equal (in the judge's process)."""
    monkeypatch.setattr(Transformer, "__eq__", lambda self, other: True)
    outcome, _ = planted("tf-wrong-line")
    assert not outcome.passed and any("fresh sequences equal" in line for line in outcome.details)


@pytest.mark.parametrize("key, effect, message", [
    ("tf-wrong-line", "FFN line perturbed", "WRONG MODEL"),
    ("tf-oracle-peek", "model hidden: wrong model returned", "WRONG MODEL"),
    ("tf-uncounted-verify", "verification query not counted", "the learner reported"),
    ("tf-unpaired-step1", "extra step-1 query asked", "not (X, -X) pairs"),
    ("miscounting-oracle", "query left out of the log", "its log holds"),
    ("refused-transformers", "solvable model refused", "but the model meets that condition"),
])
def test_each_transformer_fault_takes_effect_and_fails_the_claim(planted, key, effect, message):
    outcome, seen = planted(key)
    assert seen["effects"].get(effect) and not seen["unexpected"], seen
    assert not outcome.passed and any(message in line for line in outcome.details), outcome.details[:3]


def test_the_peeking_learner_is_right_when_it_sees_the_model(monkeypatch):
    probe = Probe()
    monkeypatch.setattr(library, "learn_transformer", library.learn_transformer)
    cheats.tf_oracle_peek(probe, Role.LEARNER)
    truth = Transformer.random(2, 1, 2, seed=1)
    assert library.learn_transformer(truth, 2, heads=1).model == truth
    assert not probe.effects
