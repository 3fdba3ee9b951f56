"""Independence of integer rows, kept up to date row by row: the sketch's rank tests.

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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["ModularSpan", "PRIME"]

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
