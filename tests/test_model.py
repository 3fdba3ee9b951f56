"""MultiHeadAttention: exact evaluation, canonical form, JSON, validation."""

from __future__ import annotations

import json
import pickle
import random
import time
from fractions import Fraction

import pytest
from flint import fmpq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactlearn import Head, InvalidArgumentError, InvalidModelError, InvalidQueryError, MultiHeadAttention

from .conftest import as_fraction, reference_output


def test_single_token_output_is_u_dot_x(two_head_model):
    # softmax over one token is 1, so f([x]) = (sum_h v_h)^T x
    assert two_head_model([(3, -1)]) == fmpq(3) * (1 + fmpq(3, 4)) - (-2 + 5)


def test_two_token_output_by_hand():
    m = MultiHeadAttention.from_lists([[[2, 1], [1, 3]]], [[1, -1]])
    # scores: e1^T W e2 -> exp_W[0][1] = 1, e2^T W e2 -> exp_W[1][1] = 3
    # output = (1 * v.e1 + 3 * v.e2) / 4 = (1 - 3) / 4
    assert m([(1, 0), (0, 1)]) == fmpq(-1, 2)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    d=st.integers(1, 3),
    heads=st.integers(1, 3),
    tokens=st.lists(st.lists(st.integers(-3, 3), min_size=3, max_size=3), min_size=1, max_size=6),
    affine=st.booleans(),
)
def test_evaluation_matches_reference(seed, d, heads, tokens, affine):
    model = MultiHeadAttention.random(d, heads, seed=seed, height=9, affine=affine)
    query = [tuple(t[:d]) for t in tokens]
    assert model.is_affine == affine and as_fraction(model(query)) == reference_output(model, query)


def test_repeated_tokens_share_scores_but_count():
    m = MultiHeadAttention.random(2, 2, seed=5)
    q = [(1, 2)] * 4 + [(0, 1), (1, 2), (-1, 1)]
    assert as_fraction(m(q)) == reference_output(m, q)


def test_canonical_merges_equal_W_and_drops_zero_v():
    E1, E2 = [[2, 3], [5, 7]], [[1, 2], [2, 1]]
    m = MultiHeadAttention.from_lists([E1, E2, E1, E2], [[1, 2], [3, 4], ["1/2", 0], [-3, -4]])
    c = m.canonical()
    assert c.num_heads == 1
    assert c.heads[0].exp_W == Head(E1, [0, 0]).exp_W
    assert c.heads[0].v == (fmpq(3, 2), fmpq(2))
    # the canonical form computes the same function
    for q in ([(1, 0)], [(1, 1), (2, -1)], [(0, 1), (0, 1), (3, 1)]):
        assert m(q) == c(q)


def test_canonical_is_permutation_invariant_and_idempotent(two_head_model):
    swapped = MultiHeadAttention(reversed(two_head_model.heads))
    assert swapped != two_head_model  # order matters for ==
    assert swapped.canonical() == two_head_model.canonical()
    assert swapped.equivalent(two_head_model)
    assert two_head_model.canonical().canonical() == two_head_model.canonical()


def test_all_heads_cancel_gives_zero_model():
    E = [[2]]
    m = MultiHeadAttention.from_lists([E, E], [[1], [-1]])
    c = m.canonical()
    assert c.num_heads == 0 and m.num_canonical_heads == 0
    assert c([(3,), (1,)]) == 0 == m([(3,), (1,)])
    assert MultiHeadAttention.from_dict(c.to_dict()) == c


def test_random_is_reproducible_with_distinct_heads():
    a = MultiHeadAttention.random(3, 4, seed=11)
    assert a == MultiHeadAttention.random(3, 4, seed=11)
    assert a != MultiHeadAttention.random(3, 4, seed=12)
    assert a.num_canonical_heads == 4


def test_json_round_trip(tmp_path, two_head_model):
    text = two_head_model.to_json()
    data = json.loads(text)
    assert data["heads"][0]["exp_W"][0][1] == "1/3"
    assert MultiHeadAttention.from_json(text) == two_head_model
    path = tmp_path / "m.json"
    two_head_model.save(path)
    assert MultiHeadAttention.load(path) == two_head_model


def test_accepts_exact_inputs_of_every_kind():
    import sympy

    h = Head([[Fraction(1, 2), "3/4"], [sympy.Rational(5, 6), fmpq(7)]], [1, sympy.Integer(-2)])
    assert h.exp_W[1][0] == fmpq(5, 6) and h.v[1] == -2


@pytest.mark.parametrize(
    "exp_W, v, message",
    [
        ([[0]], [1], "not positive"),
        ([[-2]], [1], "not positive"),
        ([[0.5]], [1], "float"),
        ([["abc"]], [1], "not a rational"),
        ([["1/0"]], [1], "denominator zero"),
        ([[1, 2]], [1, 2], "square"),
        ([[1, 2], [3, 4]], [1], "length 1"),
        ([], [], "empty"),
        ([[None]], [1], "expected an exact rational"),
        ([[1]], [0.25], "float"),
        # a set or a mapping has no written order: never a row or a vector (issue 25)
        ([{2}], [1], "row 0 must be a list of 1 entries, got set"),
        ([{0: 2}], [1], "row 0 must be a list of 1 entries, got dict"),
        ({(2,)}, [1], "expected a d x d matrix .* got set"),
        ([[2]], {1}, "expected a vector .* got set"),
        ([["\u0663"]], [1], r"exp_W\[0\]\[0\]: .*ASCII digits"),
    ],
)
def test_invalid_heads_have_clear_messages(exp_W, v, message):
    with pytest.raises(InvalidModelError, match=message):
        Head(exp_W, v)


def test_invalid_models_have_clear_messages():
    with pytest.raises(InvalidModelError, match="at least one head"):
        MultiHeadAttention([])
    with pytest.raises(InvalidModelError, match="same width"):
        MultiHeadAttention([Head([[1]], [1]), Head([[1, 1], [1, 1]], [1, 1])])
    with pytest.raises(InvalidModelError, match="not valid JSON"):
        MultiHeadAttention.from_json("{")
    with pytest.raises(InvalidModelError, match="head 0: .*not positive"):
        MultiHeadAttention.from_dict({"heads": [{"exp_W": [["-1"]], "v": ["1"]}]})
    with pytest.raises(InvalidModelError, match="unknown model format"):
        MultiHeadAttention.from_dict({"format": "other/9", "heads": []})
    with pytest.raises(InvalidModelError, match="cannot read model file"):
        MultiHeadAttention.load("/nonexistent/model.json")
    with pytest.raises(InvalidModelError, match="heads must be an integer"):
        MultiHeadAttention.random(2, 0)
    # height 2 gives exp_W entries in {1/2, 1, 2}: only 3 different 1x1 matrices
    with pytest.raises(InvalidModelError, match="only 3 different exp_W matrices"):
        MultiHeadAttention.random(1, 4, height=2)
    assert MultiHeadAttention.random(1, 3, height=2).num_canonical_heads == 3
    with pytest.raises(InvalidModelError, match="from_lists takes a list"):
        MultiHeadAttention.from_lists({"a": [[1]]}, [[1]])


def test_random_refuses_sizes_and_seeds_before_drawing():
    start = time.process_time()
    with pytest.raises(InvalidModelError, match=r"268435456 exact entries, above the limit of 1048576: about "
                                                r"\d+ min and [\d.]+ GB .*model_entries"):
        MultiHeadAttention.random(256, 4096)
    with pytest.raises(InvalidArgumentError, match="seed must be an int"):
        MultiHeadAttention.random(2, 1, seed=10**5000)
    assert time.process_time() - start < 1
    assert MultiHeadAttention.random(2, 1, seed="a") != MultiHeadAttention.random(2, 1, seed="b")


@pytest.mark.parametrize(
    "query, message",
    [
        ([], "at least one token"),
        ([(1, 2, 3)], "length 3"),
        ([(1, 0.5)], "not an integer"),
        ([(1, True)], "not an integer"),
        ([(1, "2")], "not an integer"),
        ("ab", "sequence of token vectors"),
        ([5], "sequence of integers"),
    ],
)
def test_invalid_queries_have_clear_messages(two_head_model, query, message):
    with pytest.raises(InvalidQueryError, match=message):
        two_head_model(query)


# -- the fast evaluation against the definition ----------------------------------------

small_positive = st.builds(fmpq, st.integers(1, 40), st.integers(1, 40))
small_rational = st.builds(fmpq, st.integers(-40, 40), st.integers(1, 40))


@st.composite
def models(draw, max_d=3, max_heads=3):
    d = draw(st.integers(1, max_d))
    heads = draw(st.integers(1, max_heads))
    exp_ws = [[[draw(small_positive) for _ in range(d)] for _ in range(d)] for _ in range(heads)]
    vs = [[draw(small_rational) for _ in range(d)] for _ in range(heads)]
    return MultiHeadAttention.from_lists(exp_ws, vs)


@st.composite
def queries(draw, d, max_len=6):
    token = st.tuples(*[st.integers(-3, 3)] * d)
    pool = draw(st.lists(token, min_size=1, max_size=3))
    return tuple(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=max_len)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_evaluation_equals_the_definition(data):
    model = data.draw(models())
    for _ in range(3):
        tokens = data.draw(queries(model.d))
        assert as_fraction(model.evaluate(tokens)) == reference_output(model, tokens)
        assert as_fraction(model(list(map(list, tokens)))) == reference_output(model, tokens)


def test_copy_queries_equal_the_definition_and_reuse_the_cache():
    model = MultiHeadAttention.random(3, 2, seed=4)
    x, z = (1, -2, 0), (2, 1, -1)
    for k in range(6):
        tokens = (z,) * k + (x,)
        assert as_fraction(model.evaluate(tokens)) == reference_output(model, tokens)
    # one ratio per (head, token, last): k = 1..5 share it
    assert len(model._ratio_cache) == 2


def test_ratio_cache_is_bounded_and_instance_local(monkeypatch):
    a = MultiHeadAttention.random(2, 1, seed=1)
    b = MultiHeadAttention.random(2, 1, seed=1)
    monkeypatch.setattr(MultiHeadAttention, "_CACHE_LIMIT", 5)
    rng = random.Random(0)
    for _ in range(40):
        tokens = tuple(tuple(rng.randint(-2, 2) for _ in range(2)) for _ in range(3))
        assert as_fraction(a.evaluate(tokens)) == reference_output(a, tokens)
        assert len(a._ratio_cache) <= 5
    assert "_ratio_cache" not in b.__dict__  # b never evaluated: nothing shared
    assert a == b and hash(a) == hash(b)  # caches do not enter equality


def test_models_pickle_without_their_caches():
    model = MultiHeadAttention.random(2, 2, seed=5)
    tokens = ((1, 0), (0, 1))
    value = model.evaluate(tokens)
    copy = pickle.loads(pickle.dumps(model))
    assert "_ratio_cache" not in copy.__dict__
    assert copy == model and copy.evaluate(tokens) == value


# -- affine attention: score terms w_h^T x_i (exp_w) and the offset c0 ------------------------


def test_affine_output_by_hand():
    m = MultiHeadAttention([Head([[2, 1], [1, 3]], [1, -1], exp_w=[1, 3])], c0="1/2")
    # token (1, 0): weight exp_W[0][1] * exp_w[0] = 1, value 1; token (0, 1): 3 * 3 = 9, value -1
    assert m([(1, 0), (0, 1)]) == fmpq(1, 2) + fmpq(1 - 9, 10)
    assert m([(0, 0)]) == fmpq(1, 2)  # f([0]) = c0


def test_w_zero_is_no_bias_and_json_without_biases_is_unchanged(two_head_model):
    heads = [Head(h.exp_W, h.v, exp_w=[1] * 2) for h in two_head_model.heads]
    same = MultiHeadAttention(heads, c0=0)
    assert same == two_head_model and not same.is_affine and same.heads[0].exp_w is None
    assert same.to_dict() == two_head_model.to_dict()
    assert set(two_head_model.to_dict()) == {"format", "d", "heads"}
    assert set(two_head_model.to_dict()["heads"][0]) == {"exp_W", "v"}


def test_affine_json_round_trip_and_random_keeps_the_bias_free_heads(tmp_path):
    m = MultiHeadAttention.random(2, 3, seed=4, affine=True)
    data = json.loads(m.to_json())
    assert data["c0"] == str(m.c0) and all("exp_w" in h for h in data["heads"])
    assert MultiHeadAttention.from_json(m.to_json()) == m
    m.save(tmp_path / "m.json")
    assert MultiHeadAttention.load(tmp_path / "m.json") == m
    plain = MultiHeadAttention.random(2, 3, seed=4)
    assert [(h.exp_W, h.v) for h in m.heads] == [(h.exp_W, h.v) for h in plain.heads]


def test_canonical_merges_heads_with_equal_W_and_w_and_keeps_c0():
    E, w1, w2 = [[2, 3], [5, 7]], [2, "1/3"], [1, 5]
    m = MultiHeadAttention([Head(E, [1, 2], w1), Head(E, [3, 4], w2), Head(E, [1, 0], w1)], c0=-2)
    c = m.canonical()
    assert c.num_heads == 2 and c.c0 == -2 and m.equivalent(c)
    assert sorted(h.v for h in c.heads) == sorted([(fmpq(2), fmpq(2)), (fmpq(3), fmpq(4))])
    for q in ([(1, 0)], [(1, 1), (2, -1)], [(0, 1), (0, 1), (3, 1)]):
        assert m(q) == c(q)
    assert not m.equivalent(MultiHeadAttention(m.heads, c0=2))  # the offset is part of the function
    gone = MultiHeadAttention([Head(E, [1, 2], w1), Head(E, [-1, -2], w1)], c0=5).canonical()
    assert gone.num_heads == 0 and gone([(1, 1)]) == 5
    assert MultiHeadAttention.from_dict(gone.to_dict()) == gone


@pytest.mark.parametrize("exp_w, message", [
    ([1, 0], r"exp_w\[1\] = 0 is not positive"),
    ([1, -2], r"exp_w\[1\] = -2 is not positive"),
    ([1], "has length 1, expected d = 2"),
    ("12", "expected a vector"),
])
def test_invalid_score_vectors_have_clear_messages(exp_w, message):
    with pytest.raises(InvalidModelError, match=message):
        Head([[1, 2], [3, 4]], [1, 1], exp_w=exp_w)


def test_invalid_offsets_have_clear_messages():
    with pytest.raises(InvalidModelError, match="c0"):
        MultiHeadAttention([Head([[1]], [1])], c0="x")
    with pytest.raises(InvalidModelError, match="c0"):
        MultiHeadAttention.from_dict({"d": 1, "heads": [{"exp_W": [[1]], "v": [1]}], "c0": [1]})
    with pytest.raises(InvalidModelError, match="head 0: exp_w"):
        MultiHeadAttention.from_dict({"d": 1, "heads": [{"exp_W": [[1]], "v": [1], "exp_w": [0]}]})
