"""exactlearn.transformer.residual: the limit of the odd part along (0^k, x), and l_res from it."""

from __future__ import annotations

import random

import pytest
from flint import fmpq

from exactlearn.transformer import Condition, Transformer, TransformerConditionError
from exactlearn.transformer.residual import learn_residual_linear, limit_at_infinity, residual_limit


def test_limit_at_infinity_of_attention_copy_functions():
    def f(k):
        return fmpq(3) + fmpq(2) / (1 + k * fmpq(1, 3)) - fmpq(1) / (1 + 5 * k)

    ks = list(range(7))
    assert limit_at_infinity(ks, [f(k) for k in ks], 2) == 3
    assert limit_at_infinity(ks, [f(k) + (k == 6) for k in ks], 2) is None  # a planted fault is caught
    assert limit_at_infinity(ks, [f(k) + (k == 2) for k in ks], 2) is None  # also among the first samples
    assert limit_at_infinity(ks, [fmpq(1) / (1 + k) for k in ks], 2) == 0  # a lower type is fine
    assert limit_at_infinity(ks, [fmpq(k) ** 3 for k in ks], 2) is None  # a pole at infinity
    assert limit_at_infinity(ks, [fmpq(1, 3 - k) if k != 3 else 0 for k in ks], 1) is None  # pole at k = 3


def l_res(model):
    return tuple(sum((a * u[i] for a, u in zip(model.a, model.U)), fmpq(0)) / 2 for i in range(model.d))


@pytest.mark.parametrize("d,H,seed", [(1, 1, 0), (2, 2, 1), (3, 2, 2)])
def test_the_residual_linear_part_is_learned_exactly(d, H, seed):
    truth = Transformer.random(d, H, 3, seed=seed, residual=True)
    calls = []

    def ask(tokens):
        calls.append(len(tokens))
        return truth(tokens)

    assert learn_residual_linear(ask, d, H, 10_000, random.Random(0)) == l_res(truth)
    assert len(calls) == d * 2 * (2 * H + 3) and max(calls) == 2 * H + 3


def test_the_limit_is_zero_without_a_residual_and_nonzero_with_one():
    plain = Transformer.random(2, 2, 3, seed=3)
    assert residual_limit(plain, 2, 2, 100, random.Random(0)) == 0
    with_residual = Transformer.random(2, 2, 3, seed=3, residual=True)
    x = (1, -2)
    assert residual_limit(with_residual, 2, 2, 100, random.Random(0), x) == 2 * sum(
        (a * b for a, b in zip(l_res(with_residual), x)), fmpq(0))


def test_a_short_cap_asks_nothing_and_other_answers_are_refused():
    plain = Transformer.random(2, 2, 3, seed=3)
    calls = []
    assert residual_limit(lambda X: calls.append(X) or plain(X), 2, 2, 6, random.Random(0)) is None
    assert not calls  # the test needs queries of 2H + 3 = 7 tokens
    with pytest.raises(TransformerConditionError) as info:  # g grows with k: no attention plus a constant
        learn_residual_linear(lambda X: fmpq(len(X) ** 2) * sum(X[-1]), 2, 1, 100, random.Random(0))
    assert info.value.condition is Condition.ODD_ATTENTION
