"""exactlearn.transformer.pieces: exact gradients, kernels and the limit of a copy function."""

from __future__ import annotations

from flint import fmpq

from exactlearn.transformer.pieces import (
    fit_gradient,
    kernel_vector,
    rank,
    rational_limit,
    solve,
)


def test_solve_and_singular():
    assert solve([(1, 2), (3, 4)], [5, 6]) == (fmpq(-4), fmpq(9, 2))
    assert solve([(1, 2), (2, 4)], [1, 2]) is None
    assert rank([(1, 2), (2, 4)]) == 1


def test_fit_gradient_checks():
    g = fit_gradient([(1, 0), (0, 1)], [2, 3], [(1, 1)], [5])
    assert g == (2, 3)
    assert fit_gradient([(1, 0), (0, 1)], [2, 3], [(1, 1)], [6]) is None


def test_kernel_vector():
    x = kernel_vector([[1, 2, 3], [2, 4, 6]], 3)
    assert x is not None and any(x) and x[0] + 2 * x[1] + 3 * x[2] == 0
    assert kernel_vector([[1, 0], [0, 1]], 2) is None


def test_rational_limit_of_attention_copy_functions():
    def f(k):
        return fmpq(3) + fmpq(2) / (1 + k * fmpq(1, 3)) - fmpq(1) / (1 + 5 * k)

    ks = list(range(7))
    assert rational_limit(ks, [f(k) for k in ks], 2) == 3
    assert rational_limit(ks, [f(k) + (k == 6) for k in ks], 2) is None  # a planted fault is caught
    assert rational_limit(ks, [fmpq(1) / (1 + k) for k in ks], 2) == 0     # lower type is fine
