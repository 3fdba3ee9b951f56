"""exactlearn.approx.run: the schedule over real balls keeps each measurement's fitted R(oo) ball."""

from __future__ import annotations

from exactlearn import MultiHeadAttention, Oracle, learn
from exactlearn.approx import NoisyOracle, RealMultiHeadAttention, learn_approx
from exactlearn.approx.run import run_approx_schedule

MODEL = RealMultiHeadAttention.random(2, 2, seed=0)


def test_the_fitted_value_at_infinity_feeds_the_matching_configurations():
    rec = learn_approx(NoisyOracle(MODEL, "1e-20", seed=1), 2, heads=2)
    for cfg in rec.configurations:
        assert cfg.fitted_infinity is not None and cfg.value_at_infinity is cfg.fitted_infinity
    for cfg in rec.links.values():
        assert cfg.fitted_infinity is None and cfg.at_infinity is not None  # known by linearity


def test_the_exact_path_never_sets_it():
    rec = learn(Oracle(MultiHeadAttention.random(2, 2, seed=3)), 2, heads=2)
    assert all(c.fitted_infinity is None for c in rec.configurations)


def test_a_refusal_reports_the_queries_it_spent():
    import pytest

    from exactlearn.approx.field import RealBalls
    from exactlearn.errors import RedrawBudgetExceeded

    oracle = NoisyOracle(MODEL, "1e-2", seed=1)
    with pytest.raises(RedrawBudgetExceeded) as info:
        run_approx_schedule(oracle, 2, 2, field=RealBalls("1e-2"), max_redraws=0)
    assert info.value.queries == oracle.queries > 0
