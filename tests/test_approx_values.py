"""Vector outputs on the approximate path (:mod:`exactlearn.approx.values`): the heads from a readout,
the value matrices from every answer, and how far they are from the layer."""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

import mpmath
import numpy as np
import pytest
from flint import fmpq

from exactlearn import InvalidArgumentError, MultiHeadAttention, OracleOutputError, RecoveryError, learn
from exactlearn.approx import (
    ApproxRecovery,
    InexactModelWarning,
    NoisyOracle,
    RealVectorOracle,
    VectorApproxRecovery,
    VectorParameters,
    learn_approx,
    parameter_error,
    vector_parameter_error,
)
from exactlearn.approx.core.balls import to_mpf
from exactlearn.approx.joint import refine_jointly
from exactlearn.approx.values import Answered, ReadoutOracle, draw_readout, fit_values, refine_scalar
from exactlearn.errors import UndeterminedFitError
from exactlearn.vector import VectorHead, VectorMultiHeadAttention

from .conftest import loud_values, worst_W


def exact_truth(d: int, heads: int, seed: int) -> VectorParameters:
    return VectorParameters.of_model(VectorMultiHeadAttention.random(d, heads, seed=seed))


def test_a_vector_oracle_gives_the_value_matrices_from_the_scalar_runs_queries():
    truth = exact_truth(3, 2, seed=0)
    oracle = RealVectorOracle(truth, 200, eps="1e-40")
    rec = learn_approx(oracle, 3, heads=2, seed=1)
    assert isinstance(rec, VectorApproxRecovery) and rec.outputs == 3
    assert rec.queries == oracle.queries  # no query beyond the scalar run's
    assert rec.readout == draw_readout(3, 1)
    error = vector_parameter_error(rec, truth)
    assert error.max_abs < mpmath.mpf("1e-25")
    assert rec.value_error_estimate < 1e-20  # the residuals show answers exact to 1e-40
    # the scalar run's heads carry v_h = V_h^T r
    with mpmath.mp.workprec(rec.precision):
        for i, j in enumerate(error.permutation):
            V = truth.heads[j][2]
            v = [sum(to_mpf(r) * V[k][a] for k, r in enumerate(rec.readout)) for a in range(3)]
            assert max(abs(x - y) for x, y in zip(rec.heads[i].v, v)) < mpmath.mpf("1e-25")


def test_another_seed_draws_another_readout_of_entries_at_least_one_half():
    assert draw_readout(4, 0) != draw_readout(4, 1)
    assert all(fmpq(1, 2) <= abs(r) <= 1 for r in draw_readout(50, 2))


def test_the_readout_declares_eps_times_its_1_norm():
    """``|r . (f~ - f)| <= |r|_1 eps`` when every coordinate is within ``eps``."""
    readout = draw_readout(3, 0)
    seen = ReadoutOracle(lambda tokens: (0, 0, 0), readout, fmpq(1, 10))
    assert seen.eps == sum(abs(r) for r in readout) / 10 and seen.eps > max(abs(r) for r in readout) / 10


def test_a_readout_that_hides_a_head_is_named_in_the_refusal():
    """Head 1 has equal rows, so a readout with r_0 = -r_1 sees V_1^T r = 0: the run on r . f refuses
    and says which readout it used; another seed learns the layer."""
    layer = VectorMultiHeadAttention([VectorHead([[1, 2], [2, 1]], [[3, 1], [0, 2]]),
                                      VectorHead([[3, 1], [1, 2]], [[1, 2], [1, 2]])])
    truth = VectorParameters.of_model(layer)
    hiding = next(s for s in range(100) if draw_readout(2, s)[0] == -draw_readout(2, s)[1])
    seeing = next(s for s in range(100) if draw_readout(2, s)[0] != -draw_readout(2, s)[1])
    r = ", ".join(str(x) for x in draw_readout(2, hiding))
    with pytest.raises(RecoveryError, match=rf"readout r = \({r}\) of seed {hiding}.*V_h\^T r = 0"):
        learn_approx(RealVectorOracle(truth, 200, eps="1e-40"), 2, heads=2, seed=hiding)
    rec = learn_approx(RealVectorOracle(truth, 200, eps="1e-40"), 2, heads=2, seed=seeing)
    assert vector_parameter_error(rec, truth).max_abs < 1e-30


def test_a_vector_oracle_is_checked_before_its_first_query():
    class NotCallable:
        outputs, d, eps = 2, 2, "1e-13"

    with pytest.raises(InvalidArgumentError, match="oracle must be callable"):
        learn_approx(NotCallable(), 2, heads=1)
    oracle = RealVectorOracle(exact_truth(2, 1, seed=0), eps="1e-13")
    with pytest.raises(InvalidArgumentError, match="eps must be >= 0, got -1$"):
        learn_approx(oracle, 2, heads=1, eps=-1)
    assert oracle.queries == 0


def test_answers_of_the_wrong_length_are_refused_clearly():
    truth = exact_truth(2, 1, seed=0)
    oracle = RealVectorOracle(truth, 200, eps="1e-40")
    short = type("Short", (), {"outputs": 3, "d": 2, "eps": "1e-40",
                               "__call__": lambda self, tokens: oracle(tokens)})()
    with pytest.raises(OracleOutputError, match="outputs = 3 but answered tuple of length 2"):
        learn_approx(short, 2, heads=1)


def test_heads_off_by_1e_3_show_in_the_fits_residuals():
    """A planted fault: the value fit given wrong W_h. Its residuals grow, and so does its estimate."""
    truth = exact_truth(3, 2, seed=0)
    oracle = RealVectorOracle(truth, 200, eps="1e-40")
    wrapped = ReadoutOracle(oracle, draw_readout(3, 0), fmpq(1, 10**40), d=3)
    good = learn_approx(wrapped, 3, heads=2, eps="1e-40")
    exact_fit = fit_values(wrapped.log, good.heads, False, good.precision)
    bent = [type(h)([[x + mpmath.mpf("1e-3") for x in row] for row in h.W], h.v, h.W_radius, h.v_radius)
            for h in good.heads]
    bad_fit = fit_values(wrapped.log, bent, False, good.precision)
    assert exact_fit.error < 1e-20 < 1e-6 < bad_fit.error


def test_too_few_answers_leave_the_value_matrices_undetermined():
    truth = exact_truth(3, 2, seed=0)
    oracle = RealVectorOracle(truth, 200, eps="1e-40")
    rec = learn_approx(oracle, 3, heads=2)
    log = [Answered.of([(1, 0, 0)], oracle([(1, 0, 0)]))] * 3
    with pytest.raises(UndeterminedFitError, match="do not determine the value matrices of 2 heads"):
        fit_values(log, rec.heads, False, rec.precision)


def test_an_inexact_value_fit_warns():
    """Answers off by 1e-3 in one coordinate: the value fit's estimate says so, with a warning."""
    truth = exact_truth(2, 1, seed=3)
    oracle = RealVectorOracle(truth, 200, eps="1e-40")
    calls = {"n": 0}

    def noisy(tokens):
        calls["n"] += 1
        answer = list(oracle(tokens))
        answer[0] += mpmath.mpf("1e-3") * (-1) ** calls["n"]
        return tuple(answer)

    noisy.outputs, noisy.d = 2, 2  # type: ignore[attr-defined]
    with pytest.warns(InexactModelWarning) as caught:
        rec = learn_approx(noisy, 2, heads=1, eps="1e-2")
    assert any("the value matrices' estimated error" in str(w.message) for w in caught)
    assert 1e-4 < rec.value_error_estimate < 1e-1
    assert any("value matrices" in note for note in rec.notes)


def test_the_result_shows_and_saves_its_value_matrices():
    truth = exact_truth(2, 1, seed=0)
    rec = learn_approx(RealVectorOracle(truth, eps="1e-13"), 2, heads=1)
    assert repr(rec).startswith("<VectorApproxRecovery D=2 d=2 H=1: ")
    assert "heads[0].V = [" in str(rec) and "readout r = " in str(rec)
    assert r"V_{0} = \begin{pmatrix}" in rec._repr_latex_()
    assert "Value matrices V_h" in rec.summary()
    saved = rec.to_dict()
    assert saved["format"] == "exactlearn.approx-vector-recovery/1"
    assert all(abs(float(x) - float(y)) < 1e-12  # saved at mpmath's working precision (15 digits)
               for row, ref in zip(saved["heads"][0]["V"], rec.V[0]) for x, y in zip(row, ref))
    assert saved["readout"] == [str(r) for r in rec.readout]


def test_warnings_of_the_readout_run_point_at_the_callers_line():
    truth = exact_truth(2, 1, seed=3)
    oracle = RealVectorOracle(truth, 200, eps="1e-40")

    def noisy(tokens):
        return tuple(y + (mpmath.mpf("1e-3") if k == 0 else 0) * (-1) ** len(tokens)
                     for k, y in enumerate(oracle(tokens)))

    noisy.outputs, noisy.d = 2, 2  # type: ignore[attr-defined]
    with pytest.warns(InexactModelWarning) as caught:
        learn_approx(noisy, 2, heads=1, eps="1e-2")
    assert caught and all(w.filename == __file__ for w in caught)


def test_score_vectors_and_offsets_absent_from_the_recovery_count_as_zero():
    """A recovery without ``w_h`` and ``c0`` is as far from a layer with them as their size."""
    truth = exact_truth(2, 1, seed=0)
    rec = learn_approx(RealVectorOracle(truth, 200, eps="1e-40"), 2, heads=1)
    assert not rec.affine and vector_parameter_error(rec, truth).max_abs < 1e-30
    biased = VectorParameters([(W, [mpmath.mpf(5)] * 2, V) for W, _, V in truth.heads], [mpmath.mpf(7)] * 2)
    error = vector_parameter_error(rec, biased)
    assert error.max_abs == 7 and error.values_max_abs == 7
    assert vector_parameter_error(rec, VectorParameters(biased.heads)).max_abs == 5


def test_a_layer_of_another_shape_is_refused_not_compared_in_part():
    """A recovery with D = 2 against a layer with D = 3 (whose first rows it matches) is refused."""
    layer = exact_truth(2, 1, seed=0)
    rec = learn_approx(RealVectorOracle(layer, 200, eps="1e-40"), 2, heads=1)
    W, w, V = layer.heads[0]
    taller = VectorParameters([(W, w, V + [[mpmath.mpf(9), mpmath.mpf(9)]])])
    with pytest.raises(InvalidArgumentError, match="D = 2 but the layer has d = 2, D = 3"):
        vector_parameter_error(rec, taller)
    with pytest.raises(InvalidArgumentError, match="head 1: W_h must be 2 x 2"):
        RealVectorOracle(VectorParameters([layer.heads[0], (W, w, V[:1])]))
    with pytest.raises(InvalidArgumentError, match="at least one head"):
        RealVectorOracle(VectorParameters([]))


def test_a_declared_answer_length_above_the_limit_is_refused_before_any_query():
    calls = []
    huge = type("Huge", (), {"outputs": 10**9, "d": 2, "eps": "1e-40",
                             "__call__": lambda self, tokens: calls.append(tokens)})()
    message = r"outputs = 1000000000 is above the limit 4096.*Limits\(outputs"
    with pytest.raises(InvalidArgumentError, match=message):
        learn_approx(huge, 2, heads=1)
    with pytest.raises(InvalidArgumentError, match=r"above the limit 4096"):
        learn(huge, 2, heads=1)
    assert calls == []


@pytest.mark.parametrize("seed", [0, 1])
def test_float_answers_refine_every_parameter_jointly_to_their_rounding(seed):
    """53-bit answers: the staged fit (heads from one readout, then the values) is 3e-10 to 5e-8 off;
    refined together from every whole answer, the parameters are within 1e-11, and the reported
    estimates contain the true error (within 100x)."""
    truth = exact_truth(3, 2, seed=seed)
    oracle = RealVectorOracle(truth, eps="1e-13")
    rec = learn_approx(oracle, 3, heads=2)
    assert rec.queries == oracle.queries  # the refinement asks nothing
    error = vector_parameter_error(rec, truth)
    assert error.relative < 1e-11
    reported = max(rec.error_estimate, rec.value_error_estimate)
    assert error.max_abs <= reported <= 100 * error.max_abs
    assert error.values_max_abs <= rec.value_error_estimate
    assert any(note.startswith("refined jointly") for note in rec.notes)
    with mpmath.mp.workprec(rec.precision):  # the heads' v_h is V_h^T r of the refined V_h
        for head, V in zip(rec.heads, rec.V):
            v = [sum(to_mpf(r) * V[k][a] for k, r in enumerate(rec.readout)) for a in range(3)]
            assert max(abs(x - y) for x, y in zip(head.v, v)) < mpmath.mpf("1e-14")


def test_the_joint_refinement_converges_from_heads_off_by_1e_5():
    """Float answers of an exact layer, every W_h and V_h entry 1e-5 off at the start: a few Gauss-Newton
    steps bring them to the answers' rounding, and the estimated errors contain the true ones. (The
    readout run's 51 answers, its later configurations labelled by residues: from 1e-4 off, 8 steps
    leave W 2.5e-7 off.)"""
    truth = exact_truth(3, 2, seed=0)
    exact = RealVectorOracle(truth, 200, eps="1e-40")
    wrapped = ReadoutOracle(exact, draw_readout(3, 0), fmpq(1, 10**40), d=3)
    learn_approx(wrapped, 3, heads=2, eps="1e-40")  # its queries, logged with their whole answers
    W = np.array([[[float(x) for x in row] for row in head[0]] for head in truth.heads])
    V = np.array([[[float(x) for x in row] for row in head[2]] for head in truth.heads])
    bent = refine_jointly(wrapped.log, W + 1e-5, np.zeros((2, 3)), V - 1e-5, np.zeros(3), False)
    assert bent is not None and 2 <= bent.steps <= 8 and bent.rss < 1e-20 < bent.start_rss
    assert np.abs(bent.W - W).max() < 1e-8 and np.abs(bent.V - V).max() < 1e-12  # from 1e-5
    assert np.abs(bent.W - W).max() <= bent.error <= 100 * np.abs(bent.W - W).max()
    assert np.abs(bent.V - V).max() <= bent.value_error <= 100 * np.abs(bent.V - V).max()


def test_a_readout_run_the_refinement_settles_is_neither_repaired_nor_learned_again(monkeypatch):
    """The same readout seen as a plain scalar oracle, without the scalar refinement: its default run is
    repaired or learned again (its estimate misses ``repair_relative``). On the vector oracle the first
    run's refined parameters are estimated within it, so that run is kept, with fewer queries, and the
    result is within 1e-11."""
    import exactlearn.approx.learn as learn_module

    truth = exact_truth(3, 2, seed=3)
    vector = RealVectorOracle(truth, eps="1e-13")
    seen = ReadoutOracle(RealVectorOracle(truth, eps="1e-13"), draw_readout(3, 0), fmpq(1, 10**13), d=3)

    def plain(tokens):  # r . f, not a ReadoutOracle: the scalar learner's default flow
        return seen(tokens)

    plain.eps, plain.d = seen.eps, 3  # type: ignore[attr-defined]
    with monkeypatch.context() as patch:  # the scalar path's own refinement off
        patch.setattr(learn_module, "_refined", lambda *args: None)
        scalar = learn_approx(plain, 3, heads=2)
    assert scalar.retry_queries > 0  # repaired or learned again
    rec = learn_approx(vector, 3, heads=2)
    assert rec.retry_queries == 0 and rec.queries == vector.queries < scalar.queries
    assert not any(note.startswith(("repaired", "learned twice")) for note in rec.notes)
    assert vector_parameter_error(rec, truth).relative < 1e-11


@pytest.mark.parametrize("affine", [False, True])
def test_the_refinements_normal_equations_are_those_of_its_jacobian(affine):
    """:func:`~exactlearn.approx.joint._normal` builds ``J^T J``, ``J^T r`` block by block from the
    Jacobian's structure; the dense Jacobian gives the same (random queries, parameters and answers)."""
    from exactlearn.approx.joint import _Answers, _jacobian, _normal, _pack

    rng = np.random.default_rng(1)
    H, d, D = 2, 3, 4
    log = []
    for _ in range(40):
        tokens = [tuple(rng.normal(size=d)) for _ in range(int(rng.integers(1, 4)))]
        copies = [t for t in tokens for _ in range(int(rng.integers(1, 4)))]
        log.append(Answered.of(copies, tuple(rng.normal(size=D))))
    answers = _Answers(log)
    params = (rng.normal(size=(H, d, d)), rng.normal(size=(H, d)) if affine else np.zeros((H, d)),
              rng.normal(size=(H, D, d)), rng.normal(size=D) if affine else np.zeros(D))
    J, f = _jacobian(answers.T, answers.n, answers.last, *params, affine)
    r = (answers.Y - f).ravel()
    for block in (10**9, 200):  # one block, and blocks of a few queries
        JtJ, Jtr, rss = _normal(answers, _pack(*params, affine), (H, d, D, affine), block)
        assert np.allclose(JtJ, J.T @ J, rtol=1e-12, atol=1e-10) and np.allclose(Jtr, J.T @ r, atol=1e-10)
        assert rss == pytest.approx(float(r @ r), rel=1e-12)


def _scalar_default(oracle: Any, monkeypatch: Any = None) -> ApproxRecovery:
    """``learn_approx(oracle, 3, heads=2)``, warnings off; with ``monkeypatch``, the scalar refinement off."""
    import exactlearn.approx.learn as learn_module

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if monkeypatch is None:
            return learn_approx(oracle, 3, heads=2)
        with monkeypatch.context() as patch:
            patch.setattr(learn_module, "_refined", lambda *args: None)
            return learn_approx(oracle, 3, heads=2)


def test_a_scalar_default_run_is_refined_from_every_answer_and_settled(monkeypatch):
    """Scalar answers (noise 1e-10): the first run misses ``repair_relative``; refined jointly from its own
    answers it is estimated within it, so it is neither repaired nor learned again (fewer queries), and
    it is 50 times closer than the repaired and relearned run without the refinement. The estimate
    contains the true error, within 100 times; the bound (the staged one plus the change) too."""
    truth = MultiHeadAttention.random(3, 2, seed=0)
    staged = _scalar_default(NoisyOracle(truth, eps="1e-10", seed=0), monkeypatch)
    oracle = NoisyOracle(truth, eps="1e-10", seed=0)
    rec = _scalar_default(oracle)
    assert any(note.startswith("refined jointly: every W_h, w_h, v_h and c0") for note in rec.notes)
    assert not any(note.startswith(("repaired", "learned twice")) for note in rec.notes)
    assert rec.retry_queries == 0 and rec.queries == oracle.queries < staged.queries
    error = float(parameter_error(rec, truth).max_abs)
    assert error * 50 < float(parameter_error(staged, truth).max_abs)
    assert error <= rec.error_estimate <= 100 * error
    assert rec.relative_error_estimate is not None and rec.relative_error_estimate < 1e-6
    assert error <= rec.error_bound


def test_the_refinements_estimate_per_matrix_contains_a_small_matrixs_error():
    """The refinement's estimate per matrix (``W_h`` about 1/2000 of the largest parameter): it contains
    each ``W_h``'s error relative to its own largest entry, within 100 times (measured 13x); relative to
    the largest parameter it would not."""
    truth = loud_values()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = learn_approx(NoisyOracle(truth, eps="1e-10", seed=0), 3, heads=2)
    assert any(note.startswith("refined jointly") for note in rec.notes)
    own = worst_W(rec, truth)
    assert rec.relative_error_estimate < own <= rec.matrix_error_estimate <= 100 * own


def test_the_scalar_refinement_adds_each_entrys_change_to_its_radius():
    """:func:`refine_scalar` on a staged run and its answers: every parameter moves, every radius is the
    staged one plus the move (the bound stays a bound under ``eps``), the estimate is the refinement's."""
    truth = MultiHeadAttention.random(3, 2, seed=0)
    noisy = NoisyOracle(truth, eps="1e-10", seed=0)
    log = []

    def oracle(tokens):
        answer = noisy(tokens)
        log.append(Answered.of(tokens, (float(answer),)))
        return answer

    oracle.eps = noisy.eps  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        staged = learn_approx(oracle, 3, heads=2, guide=None, scale=1)  # not a default run: not refined
    assert not any(note.startswith("refined") for note in staged.notes)
    rec = replace(staged, notes=[])
    assert refine_scalar(rec, log)
    assert rec.error_estimate is not None and rec.error_estimate < staged.error_estimate
    def entries(head, radii=False):
        return (head.v_radius + sum(head.W_radius, [])) if radii else (head.v + sum(head.W, []))

    for new, old in zip(rec.heads, staged.heads):
        for a, b, r, q in zip(entries(new), entries(old), entries(new, True), entries(old, True)):
            assert a != b and r == q + abs(a - b)
    assert rec.error_bound >= staged.error_bound
    assert float(parameter_error(rec, truth).max_abs) <= rec.error_estimate


def test_the_scalar_refinement_is_skipped_when_rigorous_or_not_better():
    """``rigorous=True`` keeps the certified run; answers exact to 1e-30 keep the staged fit (float64
    refinement cannot beat its estimate)."""
    truth = MultiHeadAttention.random(3, 2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rec in (learn_approx(NoisyOracle(truth, eps="1e-12", seed=0), 3, heads=2, rigorous=True),
                    learn_approx(NoisyOracle(truth, eps="1e-30", seed=0), 3, heads=2)):
            assert not any(note.startswith("refined") for note in rec.notes)


def test_the_scalar_refinement_is_not_attempted_beyond_joint_work(monkeypatch):
    """Above ``ApproxSettings.joint_work`` (here: every size) the staged run stands, repaired as before."""
    import exactlearn.approx.learn as learn_module

    monkeypatch.setattr(learn_module, "affordable", lambda *args, **kwargs: False)
    rec = _scalar_default(NoisyOracle(MultiHeadAttention.random(3, 2, seed=0), eps="1e-10", seed=0))
    assert not any(note.startswith("refined") for note in rec.notes)
    assert rec.retry_queries > 0


def test_a_query_answered_identically_twice_counts_once_in_the_joint_refinement(monkeypatch):
    """A float vector oracle is asked some single tokens more than once (the same answer each time): the
    refinement sees each such answer once, so repeats do not shrink its estimate. Without the filter, the
    seed-3 run's log of 151 answers holds 133 distinct ones and its estimates came out 5-20% smaller."""
    import exactlearn.approx.values as values_module
    from exactlearn.approx.values import distinct_answers

    seen: list[tuple[int, int]] = []
    original = values_module._adopt

    def spy(rec, log, *args, **kwargs):
        seen.append((len(log), len(set(log))))
        return original(rec, log, *args, **kwargs)

    monkeypatch.setattr(values_module, "_adopt", spy)
    oracle = RealVectorOracle(exact_truth(3, 2, seed=3), eps="1e-13")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learn_approx(oracle, 3, heads=2)
    assert seen and all(n == unique for n, unique in seen)
    assert oracle.queries > seen[-1][0]  # the oracle did answer repeats
    a = Answered.of([(fmpq(1), fmpq(2))], (0.5, 1.5))
    b = Answered.of([(fmpq(1), fmpq(2))], (0.5, 1.5))
    c = Answered.of([(fmpq(1), fmpq(2))], (0.25, 1.5))  # answered differently: another observation
    assert distinct_answers([a, b, c, a]) == [a, c]


def test_answers_the_fit_reproduces_exactly_still_leave_their_float64_rounding():
    """Three answers of a ``d = 1``, one-head layer with three outputs: the float fit reproduces them
    exactly (rss 0). The estimate is then the answers' float64 rounding, never 0 (main reported
    "estimated errors 0.0e+00" with the parameters 1e-16 off)."""
    from exactlearn.approx.joint import _Answers, _model

    log = [Answered.of([(fmpq(k),), (fmpq(1),)], (0.0, 0.0, 0.0)) for k in (1, 2, 3)]
    W, w, V, c0 = np.array([[[0.5]]]), np.zeros((1, 1)), np.array([[[1.0], [-2.0], [0.25]]]), np.zeros(3)
    answers = _Answers(log)
    f = _model(answers.T, answers.n, answers.last, W, w, V, c0)[2]
    log = [Answered(q.points, q.last, tuple(float(y) for y in row)) for q, row in zip(log, f)]
    fit = refine_jointly(log, W, w, V, c0, False)
    assert fit is not None and fit.rss == 0.0
    assert fit.noise >= np.finfo(float).eps * np.sqrt(np.mean(f**2)) > 0
    assert fit.error > 0 and fit.value_error > 0


def test_answers_of_one_configuration_that_share_their_errors_count_for_less():
    """The joint refinement's deviations grow by the design effect of the configurations' answers:
    about 1 for independent errors, ``sqrt(1 + (m - 1) rho)`` when the ``m`` answers of a configuration
    share a part ``rho`` of their error variance (torch's rounding of the two scores of
    ``(z,)*k + (x,)*m``)."""
    from exactlearn.approx.joint import _Answers, _design_effect, _model, _pack

    rng = np.random.default_rng(0)
    H, d, D = 2, 3, 2
    params = (rng.normal(size=(H, d, d)), np.zeros((H, d)), rng.normal(size=(H, D, d)), np.zeros(D))
    effects = []
    for shared in (0.0, 1.0):  # rho = 0 and 1/2, m = 10
        log = []
        for _ in range(60):
            x, z = tuple(rng.normal(size=d)), tuple(rng.normal(size=d))
            common = shared * rng.normal(size=D)
            for k in range(1, 11):
                tokens = [z] * k + [x]
                one = _Answers([Answered.of(tokens, (0.0,) * D)])
                f = _model(one.T, one.n, one.last, *params)[2][0]
                log.append(Answered.of(tokens, tuple(f + 1e-3 * (common + rng.normal(size=D)))))
        effects.append(_design_effect(_Answers(log), _pack(*params, False), (H, d, D, False)))
    assert effects[0] < 1.2 and 2.0 < effects[1] < 2.7  # sqrt(1 + 9/2) = 2.35
