"""Oracle: logs what it answered, budgets, refuses inexact outputs."""

from __future__ import annotations

from fractions import Fraction

import pytest
from flint import fmpq

from exactlearn import InvalidQueryError, MultiHeadAttention, Oracle, OracleOutputError, QueryBudgetExceeded


def test_log_counts_lengths_and_transcript(two_head_model):
    oracle = Oracle(two_head_model, keep_transcript=True)
    assert oracle.d == 2 and oracle.max_length == 0
    a = oracle([(1, 0)])
    b = oracle([(1, 0), (0, 1), (2, 2)])
    assert (oracle.queries, oracle.max_length, dict(oracle.lengths)) == (2, 3, {1: 1, 3: 1})
    assert oracle.transcript == [(((1, 0),), a), (((1, 0), (0, 1), (2, 2)), b)]
    assert b == two_head_model([(1, 0), (0, 1), (2, 2)])
    oracle.reset()
    assert oracle.queries == 0 and oracle.transcript == []


def test_budget_is_enforced_before_calling_the_target():
    calls = []

    def target(tokens):
        calls.append(tokens)
        return 1

    oracle = Oracle(target, d=1, budget=2)
    oracle([(1,)])
    oracle([(2,)])
    with pytest.raises(QueryBudgetExceeded, match="budget of 2"):
        oracle([(3,)])
    assert len(calls) == 2 and oracle.queries == 2


def test_any_callable_with_exact_outputs():
    oracle = Oracle(lambda toks: Fraction(len(toks), 3), d=2)
    assert oracle([(1, 2), (3, 4)]) == fmpq(2, 3)
    assert isinstance(Oracle(lambda toks: 7, d=1)([(1,)]), fmpq)


def test_inexact_outputs_are_refused():
    with pytest.raises(OracleOutputError, match="exactlearn.approx"):
        Oracle(lambda toks: 0.5, d=1)([(1,)])
    with pytest.raises(OracleOutputError, match="expected flint.fmpq"):
        Oracle(lambda toks: "1/2", d=1)([(1,)])
    with pytest.raises(OracleOutputError):
        Oracle(lambda toks: True, d=1)([(1,)])


def test_bad_queries_and_arguments():
    oracle = Oracle(MultiHeadAttention.random(2, 1))
    with pytest.raises(InvalidQueryError, match="length 1"):
        oracle([(1,)])
    assert oracle.queries == 0  # refused queries are not logged
    with pytest.raises(TypeError, match="callable"):
        Oracle(42)
    with pytest.raises(ValueError, match="budget"):
        Oracle(lambda t: 1, budget=-1)


def test_huge_tokens_are_a_clear_error_through_the_oracle():
    oracle = Oracle(MultiHeadAttention.from_lists([[["2/3"]]], [[1]]))
    with pytest.raises(InvalidQueryError, match="above the oracle.s limit max_bits"):
        oracle([(10**30,), (1,)])
    assert oracle.queries == 0


def test_repeated_token_objects_are_trusted_only_by_identity():
    """The oracle checks a copy query's x and z once; an equal object of another kind is still checked."""
    seen = []
    oracle = Oracle(lambda toks: seen.append(toks) or 1, d=2)
    x, z = (1, 0), (0, 1)
    oracle([z, z, x])
    oracle([z, x])  # the same tuple objects: passed on as they are
    assert seen[1][0] is z and seen[1][1] is x
    with pytest.raises(InvalidQueryError, match="not an integer"):
        oracle([z, (1.0, 0.0)])  # equal to x, but floats: refused
    with pytest.raises(InvalidQueryError, match="length 3"):
        oracle([(0, 1, 0), x])
    converted = oracle([[0, 1], x])  # a list token is converted, not trusted
    assert converted == 1 and seen[-1][0] == (0, 1) and type(seen[-1][0]) is tuple
    assert oracle.queries == 3 and dict(oracle.lengths) == {3: 1, 2: 2}
