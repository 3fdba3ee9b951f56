"""exactlearn.approx.guide.sketch: rough heads from few answers, the default guide for H >= 3."""

from __future__ import annotations

import dataclasses
import random
from itertools import permutations

import mpmath
import numpy as np
import pytest
from flint import fmpq

from exactlearn import InvalidArgumentError
from exactlearn.approx import NoisyOracle, RealMultiHeadAttention, learn_approx, parameter_error, sensitivity
from exactlearn.approx.core.balls import working_precision
from exactlearn.approx.core.learner import ScaledQueries
from exactlearn.approx.guide.choice import GuideMode
from exactlearn.approx.guide.chooser import guide_heads, guided_chain, predicted_constant
from exactlearn.approx.guide.sketch import FirstRow, Row, Term, _pairings, sketch_heads, sketch_query_count
from exactlearn.chain import TokenChain
from exactlearn.counter import QueryCounter
from exactlearn.schedule import TokenSampler, add_tokens, sub_tokens
from exactlearn.settings import DEFAULT_SETTINGS

SKETCH_SCALE = DEFAULT_SETTINGS.guide.sketch_scale
SKETCH_MAX_HEADS = DEFAULT_SETTINGS.guide.sketch_max_heads


def small_model(seed: int, d: int = 3, heads: int = 3) -> RealMultiHeadAttention:
    """``W_h`` entries N(0, 0.3^2), ``v_h`` entries N(0, 1) (floats)."""
    rng = random.Random(f"test.sketch:{seed}")
    Ws = [[[rng.gauss(0, 0.3) for _ in range(d)] for _ in range(d)] for _ in range(heads)]
    return RealMultiHeadAttention(Ws, [[rng.gauss(0, 1) for _ in range(d)] for _ in range(heads)])


def test_a_sketch_is_close_to_the_model_and_counts_its_queries():
    model = small_model(0)
    oracle = NoisyOracle(model, "1e-15", seed=1)
    with working_precision(256):
        sk = sketch_heads(ScaledQueries(oracle, fmpq(SKETCH_SCALE)), 3, 3)
    assert sk.queries == oracle.queries >= sketch_query_count(3, 3)
    assert sk.rank is None and len(sk.plan) == 9  # W_h of full rank: no low-rank fit explains the rows
    rough, true = sk.guide(SKETCH_SCALE), guide_heads(model)
    err = min(max(max(np.abs(rough[i][0] - true[p[i]][0]).max(), np.abs(rough[i][1] - true[p[i]][1]).max())
                  for i in range(3)) for p in permutations(range(3)))
    assert err < 1e-2  # rough, but a guide needs no more


def test_a_rank_one_layer_is_sketched_from_fewer_configurations():
    """``W_h = q_h k_h^T`` (torch's layers with ``d = H``): the sketch stops once a rank-one fit
    explains its rows (5 parameters per head at ``d = 3``, 2 spare rows and one it may leave out, so 8
    rows) and asks fewer queries than a sketch of all ``d^2`` configurations can; its W_h are as close
    as a full sketch's."""
    rng = random.Random("test.sketch:rank one")
    Ws = [[[0.6 * q * k for k in ks] for q in qs]
          for qs, ks in (([rng.gauss(0, 1) for _ in range(3)], [rng.gauss(0, 1) for _ in range(3)])
                         for _ in range(3))]
    model = RealMultiHeadAttention(Ws, [[rng.gauss(0, 1) for _ in range(3)] for _ in range(3)])
    oracle = NoisyOracle(model, "1e-15", seed=1)
    with working_precision(256):
        sk = sketch_heads(ScaledQueries(oracle, fmpq(SKETCH_SCALE)), 3, 3)
    assert sk.rank == 1 and len(sk.plan) == 8
    assert sk.queries == oracle.queries < sketch_query_count(3, 3)
    rough, true = sk.guide(SKETCH_SCALE), guide_heads(model)
    err = min(max(max(np.abs(rough[i][0] - true[p[i]][0]).max(), np.abs(rough[i][1] - true[p[i]][1]).max())
                  for i in range(3)) for p in permutations(range(3)))
    assert err < 1e-2


def test_the_default_sketches_from_three_heads_and_counts_everything():
    model = small_model(1)
    oracle = NoisyOracle(model, "1e-15", seed=1)
    rec = learn_approx(oracle, 3, heads=3)
    assert 0 < rec.sketch_queries < rec.queries == oracle.queries
    assert rec.scale == SKETCH_SCALE
    C = sensitivity(model, recovery=rec).C_upper
    plain_oracle = NoisyOracle(model, "1e-15", seed=1)
    plain = learn_approx(plain_oracle, 3, heads=3, guide=None)
    assert plain.sketch_queries == 0 and plain.queries == plain_oracle.queries
    assert C < sensitivity(model, recovery=plain).C_upper / 100  # the point of the sketch
    assert parameter_error(rec, model).max_abs <= 2 * C * mpmath.mpf("1e-15")


def test_every_pairing_is_ranked_once_in_lexicographic_order():
    # the library's perfect matchings of the complete bipartite graph, in the order ties are broken in
    for heads in range(1, 6):
        assert [tuple(p) for p in _pairings(heads)] == list(permutations(range(heads)))


def test_a_one_head_sketch_needs_no_pairing():
    model = small_model(4, d=2, heads=1)
    oracle = NoisyOracle(model, "1e-15", seed=1)
    rec = learn_approx(oracle, 2, heads=1, guide=GuideMode.SKETCH)  # the enum, or its string "sketch"
    assert 0 < rec.sketch_queries < rec.queries == oracle.queries
    assert parameter_error(rec, model).max_abs < 1e-10


def test_two_heads_keep_random_configurations_by_default():
    model = small_model(2, heads=2)
    default = learn_approx(NoisyOracle(model, "1e-15", seed=1), 3, heads=2)
    plain = learn_approx(NoisyOracle(model, "1e-15", seed=1), 3, heads=2, guide=None)
    assert default.sketch_queries == 0 and default.measurements == plain.measurements
    assert default.queries == plain.queries


def test_an_unknown_guide_name_is_refused():
    with pytest.raises(InvalidArgumentError, match="guide"):
        learn_approx(NoisyOracle(small_model(0, heads=2), "1e-15"), 3, heads=2, guide="pilot")


def test_scaled_queries_send_exact_floats():
    calls = []

    def oracle(tokens):
        calls.append(tokens)
        return len(calls)

    seen = ScaledQueries(oracle, fmpq(2))
    assert seen([(1, 0), (0, 1)]) == 1 and calls == [[(2.0, 0.0), (0.0, 2.0)]]
    with pytest.raises(InvalidArgumentError, match="not a float"):
        ScaledQueries(oracle, fmpq(1, 3))([(1, 0)])


def plans(n: int):
    """The guide settings with ``n`` plans drawn before the first query."""
    return dataclasses.replace(DEFAULT_SETTINGS.guide, plans=n)


def test_the_chosen_plan_has_the_smallest_predicted_constant():
    guide = guide_heads(small_model(3))
    one = guided_chain(3, 9, TokenSampler(3, 2, random.Random(0)), guide, 2.0, settings=plans(1))
    many = guided_chain(3, 9, TokenSampler(3, 2, random.Random(0)), guide, 2.0, settings=plans(8))
    one.draw()
    many.draw()

    def predicted(chain):
        return predicted_constant(guide, 2.0, [chain.tokens_of(j) for j in range(9)])

    assert predicted(many) <= predicted(one)
    assert [(c.x, c.z) for c in many.configs] == [many.tokens_of(j) for j in range(9)]


def test_the_sketch_is_bounded_in_heads():
    # the sketch tries every pairing (H! of them): more than SKETCH_MAX_HEADS heads are refused before
    # any query, and the default learns them without a sketch
    from exactlearn.approx.guide.choice import _sketches

    asked = []
    with pytest.raises(InvalidArgumentError, match="at most"):
        sketch_heads(lambda tokens: asked.append(tokens) or 0, 2, SKETCH_MAX_HEADS + 1)
    with pytest.raises(InvalidArgumentError, match="guide='sketch'"):
        learn_approx(lambda tokens: asked.append(tokens) or 0, 2, heads=SKETCH_MAX_HEADS + 1, eps="1e-20",
                     guide="sketch")
    assert asked == []
    heads = (2, 3, SKETCH_MAX_HEADS, SKETCH_MAX_HEADS + 1)
    assert [_sketches("auto", h, DEFAULT_SETTINGS.guide) for h in heads] == [False, True, True, False]


def test_the_sketch_knows_u_from_single_tokens():
    # f([t]) = u^T t for every attention: d answers to single tokens give u to float64 accuracy
    from exactlearn.approx.guide.sketch import _linear_part, _Sketcher

    u = np.array([0.5, -1.25, 2.0])
    counter = QueryCounter(lambda tokens: float(u @ np.array(tokens[-1], dtype=float)), remember=True)
    sketcher = _Sketcher(counter, 3, 2, random.Random(0), 2)
    assert np.abs(_linear_part(sketcher, (1, 0, 1)) - u).max() < 1e-12
    assert counter.queries == 3 and counter.remembers([(1, 0, 1)])


def test_the_sketch_plan_follows_the_chain():
    from exactlearn.schedule import link_kind, sub_tokens, weight_row
    from exactlearn.states import LinkKind

    oracle = NoisyOracle(small_model(0), "1e-15", seed=1)
    with working_precision(256):
        sk = sketch_heads(QueryCounter(ScaledQueries(oracle, fmpq(SKETCH_SCALE)), remember=True), 3, 3)
    plan = sk.plan
    assert len(plan) == 9 and np.linalg.matrix_rank(np.array([weight_row(x, z) for x, z in plan])) == 9
    chained = []
    for j in range(1, 9):
        (px, pz), (x, z) = plan[j - 1], plan[j]
        if link_kind(j, 3) is LinkKind.X:
            chained.append(x == px)
        else:
            chained.append(sub_tokens(z, x) == sub_tokens(pz, px))
    assert all(chained[:2])  # the first d configurations share x
    assert sum(chained) >= 6  # a configuration drawn freely breaks one link, no more


def test_an_offered_plan_is_kept_where_the_guide_cannot_choose():
    # a guide with v = 0 predicts every configuration singular (condition inf): every fresh candidate
    # is as bad as the offered vector, so the plan is kept. A plan that is not a chain (configuration
    # 1's a is not configuration 2's) breaks only configuration 2: it takes the plan's x with the a
    # it shares, and configuration 3 (sharing that x) is the plan's again
    guide = [(np.zeros((2, 2)), np.zeros(2))]
    plain = TokenChain(2, 4, TokenSampler(2, 2, random.Random(5)))
    plain.draw()
    plan = [plain.tokens_of(j) for j in range(4)]
    chain = guided_chain(2, 4, TokenSampler(2, 2, random.Random(1)), guide, 1.0, reuse=plan,
                         settings=plans(1))
    chain.draw()
    assert [chain.tokens_of(j) for j in range(4)] == plan
    (x1, z1) = plan[1]
    broken = [plan[0], (x1, add_tokens(z1, (1, 1))), plan[2], plan[3]]  # config 1's a is not a chain's
    chain = guided_chain(2, 4, TokenSampler(2, 2, random.Random(1)), guide, 1.0, reuse=broken,
                         settings=plans(1))
    chain.draw()
    got = [chain.tokens_of(j) for j in range(4)]
    assert got[:2] == broken[:2] and got[3] == broken[3] and got[2] != broken[2]
    assert got[2][0] == broken[2][0]


def _true_row(model, x, z):
    """The step-1 row of the model's copy function at ``(x, z)``, heads in the model's order."""
    a = np.array(z, dtype=float) - np.array(x, dtype=float)
    heads = guide_heads(model)
    terms = [Term(float(np.exp(a @ W @ np.array(x, dtype=float))), float(-(v @ a))) for W, v in heads]
    u = sum(v for _, v in heads)
    return FirstRow(x, z, terms, float(u @ np.array(z, dtype=float)))


def test_a_step_one_link_that_cannot_pair_falls_back_to_an_earlier_configuration(monkeypatch):
    """The new configuration is paired through its matching configuration with an earlier one (a few
    answers) instead of being drawn again when the link with the last one shows no clear pairing."""
    import exactlearn.approx.guide.sketch as sketch
    from exactlearn.approx.core.models import RealOracle

    model = small_model(0)
    sk = sketch._Sketcher(QueryCounter(RealOracle(model, 106), remember=True), 3, 3, random.Random(0), 2)
    x = (1, 0, 1)
    rows = [_true_row(model, x, z) for z in [(2, 1, 1), (1, -1, 2)]]
    _, z, terms, infinity = _true_row(model, x, (0, 1, 2))
    shuffled = [terms[2], terms[0], terms[1]]
    assert sketch._paired(sk, rows, x, z, shuffled, infinity) == [1, 2, 0]
    asked = []
    real = sketch._pairing

    def without_the_last_link(sk_, prev, cur, oo, xc, zc):
        asked.append(prev is rows[-1].terms)
        return None if prev is rows[-1].terms else real(sk_, prev, cur, oo, xc, zc)

    monkeypatch.setattr(sketch, "_pairing", without_the_last_link)
    assert sketch._paired(sk, rows, x, z, shuffled, infinity) == [1, 2, 0] and asked == [True, False]
    monkeypatch.setattr(sketch, "_pairing", lambda *args: None)
    assert sketch._paired(sk, rows, x, z, shuffled, infinity) is None


def test_step_one_configurations_are_chosen_by_the_partial_guide():
    """After the first configuration, the next one's ``a`` is the candidate with the smallest condition
    predicted from what is known so far. Here what is known is everything (``W_h x`` and ``v_h`` lie
    along the first ``a``), so the choice is as good as the best of 64 other random candidates."""
    import exactlearn.approx.guide.sketch as sketch
    from exactlearn.approx.guide.chooser import predicted_condition
    from exactlearn.schedule import LinkKind, linked_tokens

    x, a0 = np.array([1.0, 2.0, 0.0]), np.array([1.0, -1.0, -1.0])
    Ws = [(beta * np.outer(a0, x) / (x @ x)).tolist() for beta in (0.3, -0.5, 0.9)]
    model = RealMultiHeadAttention(Ws, [(gamma * a0).tolist() for gamma in (1.0, -2.0, 0.5)])
    truth = guide_heads(model)
    xt = (1, 2, 0)
    rows = [_true_row(model, xt, (2, 1, -1))]

    def cost(z):
        link = linked_tokens(LinkKind.X, rows[0].pair, (xt, z))
        return max(predicted_condition(truth, 1.0, xt, z), predicted_condition(truth, 1.0, *link))

    sampler = TokenSampler(3, 2, random.Random(2))
    best_random = min(cost(add_tokens(xt, t)) for t in (sampler.token() for _ in range(64)) if any(t))
    for seed in range(4):
        sk = sketch._Sketcher(QueryCounter(lambda tokens: 0.0), 3, 3, random.Random(seed), 2)
        assert cost(sketch._first_choice(sk, rows)) <= best_random * (1 + 1e-9)


def test_from_seven_heads_the_partial_guide_assumes_a_torch_rank():
    """With ``d_head = 1`` (torch's ``d = H``) ``W_h = q_h k_h^T``. From ``sketch_rank_prior_heads`` heads
    on the partial guide fits rank ``ceil(d/H)`` to the rows: once ``d`` rows sharing ``x0`` give
    ``W_h x0`` and one row gives a score at ``x1``, it predicts the score of any other ``a`` at ``x1``,
    which the least-norm ``W_h`` (used below that many heads) does not."""
    import exactlearn.approx.guide.sketch as sketch

    guide = DEFAULT_SETTINGS.guide
    counter = QueryCounter(lambda tokens: 0.0)
    assert sketch._Sketcher(counter, 8, 8, random.Random(0), 2).prior_rank == 1
    assert sketch._Sketcher(counter, 8, 4, random.Random(0), 2).prior_rank is None  # (below 7 heads)
    rng = np.random.default_rng(3)
    Ws = [np.outer(rng.normal(size=3), rng.normal(size=3)) for _ in range(3)]
    x0, x1 = (1, 0, 2), (0, 1, -1)
    pairs = [(x0, (2, 1, 2)), (x0, (1, -1, 2)), (x0, (0, 0, 1)), (x1, (1, 1, 0))]
    rows = [Row(x, z, np.array([np.array(sub_tokens(z, x)) @ W @ np.array(x) for W in Ws])) for x, z in pairs]
    a = np.array([2.0, -1.0, 1.0])
    truth = [a @ W @ np.array(x1) for W in Ws]
    for prior, close in ((3, True), (guide.sketch_rank_prior_heads, False)):
        settings = dataclasses.replace(guide, sketch_rank_prior_heads=prior)
        sk = sketch._Sketcher(counter, 3, 3, random.Random(0), 2, settings)
        predicted = [a @ W @ np.array(x1) for W, _ in sketch._partial_guide(sk, rows, np.ones((3, 3)))]
        assert np.allclose(predicted, truth, atol=1e-8) is close


def test_values_are_read_where_each_head_shows():
    """``v_h`` is fitted from every configuration's residues, each weighted by how well the head shows
    there: a configuration where it does not show at all (here ``c = v^T (x - z) = 0``) is ignored,
    however wrong its fitted residue."""
    import exactlearn.approx.guide.sketch as sketch

    W, v = np.array([[0.2, -0.1], [0.3, 0.1]]), np.array([1.0, 2.0])
    x = (1, 1)
    step_one = [(x, (2, 1)), (x, (1, 3))]
    later = [((1, -1), (2, 1)), ((2, 1), (4, 0))]  # the last: a = (2, -1), v^T a = 0
    rows = [Row(px, pz, None) for px, pz in step_one + later]
    sk = sketch._Sketcher(QueryCounter(lambda tokens: 0.0), 2, 1, random.Random(0), 2)

    def residue(px, pz):
        return [float(v @ (np.array(px) - np.array(pz)))]

    residues = np.array([residue(*p) for p in step_one])
    sk.residues = {p: residue(*p) for p in later}
    sk.residues[later[1]] = [5.0]  # a fit that missed the invisible head entirely
    values = sketch._weighted_values(sk, rows, residues, [(W, v)])
    assert np.abs(values[0] - v).max() < 1e-12


def test_the_weights_follow_the_amplification():
    """Residues off by their amplification times a small ``delta`` (what float64 fits give): weighted by
    ``1 / amplification`` the rough ``v`` is much closer than unweighted."""
    import exactlearn.approx.guide.sketch as sketch
    from exactlearn.approx.guide.chooser import amplifications

    W, v = np.array([[0.3, -0.2], [0.1, 0.4]]), np.array([1.0, 0.05])
    x = (1, 1)
    pairs = [(x, (2, 1)), (x, (1, 3)), ((1, -1), (2, 1)), ((2, 1), (3, 3)), ((-1, 2), (1, 1))]
    rows = [Row(px, pz, None) for px, pz in pairs]
    sk = sketch._Sketcher(QueryCounter(lambda tokens: 0.0), 2, 1, random.Random(0), 2)
    noisy = {}
    for i, (px, pz) in enumerate(pairs):
        amp = amplifications([(W, v)], 1.0, px, pz)[0][0]
        noisy[(px, pz)] = [float(v @ (np.array(px) - np.array(pz))) + 1e-9 * amp * (-1) ** i]
    sk.residues = {p: noisy[p] for p in pairs[2:]}
    residues = np.array([noisy[p] for p in pairs[:2]])
    weighted = sketch._weighted_values(sk, rows, residues, [(W, v)])[0]
    A = np.array([np.array(px) - np.array(pz) for px, pz in pairs], dtype=float)
    plain = np.linalg.lstsq(A, np.array([noisy[p][0] for p in pairs]), rcond=None)[0]
    assert np.abs(weighted - v).max() * 5 < np.abs(plain - v).max()  # (here 9x)


def test_the_sketch_reads_v_from_the_weighted_fit(monkeypatch):
    import exactlearn.approx.guide.sketch as sketch

    model = small_model(0)
    marker = np.full((3, 3), 7.0)
    monkeypatch.setattr(sketch, "_weighted_values", lambda sk, rows, residues, rough: marker)
    with working_precision(256):
        sk = sketch_heads(ScaledQueries(NoisyOracle(model, "1e-15", seed=1), fmpq(SKETCH_SCALE)), 3, 3)
    assert all((v == 7.0).all() for _, v in sk.heads)


def test_a_later_x_that_widens_the_span_is_preferred(monkeypatch):
    """Even when the guide predicts the best condition for an ``x`` in the span of the rows' ``x``
    (here the first three coordinates), configuration 8, which creates a new ``x``, takes one
    outside it while they do not span the tokens."""
    import exactlearn.approx.guide.sketch as sketch
    from exactlearn.schedule import full_rank

    e = [tuple(int(i == k) for i in range(4)) for k in range(4)]
    x0, x4, x6, a5, a7 = e[0], e[1], e[2], (1, 1, 0, -1), (0, 1, -1, 1)
    pairs = [(x0, add_tokens(x0, a)) for a in e] + [(x4, add_tokens(x4, e[3])), (x4, add_tokens(x4, a5)),
                                                     (x6, add_tokens(x6, a5)), (x6, add_tokens(x6, a7))]
    rows = [Row(x, z, np.zeros(1)) for x, z in pairs]
    sk = sketch._Sketcher(QueryCounter(lambda tokens: 0.0), 4, 1, random.Random(3), 2)

    def favours_the_span(partial, scale, pairs, settings, points=()):
        return [1.0 if x[3] == 0 else 100.0 for x, _ in pairs]

    monkeypatch.setattr(sketch, "predicted_conditions", favours_the_span)
    x, z = sketch._choose(sk, 8, rows, np.ones((1, 4)), chained=True)
    assert x[3] != 0 and full_rank([x0, x4, x6, x], 4)
    assert sub_tokens(z, x) == a7  # the link shares a

