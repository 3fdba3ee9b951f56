"""The error estimate from the answers (approx.bounds.estimate), the InexactModelWarning, refusals that
name eps or the answers' precision (approx.core.noise), copy counts (approx.core.counts) and their
least-squares fit (approx.core.copyfun)."""

from __future__ import annotations

import warnings

import pytest
from flint import arb

from exactlearn import Head, MultiHeadAttention
from exactlearn.approx import (
    InexactModelWarning,
    NoisyOracle,
    learn_approx,
    parameter_error,
)
from exactlearn.approx.core.balls import working_precision
from exactlearn.approx.core.copyfun import certify_copy_function
from exactlearn.approx.core.counts import geometric_counts, resolve_counts
from exactlearn.approx.core.noise import SingleTokens, digits, eps_diagnosis
from exactlearn.errors import InconsistentAnswersError

from .conftest import loud_values, worst_W


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_estimate_contains_the_true_error_within_100x(seed):
    truth = MultiHeadAttention.random(3, 2, seed=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rec = learn_approx(NoisyOracle(truth, eps="1e-10", seed=seed), 3, heads=2, guide=None)
    error = float(parameter_error(rec, truth).max_abs)
    assert rec.error_estimate is not None
    assert error <= rec.error_estimate <= 100 * error  # measured: 5x to 10x
    # these models are off by 1e-4 to 1e-2: the result says so, in a warning and in its notes
    assert any(issubclass(w.category, InexactModelWarning) for w in caught)
    assert any("estimated to be off" in note for note in rec.notes)
    assert "estimate, not a bound" in rec.summary()


def test_the_estimate_per_matrix_measures_a_small_matrix_by_its_own_entries():
    truth = loud_values()  # values 1000 times seed 0's: the W_h are about 1/2000 of the largest parameter
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rec = learn_approx(NoisyOracle(truth, eps="1e-14", seed=0), 3, heads=2, guide=None)
    own = [worst_W(rec, truth)]
    assert max(own) <= rec.matrix_error_estimate <= 100 * max(own)  # measured: 8x
    # relative to the largest parameter it is far below the warning level; relative to W_1's own, above
    assert rec.relative_error_estimate < 1e-5 < rec.matrix_error_estimate
    assert "of its own matrix at worst" in rec.summary()
    assert any("of a matrix's own largest entry" in str(w.message) for w in caught
               if issubclass(w.category, InexactModelWarning))


def test_a_zero_matrix_is_measured_against_the_largest_parameter():
    """A head with ``W_h = 0`` (``exp W = 1``) is learned as noise near 1e-13: per matrix it is measured
    against the largest parameter, as a zero matrix has no scale of its own, so the run is neither
    warned about nor repaired (39 queries, as before the estimate per matrix)."""
    truth = MultiHeadAttention([Head([[1, 1], [1, 1]], [3, 1]), Head([[2, 3], [5, 7]], [1, -2])])
    oracle = NoisyOracle(truth, eps="1e-12", seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rec = learn_approx(oracle, 2, heads=2, seed=0)
    assert rec.matrix_error_estimate < 1e-8 and rec.queries == oracle.queries == 39
    assert not any(issubclass(w.category, InexactModelWarning) for w in caught)
    assert not any(note.startswith("repaired") for note in rec.notes)
    assert float(parameter_error(rec, truth).max_abs) <= rec.error_estimate


def test_answers_noisier_than_eps_are_refused_naming_eps():
    noisy = NoisyOracle(MultiHeadAttention.random(3, 2, seed=0), eps="1e-6", seed=0)
    with pytest.raises(InconsistentAnswersError, match="eps is below the answers' real error"):
        learn_approx(lambda X: noisy(X), 3, heads=2, guide=None, eps="1e-12")


def test_exact_answers_raise_no_warning():
    truth = MultiHeadAttention.random(3, 2, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InexactModelWarning)
        rec = learn_approx(NoisyOracle(truth, eps="1e-40", seed=1), 3, heads=2, guide=None)
    # the estimate is computed in float64 (docs): near its floor, far below the warning's 1e-5
    assert rec.relative_error_estimate is not None and rec.relative_error_estimate < 1e-10


def test_the_single_token_answers_show_their_precision():
    seen = SingleTokens()
    for x in [(1, 0), (0, 1), (1, 1), (2, 1), (1, 2), (2, 2)]:  # f([x]) = 3 x_0 - x_1, 7 digits
        seen.record([x], float(3 * x[0] - x[1]) * (1 + 1e-7 * (-1) ** sum(x)))
    assert 6 <= digits(seen, 2) <= 8
    assert eps_diagnosis(seen, 2, 1e-12) and not eps_diagnosis(seen, 2, 1e-5)
    assert digits(seen, 2, affine=True) is not None  # with an intercept, c0


def test_geometric_counts_and_their_default():
    counts = geometric_counts(4)
    assert counts[0] == 0 and counts[-1] == 4096 and len(counts) == 3 * 4 + 1
    assert list(counts) == sorted(set(counts))
    assert resolve_counts("paper", 4, 4) is None and resolve_counts("auto", 4, 4) is None
    assert resolve_counts("auto", 4, 5) == geometric_counts(5)  # from 5 heads on
    assert resolve_counts("auto", 16, 4) == geometric_counts(4)  # from 4 heads at d >= 16
    assert resolve_counts("auto", 4, 2, eps=1e-5) == geometric_counts(2)  # float32-sized eps


def test_a_least_squares_fit_of_eight_crowded_heads_converges_on_precise_answers():
    # the copy function of a d = 8, H = 8 torch layer's configuration (seed 0, scale 1): eight poles
    # within [-2.1, -0.04], answers within 1e-60 at geometric counts. The fit's Jacobian squares a
    # condition beyond 256 bits: Gauss-Newton at the working precision never converged on it.
    poles = ["-2.09", "-1.49", "-1.45", "-1.01", "-0.978", "-0.913", "-0.807", "-0.0405"]
    residues = ["-0.884", "0.308", "0.066", "0.0759", "-0.868", "-0.00018", "-0.706", "0.144"]
    with working_precision(256):
        rhos = [-1 / arb(p) for p in poles]
        cs = [arb(c) for c in residues]
        counts = geometric_counts(8)
        values = [arb("0.5") + sum((c / (1 + k * rho) for c, rho in zip(cs, rhos)), arb(0)) + arb(0, "1e-60")
                  for k in counts]
        fit = certify_copy_function(counts, values, 8, rigorous=False)
        for (rho, c), (true_rho, true_c) in zip(fit.terms, sorted(zip(rhos, cs), key=lambda t: t[0].mid())):
            assert abs(rho.mid() / true_rho.mid() - 1) < arb("1e-20")
            assert abs(c.mid() - true_c.mid()) < arb("1e-20")
