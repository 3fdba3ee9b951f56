"""proofs_check claim 50 (the one-layer Transformer): passes, and fails on planted faults."""

from __future__ import annotations

import dataclasses
import random
from fractions import Fraction

import pytest

import proofs_check.claims.c50_transformer as c50
from exactlearn.transformer import Transformer
from exactlearn.transformer.structured import structured_cases
from proofs_check import faults, independent, library, oracles
from proofs_check.faults import Probe
from proofs_check.registry import Settings


def test_quick_check_passes():
    outcome = c50.check(Settings())
    assert outcome.passed, outcome.details
    figures = outcome.figures
    assert figures["wrong models"] == 0
    assert figures["solved (functionally equivalent)"] == figures["instances"] == 14
    assert figures["fresh sequences equal (Fraction evaluator)"] == f"{14 * c50.FRESH}/{14 * c50.FRESH}"
    assert figures["log = learner's count"] == "14/14" and figures["control told apart"] == "14/14"


def test_the_claim_learns_through_an_opaque_oracle_and_the_library(monkeypatch):
    seen = []
    real = library.learn_transformer

    def spy(oracle, d, **kwargs):
        seen.append(oracle)
        return real(oracle, d, **kwargs)

    monkeypatch.setattr(library, "learn_transformer", spy)
    result = c50.run(c50.Task(2, 2, 3, 0))
    assert result["solved"] and result["fresh_equal"] == c50.FRESH
    (oracle,) = seen
    assert vars(oracle) == {} and not isinstance(oracle, Transformer)
    assert getattr(oracle, "target", None) is None and getattr(oracle, "model", None) is None


def test_the_transformer_evaluator_is_independent_and_agrees():
    rng = random.Random(0)
    models = [Transformer.random(d, H, m, seed=s)
              for d in (2, 3) for H in (1, 2) for m in (1, 3) for s in (0, 1)]
    models += list(structured_cases(2).values()) + [Transformer.random(2, 2, 2, seed=3, residual=True)]
    for model in models:
        for _ in range(5):
            X = [tuple(rng.randint(-3, 3) for _ in range(model.d)) for _ in range(rng.randint(1, 8))]
            value = model(X)
            want = Fraction(int(value.p), int(value.q))
            assert independent.evaluate_transformer(model.to_dict(), X) == want
    hand = {"heads": [{"exp_W": [["2", "1"], ["1", "3"]], "V": [["1", "0"], ["0", "1"]]}],
            "U": [["1", "-1"]], "a": ["2"]}
    assert independent.evaluate_transformer(hand, [(0, 1), (1, 0)]) == Fraction(2, 3)


def test_a_wrong_formula_fails(monkeypatch):
    monkeypatch.setattr(c50, "abstract_formula", lambda d, H: 4 * H * d * d - 2 * H + 2)
    outcome = c50.check(Settings())
    assert not outcome.passed and any("2(4Hd^2-2H+1)" in line for line in outcome.details)


def test_a_wrong_model_fails(monkeypatch):
    real = library.learn_transformer

    def wrong(oracle, d, **kwargs):
        rec = real(oracle, d, **kwargs)
        m = rec.model
        return dataclasses.replace(rec, model=Transformer(m.exp_Ws, m.Vs, m.U, (m.a[0] * 2,) + m.a[1:]))

    monkeypatch.setattr(library, "learn_transformer", wrong)
    outcome = c50.check(Settings())
    assert not outcome.passed and any("WRONG MODEL" in line for line in outcome.details)


def _restorable(monkeypatch) -> None:
    """Register the names the Transformer faults patch, so that monkeypatch undoes the plants."""
    from exactlearn.transformer import learn as tf_learn

    for owner, name in ((library, "learn_transformer"), (tf_learn._Asker, "__call__"),
                        (oracles, "opaque_oracle")):
        monkeypatch.setattr(owner, name, getattr(owner, name))


def test_a_library_equality_that_agrees_with_anything_is_not_trusted(monkeypatch):
    """Equivalence is judged by the independent evaluator: a wrong model fails even if the library's
    == is made to call every pair of Transformers equal."""
    _restorable(monkeypatch)
    monkeypatch.setattr(Transformer, "__eq__", lambda self, other: True)
    faults.plant_tf_wrong_line(Probe())
    outcome = c50.check(Settings())
    assert not outcome.passed and any("fresh sequences equal" in line for line in outcome.details)


def _planted(monkeypatch, plant) -> tuple[Probe, object]:
    """Plant a fault in this process (undone by monkeypatch) and run claim 50."""
    _restorable(monkeypatch)
    probe = Probe()
    plant(probe)
    return probe, c50.check(Settings())


@pytest.mark.slow  # every Transformer fault through the claim: about 10 s of CPU
def test_each_transformer_fault_takes_effect_and_fails_the_claim(monkeypatch):
    expected = {
        faults.plant_tf_wrong_line: "WRONG MODEL",
        faults.plant_tf_oracle_peek: "WRONG MODEL",
        faults.plant_tf_uncounted_verify: "the learner counted",
        faults.plant_tf_unpaired_step1: "not (X, -X) pairs",
        faults.plant_miscounting_oracle: "the learner counted",
    }
    for plant, message in expected.items():
        with monkeypatch.context() as m:
            probe, outcome = _planted(m, plant)
            assert not probe.missing() and not probe.unexpected, (plant.__name__, probe.effects)
            assert not outcome.passed and any(message in line for line in outcome.details), plant.__name__


def test_the_peeking_learner_is_right_when_it_sees_the_model(monkeypatch):
    probe = Probe()
    _restorable(monkeypatch)
    faults.plant_tf_oracle_peek(probe)
    truth = Transformer.random(2, 1, 2, seed=1)
    assert library.learn_transformer(truth, 2, heads=1).model == truth
    assert not probe.effects
