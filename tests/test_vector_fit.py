"""The common-denominator fit of vector copy functions (exactlearn.vector.fit)."""

from __future__ import annotations

import pytest
from flint import fmpq, fmpq_mat

from exactlearn.errors import ReconstructionError, UndeterminedFitError
from exactlearn.vector.fit import denominator_kernel, vector_copy_terms


def copy_function(terms, at_infinity):
    """``R(k) = at_infinity + sum C / (1 + k rho)`` as D x 1 matrices."""
    def R(k):
        out = fmpq_mat(len(at_infinity), 1, at_infinity)
        for rho, C in terms:
            out = out + fmpq_mat(len(C), 1, C) / (1 + k * fmpq(rho))
        return out
    return R


TWO_HEADS = [(fmpq(1, 2), [3, -1]), (fmpq(4), [1, 2])]


def test_h_plus_two_samples_determine_independent_residues():
    R = copy_function(TWO_HEADS, [5, 7])
    fit = vector_copy_terms(range(4), [R(k) for k in range(4)], 2)
    assert [(rho, C.entries()) for rho, C in fit.terms] == [(fmpq(1, 2), [3, -1]), (4, [1, 2])]
    assert fit.at_infinity == fmpq_mat(2, 1, [5, 7]) and fit.at_zero == R(0)


def test_known_values_leave_h_samples():
    R = copy_function(TWO_HEADS, [5, 7])
    fit = vector_copy_terms([1, 2], [R(1), R(2)], 2, at_zero=R(0), at_infinity=fmpq_mat(2, 1, [5, 7]))
    assert [rho for rho, _ in fit.terms] == [fmpq(1, 2), 4]


def test_dependent_residues_are_undetermined_then_determined_by_2h_plus_1():
    R = copy_function([(fmpq(1, 2), [3, 0]), (fmpq(4), [1, 0])], [5, 7])  # residues on one line
    with pytest.raises(UndeterminedFitError):
        vector_copy_terms(range(4), [R(k) for k in range(4)], 2)
    fit = vector_copy_terms(range(5), [R(k) for k in range(5)], 2)
    assert [(rho, C.entries()) for rho, C in fit.terms] == [(fmpq(1, 2), [3, 0]), (4, [1, 0])]


def test_a_bound_above_the_true_type_still_finds_the_poles():
    R = copy_function(TWO_HEADS, [5, 7])
    fit = vector_copy_terms(range(5), [R(k) for k in range(5)], 3)
    assert [rho for rho, _ in fit.terms] == [fmpq(1, 2), 4]
    assert len(denominator_kernel(range(5), [[R(k)[c, 0] for k in range(5)] for c in range(2)], 3, 3)) == 2


def test_no_attention_fits_is_an_error_not_a_guess():
    positive_pole = copy_function([(fmpq(-1, 5), [1, 1])], [0, 0])  # pole at k = 5
    with pytest.raises(ReconstructionError, match="not negative"):
        vector_copy_terms(range(3), [positive_pole(k) for k in range(3)], 1)
    linear = [fmpq_mat(2, 1, [k, 2 * k]) for k in range(4)]
    with pytest.raises(ReconstructionError, match="infinity"):
        vector_copy_terms(range(4), linear, 2)


def test_a_constant_copy_function_has_no_terms():
    constant = [fmpq_mat(2, 1, [3, -1])] * 3
    fit = vector_copy_terms(range(3), constant, 1)
    assert fit.terms == () and fit.at_infinity == constant[0]
    known = vector_copy_terms([1], constant[:1], 1, at_zero=constant[0], at_infinity=constant[0])
    assert known.terms == ()
