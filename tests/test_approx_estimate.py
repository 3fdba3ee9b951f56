"""The error estimate from the answers, the InexactModelWarning, and refusals that name eps."""

from __future__ import annotations

import warnings

import pytest

from exactlearn import MultiHeadAttention
from exactlearn.approx import InexactModelWarning, NoisyOracle, learn_approx, parameter_error
from exactlearn.errors import InconsistentAnswersError


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
