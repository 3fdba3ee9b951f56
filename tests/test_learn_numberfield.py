"""learn() over a number field: exact recovery, measured counts, redraws, refusals (docs/number-fields.md).

Counts are read from the oracle's own log, never from the formula; every returned model is checked
against every answer the oracle gave.
"""

from __future__ import annotations

import json

import pytest

from exactlearn import (
    InconsistentAnswersError,
    MultiHeadAttention,
    NumberField,
    Oracle,
    OracleOutputError,
    RecoveryError,
    learn,
    paper_query_count,
)

Q2 = NumberField("a^2 - 2", root=1.414)
CUBIC = NumberField("a^3 - 2")
QUARTIC = NumberField("a^4 - 10*a^2 + 1", root=3.1)
UNIT = Q2("1 + a")  # norm -1: a unit of Q(sqrt 2)


def agrees_with_every_answer(model, oracle):
    return all(model(query) == answer for query, answer in oracle.transcript)


@pytest.mark.parametrize("K, d, H, seed",
                         [(Q2, 2, 2, 0), (CUBIC, 2, 2, 1), (QUARTIC, 1, 3, 2), (Q2, 3, 1, 3)])
def test_random_models_are_recovered_exactly_with_the_formula_counts(K, d, H, seed):
    truth = MultiHeadAttention.random(d, H, seed=seed, field=K)
    oracle = Oracle(truth, keep_transcript=True)
    rec = learn(oracle, d, heads=H, seed=seed)
    assert rec.model == truth.canonical() and rec.model.field == K
    assert rec.redraws == 0 and oracle.queries == paper_query_count(d, H) == rec.queries
    assert oracle.max_length == 2 * H + 1 == rec.max_length
    assert agrees_with_every_answer(rec.model, oracle)


def test_a_bound_the_lean_schedule_and_verification():
    truth = MultiHeadAttention.random(2, 2, seed=6, field=Q2)
    oracle = Oracle(truth, keep_transcript=True)
    rec = learn(oracle, 2, heads_bound=3)
    assert rec.model == truth.canonical() and rec.num_heads == 2
    assert oracle.queries == paper_query_count(2, 3) and oracle.max_length == 7  # with H0 = 3
    oracle.reset()
    rec = learn(oracle, 2, heads=2, schedule="lean", verify=4)
    assert rec.model == truth.canonical() and oracle.queries == rec.queries + 4 == 19 + 4
    assert agrees_with_every_answer(rec.model, oracle)


def test_units_among_the_weights_and_degenerate_draws_redrawn_and_counted():
    # every entry a power of the unit 1 + sqrt 2: no coprime base could express these logs
    u = UNIT
    truth = MultiHeadAttention.from_lists([[[u, u**2], [u**-1, u]], [[u**2, u], [u, u**-1]]],
                                          [["1", "a"], ["a", "-1"]], field=Q2)
    oracle = Oracle(truth, keep_transcript=True)
    rec = learn(oracle, 2, heads=2, seed=0)
    assert rec.model == truth.canonical()
    assert rec.redraws == 3 and len(rec.redraw_reasons) == 3 and oracle.queries == rec.queries == 62
    assert agrees_with_every_answer(rec.model, oracle)


def test_the_field_comes_from_the_answers_or_is_declared():
    truth = MultiHeadAttention.random(1, 2, seed=2, field=CUBIC)
    assert learn(lambda X: truth(X), 1, heads=2).model == truth.canonical()
    assert learn(lambda X: truth(X), 1, heads=2, field=CUBIC).model == truth.canonical()
    with pytest.raises(OracleOutputError, match="an element of Q\\(a\\) with a\\^3 - 2.*answers are in"):
        learn(lambda X: truth(X), 1, heads=2, field=Q2)  # answers in a field the caller did not declare
    switching = iter([Q2("a")] + [CUBIC("a")] * 10)
    with pytest.raises(OracleOutputError, match="one field"):
        learn(lambda X: next(switching), 1, heads=1)
    with pytest.raises(OracleOutputError, match="float"):
        learn(lambda X: 0.5, 1, heads=1, field=Q2)
    with pytest.raises(TypeError, match="NumberField"):
        learn(lambda X: 1, 1, heads=1, field="a^2 - 2")  # type: ignore[arg-type]


def test_a_wrong_bound_and_a_wrong_answer_are_refused_never_a_wrong_model():
    truth = MultiHeadAttention.random(2, 3, seed=1, field=Q2)
    with pytest.raises(InconsistentAnswersError):
        learn(Oracle(truth), 2, heads_bound=2)
    calls = {"n": 0}

    def faulty(X):  # plant a fault: the 9th answer is off by a tiny element of K
        calls["n"] += 1
        return truth(X) + (Q2("a") / 10**20 if calls["n"] == 9 else 0)

    with pytest.raises(RecoveryError):
        learn(faulty, 2, heads=3)


def test_q_as_a_field_of_degree_one_gives_the_rational_run_byte_for_byte():
    q = MultiHeadAttention.random(2, 2, seed=3)
    K1 = NumberField("a - 1")
    k = MultiHeadAttention.from_lists([h.exp_W for h in q.heads], [h.v for h in q.heads], field=K1)
    oq, ok = Oracle(q, keep_transcript=True), Oracle(k, keep_transcript=True)
    rq, rk = learn(oq, 2, heads=2, seed=5), learn(ok, 2, heads=2, seed=5)
    assert [(x, str(v)) for x, v in oq.transcript] == [(x, str(v)) for x, v in ok.transcript]
    model_k = rk.model.to_dict()
    assert model_k.pop("field") == K1.to_dict()
    assert json.dumps(model_k) == json.dumps(rq.model.to_dict())
    assert (rq.queries, rq.max_length, rq.redraws) == (rk.queries, rk.max_length, rk.redraws)


def test_the_recovery_report_is_json():
    truth = MultiHeadAttention.random(1, 1, seed=0, field=Q2)
    data = json.loads(learn(Oracle(truth), 1, heads=1).to_json())
    assert data["model"] == truth.canonical().to_dict() and data["heads"][0]["log_W"]["field"] == Q2.to_dict()
