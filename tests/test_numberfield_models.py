"""exactlearn.numberfield.models: MultiHeadAttention and Oracle over a number field."""

from __future__ import annotations

import json

import pytest

from exactlearn import (
    Head,
    InvalidModelError,
    InvalidQueryError,
    MultiHeadAttention,
    NumberField,
    Oracle,
    OracleOutputError,
)
from exactlearn.numberfield.models import field_in, ratio_bits

from .sympy_fields import evaluate as sympy_evaluate

K = NumberField("a^2 - 2", root=1.414)
CUBIC = NumberField("a^3 - 2")
EXP_WS = [[["1 + a", "1/2"], ["3", "a"]], [["2", "a/3"], ["1", "1 + a"]]]
VS = [["a", "-1"], ["1", "2 - a"]]


def issue_model():
    return MultiHeadAttention.from_lists(EXP_WS, VS, field=K)


@pytest.mark.parametrize("model", [issue_model(), MultiHeadAttention.random(3, 2, seed=5, field=CUBIC)])
def test_outputs_agree_with_an_independent_sympy_evaluation(model):
    data = model.to_dict()
    for tokens in [[(1, 0, 0)[: model.d]], [(0, 1, 1)[: model.d], (1, -1, 2)[: model.d]],
                   [(2, 2, 0)[: model.d], (1, 0, -1)[: model.d], (2, 2, 0)[: model.d]]]:
        assert [str(c) for c in sympy_evaluate(data, tokens)] == [str(c) for c in model(tokens).coordinates()]


def test_entries_positive_in_the_embedding_and_read_by_the_field():
    with pytest.raises(InvalidModelError, match=r"exp_W\[0\]\[1\] = -a is not positive in the real"):
        MultiHeadAttention.from_lists([[["1", "-a"], ["1", "1"]]], [["0", "1"]], field=K)
    with pytest.raises(InvalidModelError, match=r"v\[1\]: .*unknown name 'b'"):
        MultiHeadAttention.from_lists([[["1", "a"], ["1", "1"]]], [["0", "b"]], field=K)
    minus = NumberField("a^2 - 2", root=-1.414)  # the same text, the other embedding: a < 0 there
    with pytest.raises(InvalidModelError, match="not positive"):
        MultiHeadAttention.from_lists([[["a"]]], [["1"]], field=minus)


def test_the_field_is_taken_from_elements_and_heads_do_not_mix_fields():
    head = Head([[K("a")]], [K(1)])
    assert head.field == K and field_in([[1, [K("a")]]]) == K and field_in([[1]]) is None
    model = MultiHeadAttention([head, Head([[2]], [3])])
    assert model.field == K and all(h.field == K for h in model.heads)
    with pytest.raises(InvalidModelError, match="different number fields"):
        MultiHeadAttention([head, Head([[CUBIC("a")]], [1])])


def test_rational_models_are_unchanged():
    q = MultiHeadAttention.random(2, 2, seed=1)
    assert q.field is None and "field" not in q.to_dict() and all(h.field is None for h in q.heads)


def test_canonical_form_json_and_random_models():
    m = MultiHeadAttention.from_lists(EXP_WS + [EXP_WS[0]], VS + [["-a", "1"]], field=K)
    canon = m.canonical()
    assert canon.num_heads == 1 and canon.field == K  # equal exp_W merged: v = (a, -1) + (-a, 1) = 0, dropped
    assert canon.heads[0].v == (1, K("2 - a"))
    data = json.loads(issue_model().to_json())
    assert data["field"] == K.to_dict() and data["heads"][0]["exp_W"][0] == ["1 + a", "1/2"]
    assert MultiHeadAttention.from_json(issue_model().to_json()) == issue_model()
    r = MultiHeadAttention.random(2, 3, seed=4, field=CUBIC)
    assert r.num_canonical_heads == 3 and r == MultiHeadAttention.random(2, 3, seed=4, field=CUBIC)
    assert all(e > 0 for h in r.heads for row in h.exp_W for e in row)
    with pytest.raises(InvalidModelError, match="the model's field"):
        MultiHeadAttention.from_dict(dict(data, field={"polynomial": "a^2 - 4", "root_interval": ["1", "3"]}))


def test_the_oracle_answers_in_k_and_refuses_other_fields():
    oracle = Oracle(issue_model())
    assert oracle.field == K and oracle([(1, 0), (0, 1)]) == issue_model()([(1, 0), (0, 1)])
    other = Oracle(lambda X: CUBIC("a"), d=1, field=K)
    with pytest.raises(OracleOutputError, match="not of|answers are in"):
        other([(1,)])
    outside = Oracle(lambda X: 0.5, d=1, field=K)
    with pytest.raises(OracleOutputError, match="float"):
        outside([(1,)])


def test_answers_too_large_for_the_bit_limit_are_refused():
    m = issue_model()
    assert ratio_bits(m.heads[0].exp_W, [5, 0], [5, 5]) > 0
    with pytest.raises(InvalidQueryError, match="max_bits"):
        m([(90, -90), (-90, 90)], max_bits=200)
