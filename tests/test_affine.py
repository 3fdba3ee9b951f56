"""Affine attention (scores x_i^T W_h x_N + w_h^T x_i, offset c0) on the exact path: the schedule's
reflected links, the learner, its counts from the oracle's log, redraws and refusals."""

from __future__ import annotations

import random

import pytest
from flint import fmpq

from exactlearn import (
    Head,
    InconsistentAnswersError,
    InvalidArgumentError,
    MultiHeadAttention,
    Oracle,
    RecoveryError,
    learn,
)
from exactlearn.chain import TokenChain
from exactlearn.schedule import (
    Schedule,
    TokenSampler,
    affine_weight_row,
    bias_rows,
    configuration_count,
    lean_query_count,
    link_kind,
    linked_tokens,
    matching_kind,
    paper_query_count,
)
from exactlearn.states import LinkKind

SIZES = [(d, H) for d in (1, 2, 3) for H in (1, 2, 3)]


def learned(truth: MultiHeadAttention, d: int, **kwargs):
    """Learn ``truth`` through a logged oracle; the recovery, the oracle (its log) and the truth agree."""
    oracle = Oracle(truth)
    rec = learn(oracle, d, **kwargs)
    assert rec.affine and rec.model == truth.canonical()
    assert rec.queries + rec.verification_queries == oracle.queries  # the oracle's own log
    assert rec.max_length == oracle.max_length
    return rec, oracle


# -- the schedule ---------------------------------------------------------------------------


def test_counts_of_the_affine_schedule():
    # 4 H d(d+1) - 2H + 1: d(d+1) configurations at 2H + 1 queries, d(d+1) - 1 links at 2H - 1
    for d in range(1, 6):
        for H in range(1, 5):
            n = d * (d + 1)
            assert configuration_count(d, affine=True) == n
            assert paper_query_count(d, H, affine=True) == n * (2 * H + 1) + (n - 1) * (2 * H - 1)
            assert paper_query_count(d, H, affine=True) == paper_query_count(d, H) + 4 * H * d
            assert lean_query_count(d, H, affine=True) == d * (2 * H + 1) + (n - 1) * (2 * H - 1)
            assert Schedule.LEAN.query_count(d, H, fallback=True, affine=True) == (
                d * (2 * H + 1) + (d - 1) * (2 * H - 1) + 2 * (n - d) * (2 * H - 1))


def test_a_reflected_link_measures_twice_the_first_minus_the_second():
    rng = random.Random(0)
    for _ in range(200):
        d = rng.randint(1, 4)
        xp, xc, a = ([rng.randint(-3, 3) for _ in range(d)] for _ in range(3))
        prev = (tuple(xp), tuple(p + t for p, t in zip(xp, a)))
        cur = (tuple(xc), tuple(c + t for c, t in zip(xc, a)))
        xC, zC = linked_tokens(LinkKind.REFLECT, prev, cur)
        row = affine_weight_row(xC, zC)
        assert row == [2 * p - c for p, c in zip(affine_weight_row(*prev), affine_weight_row(*cur))]
        assert tuple(z - x for z, x in zip(zC, xC)) == tuple(a)  # the residues c_h = -v_h^T a stay


def test_affine_rows_carry_the_bias_column_and_the_fixed_last_row():
    assert affine_weight_row((1, 2), (2, 2)) == [1, 2, 1, 0, 0, 0, 0, 0, 0]  # a = (1, 0), [x; 1] = (1, 2, 1)
    assert bias_rows(2) == [[0] * 6 + [1, 0, 0], [0] * 7 + [1, 0], [0] * 8 + [1]]
    assert matching_kind(LinkKind.A, True) is LinkKind.REFLECT
    assert matching_kind(LinkKind.A, False) is LinkKind.A and matching_kind(LinkKind.X, True) is LinkKind.X


def test_an_affine_chain_draws_d_times_d_plus_one_configurations_with_a_full_rank_design():
    for d in (1, 2, 3):
        chain = TokenChain(d, d * (d + 1), TokenSampler(d, 2, random.Random(d)), affine=True)
        chain.draw()
        assert len(chain.configs) == d * (d + 1)
        assert chain.weight_design is not None and chain.weight_design.rank() == (d + 1) ** 2
        for j in range(1, d * (d + 1)):
            assert chain.link_kind(j) is matching_kind(link_kind(j, d), True)
            xC, _ = linked_tokens(chain.link_kind(j), (chain.configs[j - 1].x, chain.configs[j - 1].z),
                                  (chain.configs[j].x, chain.configs[j].z))
            assert any(xC)  # checked before querying


# -- the learner ------------------------------------------------------------------------------


@pytest.mark.parametrize("d, H", SIZES)
def test_random_affine_models_are_learned_exactly_with_the_stated_count(d, H):
    for seed in range(3):
        truth = MultiHeadAttention.random(d, H, seed=seed, affine=True)
        rec, oracle = learned(truth, d, heads=H, seed=seed, affine=True)
        assert oracle.max_length == 2 * H + 1
        if rec.redraws == 0:  # counted by the oracle, compared with 4 H d(d+1) - 2H + 1
            assert oracle.queries == rec.formula == 4 * H * d * (d + 1) - 2 * H + 1
        else:
            assert oracle.queries > rec.formula and len(rec.redraw_reasons) == rec.redraws


@pytest.mark.parametrize("d, H", [(1, 2), (2, 2), (3, 1), (3, 2)])
def test_lean_and_bound_variants(d, H):
    truth = MultiHeadAttention.random(d, H, seed=1, affine=True)
    rec, oracle = learned(truth, d, heads=H, schedule="lean", verify=3)
    assert rec.verification_queries == 3
    assert rec.redraws or rec.queries == 2 * H * d * d + 4 * H * d - d * d - 2 * H + 1  # lean, affine
    rec, oracle = learned(truth, d, heads_bound=H + 1)
    assert rec.num_heads == H and oracle.max_length == 2 * H + 3
    assert rec.redraws or oracle.queries == 4 * (H + 1) * d * (d + 1) - 2 * (H + 1) + 1


def test_the_oracle_declares_an_affine_target_and_learn_follows_it():
    truth = MultiHeadAttention.random(2, 2, seed=5, affine=True)
    assert Oracle(truth).affine and not Oracle(MultiHeadAttention.random(2, 2, seed=5)).affine
    rec, _ = learned(truth, 2, heads=2)  # affine=None: what the oracle declares
    assert rec.c0 == truth.c0 != 0 and all(h.exp_w is not None for h in rec.heads)


@pytest.mark.parametrize("d, H", [(1, 2), (2, 1), (2, 3), (3, 2)])
def test_a_model_without_biases_comes_back_with_w_and_c0_exactly_zero(d, H):
    truth = MultiHeadAttention.random(d, H, seed=2)
    rec, oracle = learned(truth, d, heads=H, affine=True)
    assert rec.c0 == 0
    for head in rec.heads:
        assert head.exp_w == (fmpq(1),) * d  # exp(w_h) = 1 exactly
        assert all(c == 0 for entry in head.log_w or () for c in entry.coefficients)
    assert oracle.queries >= paper_query_count(d, H, affine=True)


def test_recovery_json_says_affine_and_c0_only_for_affine_runs():
    truth = MultiHeadAttention.random(2, 1, seed=3, affine=True)
    data = learned(truth, 2, heads=1)[0].to_dict()
    assert data["affine"] is True and data["c0"] == str(truth.c0)
    assert data["formula"] == 23 and "exp_w" in data["heads"][0] and "log_w" in data["heads"][0]
    assert MultiHeadAttention.from_dict(data["model"]) == truth.canonical()
    plain = learn(Oracle(MultiHeadAttention.random(2, 1, seed=3)), 2, heads=1).to_dict()
    assert "affine" not in plain and "c0" not in plain and "exp_w" not in plain["heads"][0]


def test_degenerate_draws_are_redrawn_and_counted():
    # W_1 - W_2 = log(2) e_0 e_0^T and equal w: the poles coincide whenever (z - x)_0 x_0 = 0
    E1, E2, w = [[2, 3], ["5/7", "11/3"]], [[1, 3], ["5/7", "11/3"]], ["3/2", "1/5"]
    truth = MultiHeadAttention([Head(E1, [1, 2], w), Head(E2, [3, -1], w)], c0=7)
    redraws = 0
    for seed in range(6):
        rec, oracle = learned(truth, 2, heads=2, seed=seed)
        redraws += rec.redraws
        assert (oracle.queries == rec.formula) == (rec.redraws == 0)  # every redraw costs queries
        assert len(rec.redraw_reasons) == rec.redraws
    assert redraws > 0


def test_a_wrong_bound_or_head_count_is_refused():
    truth = MultiHeadAttention.random(2, 3, seed=1, affine=True)
    with pytest.raises(InconsistentAnswersError, match="No affine multi-head attention with at most 2 heads"):
        learn(Oracle(truth), 2, heads=2)
    for d, H, H0 in [(1, 2, 1), (2, 2, 1), (2, 3, 2), (3, 3, 1)]:
        wrong = MultiHeadAttention.random(d, H, seed=d * H * H0, affine=True)
        oracle = Oracle(wrong, budget=10 * paper_query_count(d, H, affine=True))  # no endless loop either
        with pytest.raises(InconsistentAnswersError, match="is the bound H0 too small"):
            learn(oracle, d, heads_bound=H0)


def test_answers_that_are_not_affine_in_single_tokens_are_refused():
    with pytest.raises(RecoveryError, match="not affine in x.*not an affine multi-head attention"):
        learn(lambda toks: sum(t * t for t in toks[-1]), 2, heads=2, max_redraws=3, affine=True)


def test_a_constant_oracle_is_affine_attention_without_heads():
    rec = learn(lambda toks: fmpq(3), 2, heads_bound=2, affine=True)
    assert rec.num_heads == 0 and rec.c0 == 3 and rec.model.c0 == 3


def test_the_bias_free_learner_refuses_an_oracle_with_biases():
    truth = MultiHeadAttention.random(2, 2, seed=1, affine=True)
    with pytest.raises(InconsistentAnswersError, match="No multi-head attention with at most 2 heads"):
        learn(Oracle(truth), 2, heads=2, affine=False)


def test_a_single_lie_is_caught_on_the_paper_schedule():
    truth = MultiHeadAttention.random(2, 2, seed=7, affine=True)
    for at in (1, 5, 17, 29, 44):
        def liar(tokens, at=at, count=[0]):  # noqa: B006 - one counter per liar
            count[0] += 1
            value = truth(tokens)
            return value + 1 if count[0] == at else value

        with pytest.raises(RecoveryError):
            learn(liar, 2, heads=2, affine=True)


def test_bad_affine_arguments():
    oracle = Oracle(MultiHeadAttention.random(2, 1, seed=0))
    with pytest.raises(InvalidArgumentError, match="affine must be True, False or None"):
        learn(oracle, 2, heads=1, affine="yes")

    class Odd:
        affine = "sometimes"

        def __call__(self, tokens):
            return fmpq(0)

    with pytest.raises(InvalidArgumentError, match="attribute 'affine'"):
        learn(Odd(), 2, heads=1)


def test_affine_attention_over_a_number_field_is_refused_clearly():
    from exactlearn import InvalidModelError, NumberField, OracleOutputError

    K = NumberField("a^2 - 2", root="1.414")
    with pytest.raises(InvalidModelError, match="rationals only"):
        MultiHeadAttention.from_lists([[["1 + a"]]], [["a"]], [[2]], field=K)
    with pytest.raises(InvalidModelError, match="rationals only"):
        MultiHeadAttention.from_lists([[["1 + a"]]], [["a"]], c0=1, field=K)
    m = MultiHeadAttention.from_lists([[["1 + a", "1/2"], ["3", "a"]]], [["a", "-1"]], field=K)
    with pytest.raises(InvalidArgumentError, match="rationals only"):
        learn(Oracle(m), 2, heads=1, affine=True, field=K)
    with pytest.raises(OracleOutputError, match="element of a number field"):
        learn(lambda X: m(X), 2, heads=1, affine=True)
