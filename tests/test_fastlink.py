"""Predicted matching configurations (exactlearn.fastlink): same terms as reconstruction, or None."""

from __future__ import annotations

import pytest
from flint import fmpq

from exactlearn import Head, InconsistentAnswersError, MultiHeadAttention, Oracle, exactfield, fastlink, learn
from exactlearn.approx.core.field import RealBalls
from exactlearn.exactfield import ExactRationals
from exactlearn.fastlink import PRIME, predicted_link_terms
from exactlearn.matching import link_matchings
from exactlearn.ratfun import copy_terms, reconstruct_nn
from exactlearn.symbolic.field import SymbolicField

PREV = [(fmpq(2), fmpq(1)), (fmpq(3), fmpq(5))]
CUR = [(fmpq(5), fmpq(-2)), (fmpq(7), fmpq(4))]


ONE = fmpq(1)


def _samples(poles, points):
    """Samples of ``1 + sum c / (1 + k rho)`` at ``points``, and its value at 0."""
    def R(k):
        return 1 + sum(c / (1 + k * r) for r, c in poles)
    return [R(k) for k in points], R(0)


def _predict(kind, prev, cur, points, values, n, at_zero):
    return predicted_link_terms(kind, prev, cur, points, values, n, at_zero=at_zero, at_infinity=ONE)


def _capture(monkeypatch):
    calls = []
    real = exactfield.predicted_link_terms

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append((args, kwargs, out))
        return out

    monkeypatch.setattr(exactfield, "predicted_link_terms", spy)
    return calls


def _shared_v_model(seed, d):
    generic = MultiHeadAttention.random(d, 3, seed=seed, height=2)
    v = [fmpq(3, 7), fmpq(-2), fmpq(5, 3)][:d]
    return MultiHeadAttention([Head(h.exp_W, v) for h in generic.heads])


@pytest.mark.parametrize("truth, kwargs", [
    (MultiHeadAttention.random(3, 3, seed=5), dict(heads=3)),
    (MultiHeadAttention.random(2, 2, seed=18, height=2), dict(heads_bound=3, schedule="lean")),
    (_shared_v_model(14, 2), dict(heads=3, max_redraws=200)),
])
def test_predicted_terms_are_the_reconstructed_terms(monkeypatch, truth, kwargs):
    calls = _capture(monkeypatch)
    learn(Oracle(truth), truth.d, **kwargs)
    assert any(out is not None for _, _, out in calls)
    for (kind, prev, cur, points, values, n), kw, out in calls:
        if out is not None:  # a prediction is exactly what reconstruction and the search find
            assert out.terms == copy_terms(reconstruct_nn(points, values, n, **kw)).terms
            assert link_matchings(ExactRationals(), kind, prev, cur, out.terms, limit=5) == [out.pairing]


def test_a_pairing_modulo_p_and_the_exact_check():
    poles = [(fmpq(14), fmpq(5)), (fmpq(15), fmpq(3))]  # sigma = (0 -> 1, 1 -> 0), shared x
    values, at_zero = _samples(poles, [1, 2, 3])
    assert _predict("x", PREV, CUR, [1, 2, 3], values, 2, at_zero).terms == tuple(poles)
    # the same poles with residues that are not c + c', or a shared a with c != c'
    wrong, wrong_zero = _samples([(fmpq(14), fmpq(5)), (fmpq(15), fmpq(4))], [1, 2, 3])
    assert _predict("x", PREV, CUR, [1, 2, 3], wrong, 2, wrong_zero) is None
    assert _predict("a", PREV, CUR, [1, 2, 3], values, 2, at_zero) is None
    # poles that are no product of the linked poles
    other, other_zero = _samples([(fmpq(13), fmpq(5)), (fmpq(15), fmpq(3))], [1, 2, 3])
    assert _predict("x", PREV, CUR, [1, 2, 3], other, 2, other_zero) is None
    # no terms, unequal counts, too few samples: reconstruct instead
    assert predicted_link_terms("x", [], [], [1], [fmpq(1)], 1, at_zero=fmpq(1), at_infinity=fmpq(1)) is None
    assert _predict("x", PREV, CUR[:1], [1, 2, 3], values, 2, at_zero) is None
    assert _predict("x", PREV, CUR, [1, 2], values[:2], 2, at_zero) is None


def test_fewer_terms_than_the_bound_are_checked_at_every_sample():
    # m = 2 terms under the bound n = 3: the pairing comes from 3 samples, the other 2 are checked exactly
    poles = [(fmpq(14), fmpq(5)), (fmpq(15), fmpq(3))]
    values, at_zero = _samples(poles, range(1, 6))
    assert _predict("x", PREV, CUR, range(1, 6), values, 3, at_zero).terms == tuple(poles)
    values[4] += fmpq(1, 10**30)
    assert _predict("x", PREV, CUR, range(1, 6), values, 3, at_zero) is None


def test_a_sample_off_by_the_prime_is_caught_only_by_the_exact_check(monkeypatch):
    poles = [(fmpq(14), fmpq(5)), (fmpq(15), fmpq(3))]
    values, at_zero = _samples(poles, [1, 2, 3])
    values[1] += PRIME  # the same modulo p: the pairing is still found
    args = ("x", PREV, CUR, [1, 2, 3], values, 2)
    assert _predict(*args, at_zero) is None
    # planted fault: without the exact check the wrong sample would be accepted
    monkeypatch.setattr(fastlink, "_fits", lambda *a: True)
    assert _predict(*args, at_zero).terms == tuple(poles)


def test_non_positive_products_and_unknown_values_fall_back():
    prev = [(fmpq(-2), fmpq(1)), (fmpq(3), fmpq(5))]
    poles = [(fmpq(-14), fmpq(5)), (fmpq(15), fmpq(3))]
    values, at_zero = _samples(poles, [2, 3, 4])
    assert _predict("x", prev, CUR, [2, 3, 4], values, 2, at_zero) is None
    assert predicted_link_terms("x", PREV, CUR, [1, 2, 3], values, 2, at_zero=None, at_infinity=ONE) is None


def test_denominators_divisible_by_the_prime_fall_back():
    prev = [(fmpq(2, PRIME), fmpq(1)), (fmpq(3), fmpq(5))]
    poles = [(fmpq(14, PRIME), fmpq(5)), (fmpq(15), fmpq(3))]
    values, at_zero = _samples(poles, [1, 2, 3])
    assert _predict("x", prev, CUR, [1, 2, 3], values, 2, at_zero) is None


def _lying_oracle(truth, lie_at):
    oracle = Oracle(truth)
    count = [0]

    def answer(tokens):
        count[0] += 1
        y = oracle(tokens)
        return y + PRIME if count[0] == lie_at else y

    answer.d = truth.d
    return answer


def test_a_lie_congruent_modulo_the_prime_is_refused_end_to_end(monkeypatch):
    # d = 2, H = 2, paper: 4 measurements of 5 queries, then the first link's 3 matching queries
    truth = MultiHeadAttention.random(2, 2, seed=3)
    with pytest.raises(InconsistentAnswersError):
        learn(_lying_oracle(truth, 22), 2, heads=2)
    # planted fault: a fast path that skips the exact check returns a model that contradicts an answer
    monkeypatch.setattr(fastlink, "_fits", lambda *a: True)
    rec = learn(_lying_oracle(truth, 22), 2, heads=2)
    assert rec.model == truth.canonical()


@pytest.mark.parametrize("seed, d", [(14, 2), (0, 3)])
def test_ambiguous_pairings_are_detected_as_without_the_fast_path(monkeypatch, seed, d):
    truth = _shared_v_model(seed, d)
    H = truth.num_canonical_heads

    def run():
        oracle = Oracle(truth, keep_transcript=True)
        rec = learn(oracle, d, heads=H, seed=seed, max_redraws=200)
        return rec.model, rec.queries, [str(r) for r in rec.redraw_reasons], oracle.transcript

    fast = run()
    assert any("not unique" in r for r in fast[2])
    monkeypatch.setattr(ExactRationals, "link_terms", lambda self, *a, **k: None)
    assert run() == fast


def test_only_the_exact_rationals_predict_links():
    from exactlearn.field import Field

    assert ExactRationals.link_terms is not Field.link_terms
    assert RealBalls.link_terms is Field.link_terms and SymbolicField.link_terms is Field.link_terms
    assert Field().link_terms("x", [], [], [1], [fmpq(1)], 1, at_zero=None, at_infinity=None) is None


def test_the_exact_check_sees_every_condition():
    terms = [(fmpq(14, 3), fmpq(5, 7)), (fmpq(15), fmpq(-3, 2)), (fmpq(1, 9), fmpq(2))]
    points = [1, 2, 3, 4, 5]
    values, at_zero = _samples(terms, points)
    assert fastlink._fits(terms, points, values, at_zero, ONE)
    assert not fastlink._fits(terms, points, values, at_zero + fmpq(1, 10**40), ONE)
    for i in range(len(points)):
        wrong = list(values)
        wrong[i] += fmpq(1, 10**40)
        assert not fastlink._fits(terms, points, wrong, at_zero, ONE)


def test_a_shared_a_with_distinct_residues_is_paired_by_them(monkeypatch):
    poles = [(fmpq(14), fmpq(1)), (fmpq(15), fmpq(5))]  # prev[0] ~ cur[1], prev[1] ~ cur[0] (rho 3 * 5)
    prev = [(fmpq(2), fmpq(1)), (fmpq(3), fmpq(5))]
    cur = [(fmpq(5), fmpq(5)), (fmpq(7), fmpq(1))]
    values, at_zero = _samples(poles, [1, 2, 3])

    def refuse(*args):
        raise AssertionError("steps 1-2 are not needed")

    monkeypatch.setattr(fastlink, "_denominator_mod_p", refuse)
    link = _predict("a", prev, cur, [1, 2, 3], values, 2, at_zero)
    assert link is not None and link.pairing == ([1, 0], [0, 1])
    wrong = _predict("a", prev, cur, [1, 2, 3], [values[0], values[1], values[2] + 1], 2, at_zero)
    assert wrong is None  # the exact check still decides


def test_a_shared_a_with_equal_residues_is_paired_modulo_p(monkeypatch):
    poles = [(fmpq(10), fmpq(1)), (fmpq(21), fmpq(1))]
    prev = [(fmpq(2), fmpq(1)), (fmpq(3), fmpq(1))]  # equal residues: the residues cannot pair
    cur = [(fmpq(5), fmpq(1)), (fmpq(7), fmpq(1))]
    values, at_zero = _samples(poles, [1, 2, 3])
    used = []
    real = fastlink._denominator_mod_p
    monkeypatch.setattr(fastlink, "_denominator_mod_p", lambda *a: used.append(1) or real(*a))
    link = _predict("a", prev, cur, [1, 2, 3], values, 2, at_zero)
    assert used and link is not None and link.pairing[0] == [0, 1]
