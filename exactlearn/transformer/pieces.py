"""Exact linear algebra for piecewise-linear functions: region gradients, solves, ranks.

A sum of absolute values ``G(p) = 1/2 sum_L kappa_L |w_L . p|`` is linear on every
region cut out by the hyperplanes ``w_L . p = 0``: ``G(p) = gamma . p`` there. The
learner fits ``gamma`` exactly from ``n`` points of one region and checks it on
one more.

>>> fit_gradient([(1, 0), (0, 1)], [3, 4], [(1, 1)], [7])
(3, 4)
>>> fit_gradient([(1, 0), (0, 1)], [3, 4], [(1, 1)], [8]) is None
True
"""

from __future__ import annotations

from collections.abc import Sequence

from flint import fmpq, fmpq_mat

from ..exact import dot

__all__ = ["fit_gradient", "rank", "solve"]


def solve(rows: Sequence[Sequence], rhs: Sequence) -> tuple[fmpq, ...] | None:
    """The solution ``g`` of ``rows g = rhs`` (square), or None if ``rows`` is singular."""
    n = len(rows)
    A = fmpq_mat(n, n, [fmpq(x) for r in rows for x in r])
    if A.rank() < n:
        return None
    b = fmpq_mat(n, 1, [fmpq(x) for x in rhs])
    g = A.solve(b)
    return tuple(g[i, 0] for i in range(n))


def rank(rows: Sequence[Sequence]) -> int:
    """The rank of the matrix with these rows (0 for no rows)."""
    if not rows:
        return 0
    return fmpq_mat(len(rows), len(rows[0]), [fmpq(x) for r in rows for x in r]).rank()


def fit_gradient(points: Sequence[Sequence], values: Sequence, checks: Sequence[Sequence],
                 check_values: Sequence) -> tuple[fmpq, ...] | None:
    """``gamma`` with ``gamma . p_i = v_i`` for the ``n`` points, if it also fits every check point."""
    g = solve(points, values)
    if g is None:
        return None
    for p, v in zip(checks, check_values):
        if dot(g, p) != v:
            return None
    return g
