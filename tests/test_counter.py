"""exactlearn.counter: the one query counter every learner asks through."""

from __future__ import annotations

from fractions import Fraction

import pytest
from flint import fmpq

from exactlearn import MultiHeadAttention, Oracle, learn
from exactlearn.counter import Counts, QueryCounter, guarded_progress
from exactlearn.errors import (
    InconsistentAnswersError,
    OracleError,
    OracleOutputError,
    QueryBudgetExceeded,
)
from exactlearn.exact import oracle_value


def test_counts_answered_queries_and_the_longest():
    counter = QueryCounter(len)
    assert [counter([(1,)] * n) for n in (3, 1, 2)] == [3, 1, 2]
    assert counter.counts() == Counts(queries=3, max_length=3, redraws=0)


def test_an_oracle_that_changes_the_list_cannot_change_the_counts():
    def mutating(tokens):
        tokens.extend([(0,)] * 1000)
        return 1

    counter = QueryCounter(mutating)
    counter([(1,), (2,)])
    assert (counter.queries, counter.max_length) == (1, 2)
    counter = QueryCounter(lambda tokens: tokens.clear() or 1)
    counter([(1,)] * 5)
    assert counter.max_length == 5


def test_a_budget_refuses_before_calling():
    calls = []
    counter = QueryCounter(lambda tokens: calls.append(tokens) or 0, budget=2)
    counter([(1,)]), counter([(2,)])
    with pytest.raises(QueryBudgetExceeded) as info:
        counter([(3,)])
    assert len(calls) == 2 and (info.value.queries, info.value.max_length) == (2, 1)


def test_the_oracles_exceptions_become_oracle_errors_with_the_counts():
    def oracle(tokens):
        if len(tokens) == 3:
            raise KeyError("boom")
        return 1

    counter = QueryCounter(oracle)
    counter([(1,)] * 2)
    counter.redraws = 4
    with pytest.raises(OracleError, match="KeyError") as info:
        counter([(1,)] * 3)
    assert (info.value.queries, info.value.max_length, info.value.redraws) == (1, 2, 4)
    assert isinstance(info.value.__cause__, KeyError)


def test_an_exactlearn_error_passes_with_the_counts_it_lacks():
    def oracle(tokens):
        raise InconsistentAnswersError("no", queries=7)

    with pytest.raises(InconsistentAnswersError) as info:
        QueryCounter(oracle)([(1,)])
    assert (info.value.queries, info.value.max_length, info.value.redraws) == (7, 0, 0)


def test_keyboard_interrupt_passes_unchanged():
    def oracle(tokens):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        QueryCounter(oracle)([(1,)])


def test_answers_are_converted_inside_the_guard():
    class Hostile(Fraction):  # a rational whose numerator raises when read
        @property
        def numerator(self):
            raise ZeroDivisionError("hostile")

    counter = QueryCounter(lambda tokens: Hostile(1, 2))
    with pytest.raises(OracleOutputError) as info:
        counter.ask([(1,)], oracle_value)
    assert info.value.queries == 1 and isinstance(info.value.__cause__, ZeroDivisionError)
    with pytest.raises(OracleOutputError):  # a float: the converter's own named error
        QueryCounter(lambda tokens: 0.5).ask([(1,)], oracle_value)
    assert QueryCounter(lambda tokens: 3).ask([(1,)], oracle_value) == fmpq(3)


def test_remembered_queries_are_asked_and_counted_once():
    calls = []
    counter = QueryCounter(lambda tokens: calls.append(tokens) or len(calls), remember=True)
    assert counter([(1, 0), (0, 1)]) == counter([(1, 0), (0, 1)]) == 1
    assert len(calls) == 1 and counter.queries == 1
    assert counter([(1, 0)]) == 2 and counter.queries == 2


def test_steps_are_counted_apart_and_redraws_can_belong_elsewhere():
    counter = QueryCounter(len, tracks_redraws=False)
    counter.step = "one"
    counter([(1,)] * 3)
    counter.step = "two"
    counter([(1,)]), counter([(1,)] * 2)
    assert {k: (v.queries, v.max_length) for k, v in counter.steps.items()} == {"one": (1, 3), "two": (2, 2)}
    assert counter.counts() == Counts(3, 3, None)


def test_a_failing_progress_callback_becomes_an_oracle_error():
    counter = QueryCounter(len)
    counter([(1,)])
    call = guarded_progress(lambda done, planned: 1 / 0, counter)
    assert call is not None
    with pytest.raises(OracleError, match="progress callback") as info:
        call(1, 2)
    assert info.value.queries == 1
    assert guarded_progress(None, counter) is None


def test_learn_reports_the_counters_figures():
    oracle = Oracle(MultiHeadAttention.random(2, 2, seed=1))
    rec = learn(oracle, 2, heads=2, verify=3)
    assert (rec.queries + rec.verification_queries, rec.max_length) == (oracle.queries, oracle.max_length)


def test_what_an_oracle_declares_is_read_inside_the_guard():
    from exactlearn.counter import declared

    class NoWidth:
        @property
        def d(self):
            raise RuntimeError("no width")

        def __call__(self, tokens):
            return 1

    assert declared(len, "d") is None
    with pytest.raises(OracleError, match="reading the oracle's d raised RuntimeError") as info:
        declared(NoWidth(), "d")
    assert info.value.queries == 0
    with pytest.raises(OracleError):
        learn(NoWidth(), 2, heads=1)


def test_an_answer_larger_than_the_run_affords_is_refused_before_arithmetic():
    from exactlearn.limits import affordable_answer_bits

    oracle = Oracle(MultiHeadAttention.random(2, 2, seed=0))
    tiny = fmpq(1, 2 ** (affordable_answer_bits(2, 2) // 2 + 10))
    with pytest.raises(OracleOutputError, match="affords answers of at most") as info:
        learn(lambda X: oracle(X) + tiny, 2, heads=2)
    assert info.value.queries == 1
