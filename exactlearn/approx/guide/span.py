"""Rows kept up to date one by one: the sketch's rank tests and least-norm solves.

The sketch (:mod:`.sketch`) keeps its configurations' weight rows
``vec(a x^T)`` independent and asks, for every candidate configuration, whether
its row adds to the span of those so far. Recomputing a rank over ``Q`` for
each candidate costs ``O(n^3)`` each (minutes at ``d = 16``, where ``n = d^2``);
:class:`ModularSpan` keeps the span's reduced row echelon form modulo a prime
``p`` instead, so a test is one matrix-vector product.

Rows independent modulo ``p`` are independent over ``Q`` (a nonzero minor mod
``p`` is nonzero); the converse fails only when ``p`` divides a nonzero minor
(about ``1/p``, ``p`` near ``2^26``), and then a good candidate is passed over --
the sketch only chooses tokens, so that costs nothing but the candidate.
Integer arithmetic (numpy ``int64``): entries below ``2^26`` keep every product
below ``2^52`` and every sum of up to ``2^11`` of them below ``2^63``.

>>> span = ModularSpan(3)
>>> span.add((1, 2, 3)), span.add((2, 4, 6)), span.independent((0, 1, 0)), span.add((0, 1, 0))
(True, False, True, True)
>>> span.rank, span.independent((1, 0, 3))
(2, False)

:class:`LeastNorm` keeps the least-norm solution ``w`` of ``D w = s`` as rows of
``D`` (and of ``s``) arrive, what ``np.linalg.lstsq`` gives for the rows so far:
an orthonormal basis of the rows (Gram-Schmidt, each row orthogonalised twice)
and the triangular system they make, solved forward, so a row costs
``O(n m)`` instead of a solve's ``O(n^2 m)`` (floats by design).

>>> solver = LeastNorm(3, 1)
>>> solver.add((1, 0, 1), (2,)), solver.add((0, 1, 0), (3,))
(True, True)
>>> [round(float(e), 12) for e in solver.solution()[:, 0]]
[1.0, 3.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["LeastNorm", "ModularSpan", "PRIME"]

#: The prime the span is kept modulo (below ``2^26``).
PRIME = 67_108_859
_MAX_ROWS = 2**11  # sums of this many products of entries below 2^26 stay below 2^63


class ModularSpan:
    """The span of integer rows of width ``n``, in reduced row echelon form modulo :data:`PRIME`."""

    def __init__(self, n: int):
        self.n = n
        self.basis = np.zeros((0, n), dtype=np.int64)
        self.pivots: list[int] = []

    @property
    def rank(self) -> int:
        return len(self.pivots)

    def _reduced(self, row: Sequence[int]) -> np.ndarray:
        v = np.asarray(row, dtype=np.int64) % PRIME
        if self.pivots:
            v = (v - (v[self.pivots] @ self.basis) % PRIME) % PRIME
        return v

    def independent(self, row: Sequence[int]) -> bool:
        """Whether ``row`` is outside the span (certain over ``Q`` when ``True``)."""
        return bool(self._reduced(row).any())

    def add(self, row: Sequence[int]) -> bool:
        """Add ``row`` if it is independent of the span; whether it was."""
        v = self._reduced(row)
        nonzero = np.flatnonzero(v)
        if not len(nonzero):
            return False
        if self.rank >= _MAX_ROWS:  # pragma: no cover - d <= 45 keeps d^2 rows below 2^11
            raise ValueError(f"a modular span keeps at most {_MAX_ROWS} rows")
        pivot = int(nonzero[0])
        v = (v * pow(int(v[pivot]), -1, PRIME)) % PRIME
        if self.pivots:
            self.basis = (self.basis - np.outer(self.basis[:, pivot], v) % PRIME) % PRIME
        self.basis = np.vstack([self.basis, v])
        self.pivots.append(pivot)
        return True


class LeastNorm:
    """The least-norm solution of ``D w = s`` (``w`` with ``columns`` right-hand sides) over the rows added.

    A row numerically dependent on the earlier ones (its part outside their span below ``cutoff`` of
    its size) is left out, as ``lstsq`` leaves out a singular value that small."""

    def __init__(self, n: int, columns: int, cutoff: float = 1e-12):
        self.n, self.cutoff, self.rank = n, cutoff, 0
        self._basis = np.zeros((n, n))  # rows 0..rank-1: orthonormal, spanning the rows kept
        self._forward = np.zeros((n, columns))  # rows 0..rank-1: R^-1 s, R the rows' triangular coefficients

    def add(self, row: ArrayLike, rhs: ArrayLike) -> bool:
        """Add the equation ``row . w = rhs``; whether it was kept (independent of the earlier ones)."""
        g = np.asarray(row, dtype=float)
        basis, forward = self._basis[: self.rank], self._forward[: self.rank]
        coefficients = basis @ g
        q = g - coefficients @ basis
        again = basis @ q  # (a second pass: classical Gram-Schmidt keeps orthogonality only so)
        q, coefficients = q - again @ basis, coefficients + again
        size = float(np.linalg.norm(q))
        if self.rank == self.n or not size > self.cutoff * float(np.linalg.norm(g)):
            return False
        self._forward[self.rank] = (np.asarray(rhs, dtype=float) - coefficients @ forward) / size
        self._basis[self.rank] = q / size
        self.rank += 1
        return True

    def solution(self) -> np.ndarray:
        """``w`` (``n x columns``): the least-norm solution of the equations kept."""
        return self._basis[: self.rank].T @ self._forward[: self.rank]
