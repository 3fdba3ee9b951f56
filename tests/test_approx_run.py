"""exactlearn.approx.core.run: the schedule over real balls keeps each measurement's fitted R(oo) ball."""

from __future__ import annotations

import pytest

from exactlearn import MultiHeadAttention, Oracle, learn
from exactlearn.approx import NoisyOracle, RealMultiHeadAttention, learn_approx
from exactlearn.approx.core.field import RealBalls
from exactlearn.approx.core.run import run_approx_schedule
from exactlearn.errors import RedrawBudgetExceeded

from .conftest import plant_stuck_link

MODEL = RealMultiHeadAttention.random(2, 2, seed=0)


def test_the_fitted_value_at_infinity_feeds_the_matching_configurations():
    rec = learn_approx(NoisyOracle(MODEL, "1e-20", seed=1), 2, heads=2)
    for cfg in rec.configurations:
        assert cfg.fit is not None and cfg.value_at_infinity is cfg.fit.at_infinity
        total = cfg.value_at_zero
        for _, c in cfg.terms:
            total -= c
        assert cfg.fit.at_infinity.rad() < total.rad()  # sharper than R(0) - sum_h c_h
    for cfg in rec.links.values():
        assert cfg.at_infinity is not None and cfg.value_at_infinity is cfg.at_infinity  # by linearity


def test_on_the_exact_path_the_fit_and_the_sum_are_one_number():
    rec = learn(Oracle(MultiHeadAttention.random(2, 2, seed=3)), 2, heads=2)
    for cfg in rec.configurations:
        if cfg.at_infinity is None:
            assert cfg.fit is not None
            assert cfg.value_at_infinity == cfg.value_at_zero - sum(c for _, c in cfg.terms)


def test_a_refusal_reports_the_queries_it_spent():
    oracle = NoisyOracle(MODEL, "1e-2", seed=1)
    with pytest.raises(RedrawBudgetExceeded) as info:
        run_approx_schedule(oracle, 2, 2, field=RealBalls("1e-2"), max_redraws=0)
    assert info.value.queries == oracle.queries > 0
    assert info.value.max_length == oracle.max_length and info.value.redraws == 1


def test_the_runs_own_notes_reach_the_result(monkeypatch):
    """A note of the shared schedule run (here: a stuck link drew its predecessor again) is in the
    approximate result's ``notes`` too."""
    plant_stuck_link(monkeypatch, 2)
    rec = learn_approx(NoisyOracle(MODEL, "1e-20", seed=1), 2, heads=2, guide=None)
    assert any(note.startswith("link 2:") and "configuration 1 drawn again" in note for note in rec.notes)
