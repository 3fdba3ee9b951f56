"""The repair of a default run (approx.guide.repair, and learn_approx): blamed configurations asked again."""

from __future__ import annotations

import random
import warnings

import pytest

from exactlearn import MultiHeadAttention
from exactlearn.approx import NoisyOracle, learn_approx
from exactlearn.approx.bounds.estimate import configuration_shares
from exactlearn.approx.core.learner import RunSetup
from exactlearn.approx.guide.chooser import guide_heads
from exactlearn.approx.guide.repair import RepairChain, RepairChooser, predicted_spread, repair_guidance
from exactlearn.counter import QueryCounter
from exactlearn.schedule import TokenSampler, configuration_count
from exactlearn.states import LinkKind


@pytest.fixture(scope="module")
def first():
    truth = MultiHeadAttention.random(3, 2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return learn_approx(NoisyOracle(truth, eps="1e-10", seed=0), 3, heads=2, guide=None)


def test_the_repair_redraws_only_around_the_blamed_configuration_and_never_for_the_worse(first):
    pairs = [(c.x, c.z) for c in first.configurations]
    guide = guide_heads(first)
    before = predicted_spread(guide, 1.0, pairs)
    improved = 0
    for blamed in range(1, len(pairs)):
        plan = repair_guidance(first, [blamed])(2).plan
        assert plan is not None
        sampler = TokenSampler(3, 2, random.Random(blamed))
        chain = plan(_setup(first)).chain(3, configuration_count(3), sampler)
        assert isinstance(chain, RepairChain)
        chain.draw()
        changed = {j for j, pair in enumerate(chain.pairs()) if pair != pairs[j]}
        # the vector the blamed configuration created (shared by the next) or the one it shares
        assert changed <= {blamed - 1, blamed, blamed + 1}
        after = predicted_spread(guide, 1.0, chain.pairs())
        assert after <= before  # the first run's plan is an option
        improved += bool(changed) and after < before
    assert improved  # random configurations (guide=None) leave room: some redraws are kept
    assert RepairChooser(pairs, None).kept(len(pairs), LinkKind.X) is None


def _setup(rec):
    return RunSetup(QueryCounter(lambda X: 0), rec.d, rec.num_heads, 0, 2, 1.0, [], tuple(range(5)))


def test_the_shares_are_the_terms_of_the_estimate(first):
    shares = configuration_shares(first)
    assert shares is not None and len(shares) == len(first.configurations)
    # each is one configuration's term of the estimate's root of a sum of squares: none exceeds the estimate,
    # and together they reach it
    assert max(shares) <= first.relative_error_estimate * (1 + 1e-9)
    assert sum(s * s for s in shares) ** 0.5 >= first.relative_error_estimate * (1 - 1e-9)


def test_a_default_run_is_repaired_and_every_query_is_counted(monkeypatch):
    """(The scalar joint refinement off: on these answers it settles the first run, which then needs no
    repair; tests/test_approx_values.py.)"""
    import exactlearn.approx.learn as learn_module

    monkeypatch.setattr(learn_module, "_refined", lambda *args: None)
    truth = MultiHeadAttention.random(3, 2, seed=0)
    oracle = NoisyOracle(truth, eps="1e-10", seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = learn_approx(oracle, 3, heads=2)
    assert any(note.startswith("repaired: configurations") for note in rec.notes)
    assert rec.queries == oracle.queries  # the repair's new queries are the oracle's, the reused are not
    assert 0 < rec.retry_queries < rec.queries
