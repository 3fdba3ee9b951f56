"""QueryLog: the one log shared by the exact, approximate, symbolic and torch oracles."""

from __future__ import annotations

import pytest

from exactlearn import (
    InvalidArgumentError,
    InvalidQueryError,
    MultiHeadAttention,
    Oracle,
    QueryBudgetExceeded,
)
from exactlearn.approx.core.models import NoisyOracle, RealMultiHeadAttention, RealOracle
from exactlearn.querylog import QueryLog
from exactlearn.symbolic.field import SymbolicField
from exactlearn.symbolic.model import SymbolicModel, SymbolicOracle

MODEL = MultiHeadAttention.from_lists([[[1, "1/2"], ["1/3", 2]]], [[1, -1]])
REAL = RealMultiHeadAttention([[[0.5, 0], [0, -0.25]]], [[1, 2]])


def oracles():
    yield Oracle(MODEL)
    yield RealOracle(REAL)
    yield NoisyOracle(MODEL, "1e-20")
    yield SymbolicOracle(SymbolicModel(SymbolicField(2, 1)))


def test_every_oracle_uses_the_one_log():
    for oracle in oracles():
        assert isinstance(oracle, QueryLog)


@pytest.mark.parametrize("oracle", list(oracles()), ids=lambda o: type(o).__name__)
def test_counts_lengths_and_reset_are_measured_from_answers(oracle):
    assert (oracle.queries, oracle.max_length, oracle.seconds) == (0, 0, 0.0)
    oracle([(1, 0)])
    oracle([(1, 0), (0, 1), (1, 1)])
    oracle([(0, 1), (1, 1)])
    assert (oracle.queries, oracle.max_length, dict(oracle.lengths)) == (3, 3, {1: 1, 3: 1, 2: 1})
    assert oracle.seconds > 0 and oracle.cpu_seconds >= 0
    with pytest.raises(InvalidQueryError):
        oracle([(1, 0, 0)])  # refused before answering: not logged
    assert oracle.queries == 3
    oracle.reset()
    assert (oracle.queries, oracle.max_length, dict(oracle.lengths), oracle.seconds) == (0, 0, {}, 0.0)


def test_a_failed_answer_is_not_logged():
    def target(tokens):
        raise ZeroDivisionError("the target failed")

    oracle = Oracle(target, d=1)
    with pytest.raises(ZeroDivisionError):
        oracle([(1,)])
    assert oracle.queries == 0 and oracle.max_length == 0


def test_budget_is_shared_by_the_exact_and_symbolic_oracles():
    for oracle in (Oracle(MODEL, budget=1), SymbolicOracle(SymbolicModel(SymbolicField(2, 1)), budget=1)):
        oracle([(1, 0)])
        with pytest.raises(QueryBudgetExceeded, match="budget of 1"):
            oracle([(0, 1)])
        assert oracle.queries == 1
        oracle.reset()  # the budget counts from zero again
        oracle([(0, 1)])
    assert RealOracle(REAL).budget is None  # the approximate oracles have no budget


@pytest.mark.parametrize("budget", [-1, 1.5, True, "3"])
def test_bad_budgets_are_refused(budget):
    with pytest.raises(InvalidArgumentError, match="budget must be an integer >= 0"):
        Oracle(MODEL, budget=budget)
    with pytest.raises(InvalidArgumentError, match="budget must be an integer >= 0"):
        SymbolicOracle(SymbolicModel(SymbolicField(2, 1)), budget=budget)


def test_torch_oracle_logs_the_same_way():
    torch = pytest.importorskip("torch")
    from exactlearn.targets import torch_attention

    torch.manual_seed(0)
    oracle = torch_attention(torch.nn.MultiheadAttention(2, 1, bias=False), torch.randn(2))
    assert isinstance(oracle, QueryLog)
    oracle([(1.0, 0.0), (0.5, 0.25)])
    assert (oracle.queries, oracle.max_length, dict(oracle.lengths)) == (1, 2, {2: 1})
    with pytest.raises(InvalidQueryError):
        oracle([(1.0,)])
    assert oracle.queries == 1
