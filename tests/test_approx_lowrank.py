"""exactlearn.approx.guide.lowrank: the sketch's W_h from a low-rank fit once one explains the rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from exactlearn.approx.guide.lowrank import low_rank_weights, rows_needed
from exactlearn.settings import DEFAULT_SETTINGS

LOW_RANK_AGREEMENT = DEFAULT_SETTINGS.guide.low_rank_agreement
LOW_RANK_SPARE = DEFAULT_SETTINGS.guide.low_rank_spare
LOW_RANK_MIN_OUTLIERS = DEFAULT_SETTINGS.guide.low_rank_min_outliers


def rows_of(Ws, n, seed=0, x_rank=None):
    """``n`` rows ``(x, a, [a^T W_h x])`` with integer tokens in [-2, 2] (``x`` in a subspace of
    dimension ``x_rank`` if given)."""
    rng = np.random.default_rng(seed)
    d = Ws[0].shape[0]
    basis = rng.integers(-2, 3, size=(x_rank or d, d))
    rows = []
    for _ in range(n):
        x = rng.integers(-2, 3, size=x_rank or d) @ basis if x_rank else rng.integers(-2, 3, size=d)
        a = rng.integers(-2, 3, size=d)
        rows.append((x, a, [a @ W @ x for W in Ws]))
    return rows


def rank_r(d, r, rng):
    return rng.normal(size=(d, r)) @ rng.normal(size=(r, d))


@pytest.mark.parametrize("d, r", [(3, 1), (4, 1), (4, 2), (5, 2)])
def test_every_head_of_a_low_rank_layer_is_recovered_with_its_rank(d, r):
    rng = np.random.default_rng(d * 10 + r)
    Ws = [rank_r(d, r, rng) for _ in range(3)]
    found = low_rank_weights(rows_of(Ws, r * (2 * d - r) + LOW_RANK_SPARE + 2), d)
    assert found is not None and found[0] == r
    assert max(np.abs(F - W).max() for F, W in zip(found[1], Ws)) < 1e-8


def test_a_fit_needs_more_rows_than_parameters():
    """Rank one at d = 4 has 7 parameters: with 7 + LOW_RANK_SPARE rows and one more for the row it may
    leave out (LOW_RANK_MIN_OUTLIERS) the fit is tried, with one fewer it is not (however well it would
    fit)."""
    Ws = [rank_r(4, 1, np.random.default_rng(1))]
    rows = rows_of(Ws, 7 + LOW_RANK_SPARE + LOW_RANK_MIN_OUTLIERS, seed=2)
    assert low_rank_weights(rows[:-1], 4) is None
    assert low_rank_weights(rows, 4)[0] == 1


def test_a_full_rank_layer_fits_no_low_rank():
    rng = np.random.default_rng(3)
    Ws = [rng.normal(size=(4, 4)) for _ in range(2)]
    assert low_rank_weights(rows_of(Ws, 16, seed=4), 4) is None


def test_one_full_rank_head_is_enough_to_refuse():
    rng = np.random.default_rng(5)
    Ws = [rank_r(4, 1, rng), rank_r(4, 1, rng), rng.normal(size=(4, 4))]
    assert low_rank_weights(rows_of(Ws, 12, seed=6), 4) is None
    assert low_rank_weights(rows_of(Ws[:2], 12, seed=6), 4)[0] == 1


def test_rows_that_leave_a_factor_unknown_are_not_a_fit():
    """Every ``x`` in a 3-dimensional subspace: ``K`` of ``W = q k^T`` is unknown along the rest, so
    however many rows fit exactly, the fit is not identified and nothing is returned."""
    Ws = [rank_r(4, 1, np.random.default_rng(7))]
    assert low_rank_weights(rows_of(Ws, 15, seed=8, x_rank=3), 4) is None
    assert low_rank_weights(rows_of(Ws, 15, seed=8), 4)[0] == 1


def test_a_misfit_beyond_the_agreement_refuses_the_fit():
    Ws = [rank_r(4, 1, np.random.default_rng(9))]
    rows = rows_of(Ws, 12, seed=10)
    scale = max(1.0, max(abs(s[0]) for _, _, s in rows))
    wobble = 1e-3 * LOW_RANK_AGREEMENT * scale
    noisy = [(x, a, [s[0] + wobble * (-1) ** i]) for i, (x, a, s) in enumerate(rows)]
    assert low_rank_weights(noisy, 4)[0] == 1  # small noise: still a rank-one layer
    x, a, s = rows[5]
    rows[5] = (x, a, [s[0] + 20 * LOW_RANK_AGREEMENT * scale])
    found = low_rank_weights(rows, 4)  # one wrong row: left out (LOW_RANK_MIN_OUTLIERS)
    assert found is not None and found[0] == 1 and np.abs(found[1][0] - Ws[0]).max() < 1e-8
    x, a, s = rows[9]
    rows[9] = (x, a, [s[0] - 20 * LOW_RANK_AGREEMENT * scale])
    assert low_rank_weights(rows, 4) is None  # two: more than a rank-one fit at d = 4 may leave out


def test_each_head_has_its_own_tolerance():
    """A head with scores near 100 may miss by 0.05; one with scores near 1 may not miss by 0.01 (at two
    rows: one it may leave out)."""
    rng = np.random.default_rng(11)
    Ws = [rank_r(4, 1, rng), rank_r(4, 1, rng)]
    rows = rows_of(Ws, 12, seed=12)
    big = 100 / max(abs(s[0]) for _, _, s in rows)
    rows = [(x, a, [big * s[0], s[1]]) for x, a, s in rows]
    assert low_rank_weights(rows, 4)[0] == 1
    off = 10 * LOW_RANK_AGREEMENT * max(1.0, max(abs(t[1]) for _, _, t in rows))
    for i in (3, 8):
        x, a, s = rows[i]
        rows[i] = (x, a, [s[0], s[1] + off])
    assert low_rank_weights(rows, 4) is None


def test_the_largest_misfit_counts_not_the_mean():
    """Two scores of 16 off by 5x the agreement (one the fit may leave out): the least-squares fit absorbs
    part of them, the rest still exceeds the agreement at those rows (the mean misfit would not)."""
    Ws = [rank_r(4, 1, np.random.default_rng(13))]
    rows = rows_of(Ws, 16, seed=14)
    scale = max(1.0, max(abs(s[0]) for _, _, s in rows))
    for i in (7, 12):
        x, a, s = rows[i]
        rows[i] = (x, a, [s[0] + 5 * LOW_RANK_AGREEMENT * scale])
    found = low_rank_weights(rows, 4)
    assert found is None or found[0] > 1  # (16 rows also try rank two, which may absorb it)


def test_scores_that_are_not_finite_are_no_fit():
    Ws = [rank_r(3, 1, np.random.default_rng(15))]
    rows = rows_of(Ws, 9, seed=16)
    rows[2] = (rows[2][0], rows[2][1], [float("nan")])
    assert low_rank_weights(rows, 3) is None


@pytest.mark.parametrize("size", [1e-5, 1e4])
def test_the_rank_is_found_at_any_scale(size):
    Ws = [size * rank_r(4, 1, np.random.default_rng(17))]
    found = low_rank_weights(rows_of(Ws, 11, seed=18), 4)
    assert found is not None and found[0] == 1


def test_a_start_that_ends_in_a_local_minimum_is_retried():
    """At the fewest rows the sweeps from the least-norm W can stop in a local minimum (here they do);
    the random starts find the rank-one layer."""
    Ws = [rank_r(4, 1, np.random.default_rng(101))]
    rows = rows_of(Ws, 10, seed=308)
    found = low_rank_weights(rows, 4)
    assert found is not None and found[0] == 1
    assert np.abs(found[1][0] - Ws[0]).max() < 1e-6
    no_restarts = dataclasses.replace(DEFAULT_SETTINGS.guide, low_rank_restarts=0)
    assert low_rank_weights(rows, 4, no_restarts) is None


@pytest.mark.parametrize("seed", range(4))
def test_the_polish_converges_where_the_sweeps_creep(seed):
    """Three rows beyond the 28 parameters of a rank-2 ``W`` at d = 8: thirty alternating sweeps from
    the least-norm start are still far off; the Levenberg-Marquardt polish reaches ``W``."""
    from exactlearn.approx.guide.lowrank import _sweeps

    rng = np.random.default_rng(seed)
    d, r = 8, 2
    W = rank_r(d, r, rng)
    n = r * (2 * d - r) + 3
    X, A = (rng.integers(-2, 3, size=(n, d)).astype(float) for _ in range(2))
    s = np.einsum("ij,ij->i", A @ W, X)
    start = np.linalg.lstsq(np.einsum("ip,iq->ipq", A, X).reshape(n, -1), s, rcond=None)[0].reshape(d, d)
    K = np.linalg.svd(start)[2][:r].T
    unpolished = dataclasses.replace(DEFAULT_SETTINGS.guide, low_rank_polish=0)
    assert np.abs(_sweeps(X, A, s, K, unpolished) - W).max() > 1e-2
    assert np.abs(_sweeps(X, A, s, K, DEFAULT_SETTINGS.guide) - W).max() < 1e-12


def test_a_row_with_two_heads_swapped_is_left_out():
    """One row of 33 at d = 8, rank 2 has its two heads' scores swapped (a sketch's labels, when two
    heads' predicted residues are close): the least-squares fit through it misses other rows more than
    that one, so leaving out the rows it misses most leaves the wrong row in; the first trim leaves out
    the row whose absence lets the fit miss least, and both heads are recovered. (Rounded down,
    ``low_rank_outliers`` would allow no row of 28 parameters: ``low_rank_min_outliers`` allows one.)"""
    rng = np.random.default_rng(1)
    d, r = 8, 2
    Ws = [rank_r(d, r, rng) for _ in range(2)]
    rows = rows_of(Ws, rows_needed(r, d), seed=1001)  # (33: the fewest a rank-2 fit is tried from)
    x, a, s = rows[5]
    rows[5] = (x, a, s[::-1])
    found = low_rank_weights(rows, d)
    assert found is not None and found[0] == r
    assert max(np.abs(F - W).max() for F, W in zip(found[1], Ws)) < 1e-8
    no_leave_one_out = dataclasses.replace(DEFAULT_SETTINGS.guide, low_rank_leave_one_out=len(rows) - 1)
    assert low_rank_weights(rows, d, no_leave_one_out) is None  # (the rows the fit misses most: not row 5)


def test_a_rank_guess_fits_its_rows_when_they_are_too_few():
    """``rank_guess`` (the sketch's predictions from 7 heads on) sees fewer rows than unknowns, all
    sharing one ``x`` at first: at ``d = 16``, rank 2 (32 unknowns per factor) the normal equations
    of such rows are singular without ``solve`` saying so, and the guess missed its own rows by 3-31."""
    from exactlearn.approx.guide.lowrank import rank_guess

    rng = np.random.default_rng(0)
    d = 16
    W = rng.normal(size=(d, 2)) @ rng.normal(size=(2, d)) / 4
    x0 = rng.integers(-2, 3, size=d).astype(float)
    X, A = np.tile(x0, (10, 1)), rng.integers(-2, 3, size=(10, d)).astype(float)
    s = np.einsum("ip,ip->i", A @ W, X)
    start = np.linalg.lstsq(np.einsum("ip,iq->ipq", A, X).reshape(10, d * d), s, rcond=None)[0].reshape(d, d)
    guess = rank_guess(X, A, s, start, 2)
    assert np.abs(np.einsum("ip,ip->i", A @ guess, X) - s).max() < 1e-9


def test_a_rank_guess_that_misses_its_rows_gives_the_start_back(monkeypatch):
    import exactlearn.approx.guide.lowrank as lowrank

    rng = np.random.default_rng(1)
    X, A = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    W = np.outer(rng.normal(size=3), rng.normal(size=3))
    s = np.einsum("ip,ip->i", A @ W, X)
    monkeypatch.setattr(lowrank, "_sweeps", lambda *args: W + 1.0)  # a local minimum, far off
    assert lowrank.rank_guess(X, A, s, W, 1) is W
