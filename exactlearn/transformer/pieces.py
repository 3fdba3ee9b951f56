"""Exact linear algebra for piecewise-linear functions: region gradients, kernels, interpolation.

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

__all__ = ["fit_gradient", "kernel_vector", "rank", "rational_limit", "solve"]


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


def kernel_vector(rows: Sequence[Sequence[fmpq]], n: int) -> list[fmpq] | None:
    """A nonzero ``x`` with ``rows x = 0`` (``n`` unknowns), or None if there is none."""
    A = fmpq_mat(len(rows), n, [fmpq(x) for r in rows for x in r])
    R, r = A.rref()
    if r == n:
        return None
    pivots = []
    row = 0
    for c in range(n):
        if row < r and R[row, c] != 0:
            pivots.append(c)
            row += 1
    free = next(c for c in range(n) if c not in pivots)
    x = [fmpq(0)] * n
    x[free] = fmpq(1)
    for i, c in enumerate(pivots):
        x[c] = -R[i, free]
    return x


def _poly(coeffs: Sequence[fmpq], k: fmpq) -> fmpq:
    out = fmpq(0)
    for c in reversed(coeffs):
        out = out * k + c
    return out


def rational_limit(ks: Sequence[int], ys: Sequence[fmpq], degree: int) -> fmpq | None:
    """``lim_{k -> oo} R(k)`` for the type-``(degree, degree)`` rational function through the
    first ``2 degree + 1`` points, or None if no such function also takes the remaining values.
    """
    m = 2 * degree + 1
    rows = [[fmpq(k) ** i for i in range(degree + 1)] + [-y * fmpq(k) ** i for i in range(degree + 1)]
            for k, y in zip(ks[:m], ys[:m])]
    x = kernel_vector(rows, 2 * degree + 2)
    if x is None:
        return None
    p, q = x[:degree + 1], x[degree + 1:]
    for k, y in zip(ks[m:], ys[m:]):
        qk = _poly(q, fmpq(k))
        if qk == 0 or _poly(p, fmpq(k)) != y * qk:
            return None
    dp = max((i for i, c in enumerate(p) if c != 0), default=-1)
    dq = max((i for i, c in enumerate(q) if c != 0), default=-1)
    if dq < 0 or dp > dq:
        return None
    return p[dq] / q[dq] if dp == dq else fmpq(0)
