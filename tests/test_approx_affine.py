"""Affine attention on the approximate path: real models with w_h and c0, learn_approx(affine=...)."""

from __future__ import annotations

import random

import mpmath
import pytest

from exactlearn import InvalidArgumentError, MultiHeadAttention
from exactlearn.approx import (
    NoisyOracle,
    RealMultiHeadAttention,
    RealOracle,
    choose_scale,
    learn_approx,
    parameter_error,
    sensitivity,
)
from exactlearn.approx.core.balls import to_mpf
from exactlearn.approx.core.recovery import truth_offsets
from exactlearn.approx.guide import guide_heads, predicted_condition

REAL = RealMultiHeadAttention([[[0.3, -0.2], [0.1, 0.4]], [[-0.5, 0.2], [0.25, 0.1]]],
                              [[1.0, -0.5], [0.25, 2.0]], ws=[[0.5, -0.25], [-0.125, 0.75]], c0=0.375)


def test_a_real_affine_model_evaluates_like_its_enclosure_and_its_definition():
    rng = random.Random(1)
    for _ in range(20):
        X = [tuple(rng.uniform(-2, 2) for _ in range(2)) for _ in range(rng.randint(1, 5))]
        value = REAL.evaluate(X, 256)
        with mpmath.workprec(256):
            assert abs(value - to_mpf(REAL.enclose(X, 256))) < mpmath.mpf("1e-70")
        last = X[-1]
        by_hand = mpmath.mpf("0.375")
        for W, w, v in ((REAL.Ws[h], REAL.ws[h], REAL.vs[h]) for h in range(2)):  # type: ignore[index]
            scores = [sum(float(x[a]) * (sum(float(W[a][b]) * last[b] for b in range(2)) + float(w[a]))
                          for a in range(2)) for x in X]
            weights = [mpmath.exp(s) for s in scores]
            values = [sum(float(v[a]) * x[a] for a in range(2)) for x in X]
            by_hand += sum(wt * value for wt, value in zip(weights, values)) / sum(weights)
        assert abs(value - by_hand) < mpmath.mpf("1e-13")


def test_real_affine_models_merge_by_W_and_w_and_keep_c0():
    W, w = [[0.5, 0], [0, 1]], [1, 2]
    m = RealMultiHeadAttention([W, W, W], [[1, 0], [0, 1], [2, 2]], ws=[w, w, [0, 0]], c0=3)
    c = m.canonical()
    assert c is not None and c.num_heads == 2 and c.c0 == 3 and c.is_affine
    assert RealMultiHeadAttention([W], [[1, 0]], ws=[[0, 0]]).ws is None  # w = 0: no score term
    assert "c0" in m.to_dict() and "c0" not in RealMultiHeadAttention([W], [[1, 0]]).to_dict()
    exact = MultiHeadAttention.random(2, 2, seed=3, affine=True)
    real = RealMultiHeadAttention.from_exp_model(exact, 256)
    value = exact([(1, 2), (-1, 1)])
    with mpmath.workprec(256):
        assert abs(real.evaluate([(1, 2), (-1, 1)], 256) - mpmath.mpf(int(value.p)) / int(value.q)) < 1e-60


@pytest.mark.parametrize("d, H, seed", [(1, 2, 0), (2, 1, 1), (2, 2, 1), (3, 2, 2)])
def test_learn_approx_learns_W_w_v_and_c0_from_noisy_answers(d, H, seed):
    truth = MultiHeadAttention.random(d, H, seed=seed, affine=True)
    oracle = NoisyOracle(truth, eps="1e-30", seed=seed)
    assert oracle.affine
    rec = learn_approx(oracle, d, heads=H, seed=seed)  # affine: what the oracle declares
    assert rec.affine and rec.formula == 4 * H * d * (d + 1) - 2 * H + 1
    assert rec.queries == oracle.queries and rec.max_length == oracle.max_length == 2 * H + 1
    assert rec.redraws or rec.queries == rec.formula
    err = parameter_error(rec, truth)
    assert err.w_deviations is not None and err.c0_deviation is not None
    assert err.max_abs < mpmath.mpf("1e-18") and err.max_abs <= rec.error_bound
    ws, c0 = truth_offsets(truth)
    assert abs(rec.c0 - c0) <= rec.c0_radius and len(ws) == H
    data = rec.to_dict()
    assert data["affine"] is True and "w" in data["heads"][0] and "c0" in data


def test_float64_answers_of_a_real_affine_model():
    oracle = RealOracle(REAL, precision=53)
    rec = learn_approx(oracle, 2, heads=2, eps="1e-13")
    err = parameter_error(rec, REAL)
    assert rec.affine and err.max_abs < mpmath.mpf("1e-8") and err.max_abs <= rec.error_bound
    assert abs(err.c0_deviation) < mpmath.mpf("1e-10")


def test_without_biases_the_result_and_its_json_are_as_before():
    truth = MultiHeadAttention.random(2, 2, seed=1)
    rec = learn_approx(NoisyOracle(truth, eps="1e-30", seed=1), 2, heads=2)
    assert not rec.affine and rec.heads[0].w is None and rec.c0 is None
    assert "affine" not in rec.to_dict() and "w" not in rec.to_dict()["heads"][0]
    err = parameter_error(rec, truth)
    assert err.w_deviations is None and err.c0_deviation is None
    both = learn_approx(NoisyOracle(truth, eps="1e-30", seed=1), 2, heads=2, affine=True)
    assert parameter_error(both, truth).max_abs < mpmath.mpf("1e-18")  # w = 0, c0 = 0 within the noise
    assert max(abs(x) for h in both.heads for x in h.w or ()) < mpmath.mpf("1e-18")


@pytest.mark.slow  # guided approximate runs: about 13 s
def test_guides_model_the_score_vectors_of_affine_attention():
    truth = MultiHeadAttention.random(3, 2, seed=1, affine=True)
    heads = guide_heads(truth)
    assert [len(h) for h in heads] == [3, 3]  # (W_h, v_h, w_h)
    x, z = (1, 0, 1), (2, 1, 0)  # the predicted condition sees w_h
    assert predicted_condition(heads, 1, x, z) != predicted_condition([h[:2] for h in heads], 1, x, z)
    rec = learn_approx(NoisyOracle(truth, eps="1e-30", seed=2), 3, heads=2, guide=truth)
    assert rec.affine and parameter_error(rec, truth).max_abs < mpmath.mpf("1e-20")
    assert guide_heads(rec)[0][2].shape == (3,)  # a pilot recovery guides with its w_h too


def test_what_affine_runs_do_not_offer_is_refused():
    truth = MultiHeadAttention.random(2, 2, seed=1, affine=True)
    with pytest.raises(InvalidArgumentError, match="affine attention"):
        sensitivity(truth)
    with pytest.raises(InvalidArgumentError, match="affine attention"):
        choose_scale(REAL)
