"""The approximate path: noisy and float oracles, learn_approx, the constant C, refusals.

Every count is read from the oracle's own log; every bound is compared with a
measured error; the reference values (true parameters) come from the models,
never from the learner.
"""

from __future__ import annotations

import mpmath
import pytest
from flint import arb, fmpq

from exactlearn import (
    InconsistentAnswersError,
    InvalidArgumentError,
    MultiHeadAttention,
    Oracle,
    OracleOutputError,
    RecoveryError,
    RedrawBudgetExceeded,
    learn,
    paper_query_count,
)
from exactlearn.approx import (
    AmbiguousAnswersError,
    NoisyOracle,
    RealMultiHeadAttention,
    RealOracle,
    choose_scale,
    learn_approx,
    parameter_error,
    sensitivity,
    suggested_max_condition,
)
from exactlearn.approx.bounds.jacobian import Parameter, ParameterKind
from exactlearn.approx.bounds.thresholds import Threshold, wrong_matching_threshold
from exactlearn.approx.core.field import RealBalls
from exactlearn.approx.core.models import exact_tokens
from exactlearn.demos.evidence import (
    LINEAR_TOLERANCE,
    SLACK,
    evidence_models,
    mild_exp_model,
    refusal_demo,
    sharpness,
    sweep,
)
from exactlearn.matching import link_matchings
from exactlearn.schedule import copies_query

# W = log E close to 0 (scores of order one); v chosen so the paper schedule needs no redraw
E = [[["11/10", "9/10"], ["4/5", "6/5"]], [["6/5", 1], ["9/10", "4/3"]]]
EXP_MODEL = MultiHeadAttention.from_lists(E, [[1, -2], [3, 1]])
REAL_MODEL = RealMultiHeadAttention.random(2, 2, seed=0)


def mpf(q: fmpq) -> mpmath.mpf:
    return mpmath.mpf(int(q.p)) / int(q.q)


# -- oracles --------------------------------------------------------------------------------
def test_noisy_oracle_adds_exactly_known_bounded_reproducible_noise():
    oracle = NoisyOracle(EXP_MODEL, "1e-20", seed=3)
    queries = [[(1, 0), (0, 1)], [(2, -1)], [(1, 1), (1, 1), (0, -2)]]
    for q in queries:
        answer = oracle(q)
        noise = oracle.noise(q)
        assert answer - EXP_MODEL(q) == noise           # exact rationals: the noise is known exactly
        assert 0 < abs(noise) <= fmpq(1, 10**20)
        assert oracle(q) == answer                       # reproducible per query
    assert NoisyOracle(EXP_MODEL, "1e-20", seed=4).noise(queries[0]) != oracle.noise(queries[0])
    assert (oracle.queries, oracle.max_length) == (6, 3)


def test_noisy_oracle_on_a_real_model_is_within_its_declared_eps():
    oracle = NoisyOracle(REAL_MODEL, "1e-30", seed=1)
    q = [(0.5, -1.0), (1.0, 0.25)]
    answer = oracle(q)
    exact = REAL_MODEL.enclose(q, 600)
    exact_mid = mpmath.mpf(exact.mid().str(200, radius=False))
    assert abs(answer - mpf(oracle.noise(q)) - exact_mid) < mpf(oracle.eps)
    assert oracle.eps > oracle.nominal_eps  # the evaluation slack 2^-256 is declared


def test_noisy_oracle_refuses_non_integer_tokens_for_exp_models():
    with pytest.raises(Exception, match="integer"):
        NoisyOracle(EXP_MODEL, "1e-10")([(0.5, 1.0)])


def test_real_oracle_answers_like_floats_and_logs_its_rigorous_error():
    oracle = RealOracle(REAL_MODEL, precision=53)
    q = [(1.0, -2.0), (0.0, 1.0), (2.0, 2.0)]
    answer = oracle(q)
    assert answer.context.prec >= 53
    assert 0 < oracle.max_error < mpmath.mpf(2) ** -45   # a float64-sized error, measured rigorously
    strict = RealOracle(REAL_MODEL, precision=53, eps="1e-30")
    with pytest.raises(OracleOutputError, match="exceeds its declared bound"):
        strict(q)


def test_real_model_evaluation_matches_the_formula():
    m = RealMultiHeadAttention([[[0.5, 0], [0, -0.25]]], [[1, 2]])
    with mpmath.mp.workprec(200):
        e = mpmath.exp(mpmath.mpf(-0.25))
        expected = (1 + 2 * e) / (1 + e)  # scores: x1^T W x2 = W[0][1] = 0, x2^T W x2 = W[1][1] = -1/4
        assert abs(m.evaluate([(1.0, 0.0), (0.0, 1.0)], 200) - expected) < mpmath.mpf(2) ** -190
        assert abs(m.evaluate([(1.0, 0.0), (0.0, 1.0)], 53) - expected) > mpmath.mpf(2) ** -120  # float-like


# -- learning ---------------------------------------------------------------------------------
def test_learn_approx_exp_model_counts_and_bound():
    oracle = NoisyOracle(EXP_MODEL, "1e-30", seed=1)
    rec = learn_approx(oracle, 2, heads=2)
    assert (rec.queries, rec.max_length, rec.redraws) == (oracle.queries, oracle.max_length, 0)
    assert rec.queries == paper_query_count(2, 2) and rec.counts_as_planned
    err = parameter_error(rec, EXP_MODEL)
    C = sensitivity(EXP_MODEL, recovery=rec).C_upper
    assert err.max_abs <= C * mpf(oracle.eps)
    assert err.max_abs > 0                               # the noise did reach the parameters
    assert err.max_abs <= rec.error_bound                # the radii cover the error


def test_learn_approx_real_model_returns_real_W_not_exp():
    oracle = NoisyOracle(REAL_MODEL, "1e-25", seed=2)
    rec = learn_approx(oracle, 2, heads=2, max_condition=suggested_max_condition(2))
    err = parameter_error(rec, REAL_MODEL)
    assert err.max_abs <= sensitivity(REAL_MODEL, recovery=rec).C_upper * mpf(oracle.eps)
    W = rec.heads[0].W
    assert len(W) == 2 and all(len(row) == 2 for row in W) and isinstance(W[0][0], mpmath.mpf)
    # a real W has negative entries; exp W has none
    assert any(x < 0 for h in rec.heads for row in h.W for x in row)


def test_query_scale_is_undone():
    oracle = NoisyOracle(REAL_MODEL, "1e-30", seed=2)
    rec = learn_approx(oracle, 2, heads=2, scale="1/2")
    assert rec.scale == fmpq(1, 2)
    assert parameter_error(rec, REAL_MODEL).max_abs < mpmath.mpf("1e-20")


def test_sweep_is_linear_and_within_C_eps():
    sw = sweep(evidence_models()["real-valued d=2 H=2 (seed 0)"], ("1e-10", "1e-24", "1e-40"))
    assert all(mpf(r.eps) < sw.reference.noise_threshold for r in sw.rows)  # the claim's regime
    assert sw.failures() == []
    assert all(r.recovered and r.same_queries for r in sw.rows)
    assert all(r.ratio <= (1 + mpf(SLACK)) * r.C for r in sw.rows)
    assert sw.ratio_spread <= mpf(LINEAR_TOLERANCE)
    assert abs(sw.slope - 1) < mpmath.mpf("1e-3")
    # the error is the first-order prediction DF . noise plus a second-order part
    assert sw.rows[-1].deviation < mpmath.mpf("1e-20")
    assert sw.rows[0].deviation > sw.rows[1].deviation > sw.rows[2].deviation


def test_C_is_attained_by_the_worst_case_noise():
    result = sharpness(mild_exp_model(2, 2, 0))
    assert result.same_queries
    assert result.relative_gap < mpmath.mpf("1e-6")


def test_C_is_exact_for_exp_models_and_a_ball_for_real_models():
    assert sensitivity(EXP_MODEL).exact
    assert isinstance(sensitivity(EXP_MODEL).C, fmpq)
    assert not sensitivity(REAL_MODEL).exact


def test_thresholds_conditions_and_parameters_are_named_states():
    sens = sensitivity(EXP_MODEL)
    assert set(sens.thresholds) == set(Threshold) and sens.binding.first_order
    assert sens.thresholds[sens.binding] == sens.noise_threshold == sens.conditions["noise_threshold"]
    assert min(v for t, v in sens.thresholds.items() if t.first_order) == sens.noise_threshold
    assert sens.thresholds["residue vs zero"] is sens.thresholds[Threshold.RESIDUE]  # strings still index
    worst = sens.worst_parameter
    assert isinstance(worst, Parameter) and (worst.column is None) == (worst.kind == "v")
    assert sens.C_upper == (sens.C_W if worst.kind is ParameterKind.WEIGHT else sens.C_v)


def test_rigorous_balls_contain_the_truth():
    oracle = NoisyOracle(REAL_MODEL, "1e-20", seed=5)
    rec = learn_approx(oracle, 2, heads=2, rigorous=True)
    err = parameter_error(rec, REAL_MODEL)
    for i, j in enumerate(err.permutation):
        dW, dv = err.deviations[j]
        assert all(abs(dW[a][b]) <= rec.heads[i].W_radius[a][b] for a in range(2) for b in range(2))
        assert all(abs(dv[a]) <= rec.heads[i].v_radius[a] for a in range(2))


def test_choose_scale_picks_the_smallest_C():
    choice = choose_scale(REAL_MODEL, scales=("1/2", 1, 2))
    usable = [C for _, C, _ in choice.table if C is not None]
    assert choice.C == min(usable) and len(usable) >= 2


# -- refusing instead of guessing --------------------------------------------------------------
def test_ambiguous_pairing_under_large_noise_is_refused():
    demo = refusal_demo()   # two heads with the same v: the chain pairs them by pole products only
    assert demo.binding == "matching (wrong pairing)" and demo.threshold < mpmath.mpf(demo.eps[0])
    # above the threshold: without a redraw budget the learner raises at the first problem
    assert demo.refused_at_once and isinstance(demo.first, AmbiguousAnswersError)
    # with the default budget it redraws, some links for a pairing that is not unique, then refuses
    assert any("matching by poles and residues is not unique" in str(r) for r in demo.refused.reasons)
    error = demo.refused
    assert isinstance(error, AmbiguousAnswersError) and isinstance(error, RecoveryError)
    assert isinstance(error, RedrawBudgetExceeded) and "refuses to guess" in str(error)
    assert error.ambiguous_matchings > 0 and error.queries > 0
    # below it: recovered within C eps
    assert demo.recovered is not None and demo.holds


def test_a_pairing_the_balls_cannot_decide_is_not_made():
    # head 0 of configuration j-1 pairs with head 0 or 1 of j: both pole products overlap both targets
    field = RealBalls("1e-3")
    ball = lambda x, r="1e-3": arb(x) + arb(0, arb(r))  # noqa: E731
    prev = [(ball(1), ball(1)), (ball(2), ball(1))]
    cur = [(ball("1.0001"), ball(1)), (ball("1.0002"), ball(1))]
    target = [(ball("1.00015"), ball(2)), (ball("2.0003"), ball(2))]
    assert len(link_matchings(field, "x", prev, cur, target, limit=2)) == 2   # the learner redraws
    sharp = [(ball("1.0001", "1e-9"), ball(1)), (ball("1.0002", "1e-9"), ball(1))]
    narrow = [(ball("1.0001", "1e-9"), ball(2)), (ball("2.0004", "1e-9"), ball(2))]
    sharp_prev = [(ball(1, "1e-9"), ball(1)), (ball(2, "1e-9"), ball(1))]
    found = link_matchings(field, "x", sharp_prev, sharp, narrow, limit=2)
    assert found == [([0, 1], [0, 1])]                                            # unique: accepted


def test_rho_of_the_ball_field_encloses_exp_of_the_score():
    field = RealBalls(0)
    W = [[arb("0.25") + arb(0, arb("1e-10")), arb("-0.5")], [arb("0.125"), arb(1)]]
    rho = field.rho(W, (1, -2), (2, 1))   # 1*2*0.25 + 1*1*(-0.5) + (-2)*2*0.125 + (-2)*1*1 = -2.5
    assert rho.contains(arb("-2.5").exp()) and rho.rad() < 1e-9


def test_the_links_only_pair_heads_they_do_not_move_the_parameters():
    # noise on the matching configurations' answers alone leaves every recovered parameter unchanged
    clean = learn_approx(NoisyOracle(EXP_MODEL, "1e-20", pattern=lambda q: 0), 2, heads=2)
    measured = {exact_tokens(tuple(tuple(fmpq(t) for t in tok) for tok in copies_query(x, z, k)), 2)
                for x, z in clean.measurements for k in range(5)}
    links = clean.links
    assert sorted(links) == [1, 2, 3] and {c.link for c in links.values()} == {"x", "a"}

    def on_links_only(query):
        return 0 if query in measured else 1

    noisy = learn_approx(NoisyOracle(EXP_MODEL, "1e-20", pattern=on_links_only), 2, heads=2)
    assert noisy.measurements == clean.measurements and sorted(noisy.links) == sorted(links)
    assert [h.W for h in noisy.heads] == [h.W for h in clean.heads]
    assert [h.v for h in noisy.heads] == [h.v for h in clean.heads]
    assert sensitivity(EXP_MODEL, recovery=clean).links == [(j, links[j].link) for j in sorted(links)]


def test_wrong_pairing_threshold_is_the_bottleneck_level():
    inf = mpmath.inf
    # H = 2: edge[h][h'][t]; the identity edges are 0. Swapping needs edges (0,1,*) and (1,0,*)
    edge = [[[0, 5], [3, 7]], [[4, 9], [6, 0]]]
    # wrong pairings: sigma = id, tau = swap: max(5, 6) = 6; sigma = swap, tau = id: max(3, 9) = 9;
    # sigma = swap, tau = swap: max(7, 4) = 7  ->  6
    assert wrong_matching_threshold(edge, 2) == 6
    assert wrong_matching_threshold([[[0]]], 1) == inf


def test_an_underestimated_eps_is_an_error_not_a_wrong_answer():
    oracle = NoisyOracle(REAL_MODEL, "1e-6", seed=1)
    with pytest.raises(InconsistentAnswersError, match="eps underestimates"):
        learn_approx(oracle, 2, heads=2, eps="1e-40")


def test_too_few_heads_is_an_error():
    with pytest.raises((InconsistentAnswersError, AmbiguousAnswersError)):
        learn_approx(NoisyOracle(REAL_MODEL, "1e-30"), 2, heads=1)


def test_arguments_are_checked():
    with pytest.raises(InvalidArgumentError, match="give eps"):
        learn_approx(lambda tokens: 0.0, 2, heads=1)
    with pytest.raises(InvalidArgumentError, match="not a float"):
        learn_approx(NoisyOracle(REAL_MODEL, 0), 2, heads=2, scale=fmpq(1, 3))
    with pytest.raises(OracleOutputError):
        learn_approx(lambda tokens: complex(1, 1), 2, heads=1, eps=0)


# -- the exact path is unchanged -------------------------------------------------------------
def test_exact_learning_still_exact_and_redraw_errors_carry_reasons():
    truth = MultiHeadAttention.from_lists([[[2, 1], [1, 3]], [[1, 2], [3, 1]]], [[1, -1], [2, 1]])
    rec = learn(Oracle(truth), 2, heads=2)
    assert rec.model == truth.canonical()
    assert rec.redraws > 0  # this model needs redraws with seed 0 ...
    with pytest.raises(RedrawBudgetExceeded) as info:  # ... so a zero budget fails, with the reasons
        learn(Oracle(truth), 2, heads=2, max_redraws=0)
    assert len(info.value.reasons) == 1 and info.value.queries > 0


def test_exact_and_ball_computations_of_C_agree():
    model = mild_exp_model(2, 2, 0)
    exact = sensitivity(model)                                               # fmpq throughout
    ball = sensitivity(RealMultiHeadAttention.from_exp_model(model))         # arb, W = log exp_W at 512 bits
    assert exact.exact and not ball.exact and exact.measurements == ball.measurements
    assert abs(exact.C_upper - ball.C_upper) < mpmath.mpf("1e-60") * exact.C_upper

