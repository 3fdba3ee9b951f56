"""exactlearn.transformer.pieces: exact gradients, solves and ranks."""

from __future__ import annotations

from flint import fmpq

from exactlearn.transformer.pieces import fit_gradient, rank, solve


def test_solve_and_singular():
    assert solve([(1, 2), (3, 4)], [5, 6]) == (fmpq(-4), fmpq(9, 2))
    assert solve([(1, 2), (2, 4)], [1, 2]) is None
    assert rank([(1, 2), (2, 4)]) == 1


def test_fit_gradient_checks():
    g = fit_gradient([(1, 0), (0, 1)], [2, 3], [(1, 1)], [5])
    assert g == (2, 3)
    assert fit_gradient([(1, 0), (0, 1)], [2, 3], [(1, 1)], [6]) is None
