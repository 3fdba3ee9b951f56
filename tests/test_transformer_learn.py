"""exactlearn.transformer.learn: functional equivalence, measured counts, named refusals."""

from __future__ import annotations

import random

import pytest
from flint import fmpq

from exactlearn import InvalidArgumentError, OracleError, OracleOutputError, RecoveryError
from exactlearn.querylog import logged
from exactlearn.transformer import (
    Condition,
    Transformer,
    TransformerConditionError,
    TransformerVerificationError,
    learn_transformer,
    step1_formula,
)
from exactlearn.transformer.structured import structured_cases


def opaque(model):
    """A closure with its own log; nothing on it exposes the model."""
    return logged(model)


def fresh_equal(a, b, d, n=40, seed=0):
    rng = random.Random(seed)
    return all(a(X) == b(X) for X in (
        [tuple(rng.randint(-3, 3) for _ in range(d)) for _ in range(rng.randint(1, 9))] for _ in range(n)))


@pytest.mark.parametrize("d,H,m,seed", [(2, 1, 3, 0), (3, 1, 6, 1), (2, 2, 2, 2), (3, 2, 5, 3), (2, 3, 4, 4),
                                        (3, 3, 3, 5), (4, 2, 4, 6)])
def test_random_models_are_learned_exactly(d, H, m, seed):
    truth = Transformer.random(d, H, m, seed=seed)
    oracle, log = opaque(truth)
    rec = learn_transformer(oracle, d, heads=H, seed=seed)
    assert rec.model == truth and fresh_equal(rec.model, truth, d)
    assert rec.queries == log["calls"] and rec.max_length == log["max_length"] <= 10_000
    assert rec.attention.num_heads == H and rec.lines == len(truth.canonical().lines)
    s1 = rec.steps["attention"].queries
    assert s1 == 2 * rec.attention.queries
    if rec.redraws == 0:
        assert s1 == step1_formula(d, H) == 2 * (4 * H * d * d - 2 * H + 1)
    assert rec.steps["attention"].max_length == 2 * H + 1 or rec.redraws


@pytest.mark.parametrize("name", sorted(structured_cases(2)))
@pytest.mark.parametrize("d", [2, 3])
def test_structured_cases(name, d):
    truth = structured_cases(d, seed=3)[name]
    H = len(truth.canonical().heads)
    rec = learn_transformer(truth, d, heads=H, seed=1)
    assert rec.model == truth and fresh_equal(rec.model, truth, d)


def test_heads_bound():
    truth = Transformer.random(2, 2, 3, seed=8)
    oracle, log = opaque(truth)
    rec = learn_transformer(oracle, 2, heads_bound=3, seed=0)
    assert rec.model == truth and rec.heads == 2 and rec.queries == log["calls"]
    assert rec.steps["attention"].queries == step1_formula(2, 3) or rec.redraws


def test_residual_connection_is_named():
    truth = Transformer.random(2, 1, 2, seed=1)

    def residual(tokens):  # y = x_N + V o: the same FFN on a shifted hidden vector
        o = truth.outputs(tokens)[0]
        y = [tokens[-1][r] + sum(truth.Vs[0][r][c] * o[c] for c in range(2)) for r in range(2)]
        return sum((a * max(fmpq(0), sum(u_i * y_i for u_i, y_i in zip(u, y)))
                    for u, a in zip(truth.U, truth.a)),
                   fmpq(0))

    with pytest.raises(TransformerConditionError) as info:
        learn_transformer(residual, 2, heads=1)
    assert info.value.condition is Condition.NO_RESIDUAL and "residual" in str(info.value)


def test_invisible_head_is_named():
    base = Transformer.random(2, 2, 2, seed=2)
    # a_1 ReLU(t) + a_1 ReLU(-t) = a_1 |t|: the odd part is zero, no head is visible in it
    u = base.U[0]
    even = Transformer(base.exp_Ws, base.Vs, [u, tuple(-x for x in u)], [base.a[0], base.a[0]])
    with pytest.raises(TransformerConditionError) as info:
        learn_transformer(even, 2, heads=2)
    assert info.value.condition in (Condition.HEADS_VISIBLE, Condition.ODD_ATTENTION)


def test_length_cap_is_a_named_refusal():
    truth = Transformer.random(3, 2, 4, seed=1)
    oracle, log = opaque(truth)
    with pytest.raises(TransformerConditionError) as info:
        learn_transformer(oracle, 3, heads=2, max_length=6)
    assert info.value.condition is Condition.PER_HEAD_SPLIT
    assert info.value.queries == log["calls"] and info.value.max_length == log["max_length"] <= 6


def test_verification_catches_a_planted_fault():
    truth = Transformer.random(2, 2, 3, seed=4)

    def faulty(tokens):  # right on every query with at most 2 distinct tokens, wrong beyond
        return truth(tokens) + (1 if len(set(map(tuple, tokens))) > 3 else 0)

    with pytest.raises(TransformerVerificationError):
        learn_transformer(faulty, 2, heads=2, seed=0)
    # the same learner accepts the fault-free oracle
    assert learn_transformer(truth, 2, heads=2, seed=0).model == truth


def test_not_a_transformer_is_refused():
    with pytest.raises(RecoveryError):
        learn_transformer(lambda X: fmpq(len(X)) ** 2 + X[-1][0], 2, heads=1)


@pytest.mark.parametrize("kwargs", [{}, {"heads": 1, "heads_bound": 1}, {"heads": 0},
                                    {"heads": 1, "verify": -1}])
def test_bad_arguments(kwargs):
    with pytest.raises(InvalidArgumentError):
        learn_transformer(Transformer.random(2, 1, 1), 2, **kwargs)


def test_edge_cases():
    one = Transformer.random(1, 1, 3, seed=2)
    assert learn_transformer(one, 1, heads=1).model == one
    with pytest.raises(TransformerConditionError) as info:
        learn_transformer(Transformer.random(1, 2, 3, seed=2), 1, heads=2)
    assert info.value.condition is Condition.PER_HEAD_SPLIT
    two = Transformer.random(2, 1, 3, seed=2)
    with pytest.raises(OracleOutputError):
        learn_transformer(lambda X: float(two(X)), 2, heads=1)


@pytest.mark.parametrize("d,H,m,seed", [(2, 2, 3, 0), (3, 1, 4, 1), (3, 3, 4, 2)])
def test_residual_connection_is_learned(d, H, m, seed):
    truth = Transformer.random(d, H, m, seed=seed, residual=True)
    oracle, log = opaque(truth)
    rec = learn_transformer(oracle, d, heads=H, seed=seed, residual=True)
    assert rec.model.residual and rec.model == truth and fresh_equal(rec.model, truth, d)
    assert rec.queries == log["calls"] and rec.steps["residual"].queries == d * 2 * (2 * H + 3)
    assert rec.steps["attention"].queries == step1_formula(d, H) or rec.redraws
    # without the residual the same answers are refused, naming the residual
    with pytest.raises(TransformerConditionError) as info:
        learn_transformer(truth, d, heads=H, seed=seed)
    assert info.value.condition is Condition.NO_RESIDUAL


def test_no_visible_head_under_a_bound():
    # step 1 finds no head under heads_bound, yet T is not zero: a named refusal
    base = Transformer.random(2, 2, 2, seed=2)
    u = base.U[0]
    even = Transformer(base.exp_Ws, base.Vs, [u, tuple(-x for x in u)], [base.a[0], base.a[0]])
    with pytest.raises(TransformerConditionError) as info:
        learn_transformer(even, 2, heads_bound=2)
    assert info.value.condition is Condition.HEADS_VISIBLE
    zero = Transformer(base.exp_Ws, base.Vs, base.U, [0, 0])  # T = 0 is a Transformer: it is learned
    oracle, log = opaque(zero)
    rec = learn_transformer(oracle, 2, heads_bound=2)
    assert rec.model == zero and fresh_equal(rec.model, zero, 2) and rec.heads == 0
    assert rec.queries == log["calls"]


@pytest.mark.parametrize("stop", [30, 90])  # during step 1, during the slice / split
def test_oracle_failure_is_an_oracle_error_with_counts(stop):
    # a raising oracle becomes an OracleError in every step, counting calls to T (not to g)
    truth = Transformer.random(2, 2, 3, seed=1)
    answered = []

    def flaky(tokens):
        if len(answered) + 1 == stop:
            raise RuntimeError("down")
        answered.append(tokens)
        return truth(tokens)

    with pytest.raises(OracleError) as info:
        learn_transformer(flaky, 2, heads=2)
    assert info.value.queries == len(answered) == stop - 1
    assert isinstance(info.value.__cause__, RuntimeError)
    with pytest.raises(OracleOutputError) as bad:
        learn_transformer(lambda X: None, 2, heads=2)
    assert bad.value.queries == 1


def test_max_length_caps_every_query():
    truth = Transformer.random(2, 2, 3, seed=1)
    with pytest.raises(InvalidArgumentError):
        learn_transformer(truth, 2, heads=2, max_length=4)  # step 1 needs 2H + 1 = 5
    oracle, log = opaque(truth)
    with pytest.raises(TransformerConditionError):
        learn_transformer(oracle, 2, heads=2, max_length=5)
    assert 0 < log["max_length"] <= 5


def test_huge_and_tiny_weights_are_refused_or_learned():
    # exp(W) entries far beyond the float range (10^-400, 10^400)
    E1 = [[fmpq(1, 10**400), 2], [3, 10**400]]
    Vs = [[[1, 0], [0, 1]], [[2, 1], [0, 1]]]
    truth = Transformer([E1, [[1, 2], [3, 4]]], Vs, [[1, 2], [1, -1]], [1, -2])
    try:
        rec = learn_transformer(truth, 2, heads=2)
    except TransformerConditionError as exc:
        assert exc.condition is Condition.PER_HEAD_SPLIT
    else:
        assert rec.model == truth


def test_verification_reaches_beyond_the_learners_own_lengths():
    # an oracle that departs from a Transformer only on sequences of 8+ tokens with 3+ distinct tokens
    # (longer than any the steps ask) is caught by the long verification sequences
    truth = Transformer.random(2, 2, 3, seed=1)

    def departs(tokens):
        return truth(tokens) + (1 if len(tokens) >= 8 and len(set(map(tuple, tokens))) >= 3 else 0)

    with pytest.raises(TransformerVerificationError):
        learn_transformer(departs, 2, heads=2)
