"""Full rank of a square integer design that changes a few rows at a time.

A chain's redraw changes the rows of the few configurations using the redrawn
vectors, and its pre-query check asks whether the whole weight design is still
of full rank. :class:`DesignRank` keeps the last full-rank design ``A`` with its
inverse modulo a prime ``p`` and checks a design ``A'`` differing in the rows
``S`` by the ``|S| x |S|`` matrix ``K = (A' A^-1)[S, S]`` modulo ``p``: its
determinant is ``det A' / det A`` modulo ``p``, so a ``K`` of full rank proves
``det A'`` nonzero (a nonzero integer modulo ``p`` is nonzero). A ``K`` deficient
modulo ``p`` proves nothing: the exact rank decides, as it does for a design
differing in many rows. Accepted designs update the inverse by the
Sherman-Morrison-Woodbury formula (docs/performance.md).

>>> check = DesignRank()
>>> rows = [[1, 0], [0, 1]]
>>> check.full_rank([0, 1], lambda i: rows[i]) is not None
True
>>> rows[1] = [2, 0]                     # one row changed: a singular design
>>> check.full_rank([0, 2], lambda i: rows[i]) is None
True
>>> rows[1] = [2, 3]
>>> check.full_rank([0, 3], lambda i: rows[i])
[1, 0]
[2, 3]
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from flint import fmpq_mat, fmpz_mat, nmod_mat

from .settings import DEFAULT_SETTINGS, ScheduleSettings

__all__ = ["DesignRank"]


class DesignRank:
    """Exact full-rank checks of square integer designs, each named by its rows' ``keys`` (equal keys,
    equal rows); a design differing from the last full-rank one in at most ``rank_update_rows`` rows is
    checked modulo ``rank_prime`` first (module docstring)."""

    def __init__(self, settings: ScheduleSettings = DEFAULT_SETTINGS.schedule):
        self.prime = settings.rank_prime
        self.update_rows = settings.rank_update_rows
        self._keys: list[Hashable] = []  # the rows of the last full-rank design
        self._design: fmpq_mat | None = None
        self._inverse: nmod_mat | None = None  # its inverse modulo the prime, once computed
        self._seeded = False  # whether that inverse was tried (None after: singular modulo the prime)

    def full_rank(self, keys: Sequence[Hashable], row: Callable[[int], list[int]]) -> fmpq_mat | None:
        """The design of rows ``row(i)`` for ``i < len(keys)`` if it has full rank, else ``None``."""
        n = len(keys)
        changed = [i for i in range(n) if len(self._keys) != n or keys[i] != self._keys[i]]
        if not changed and self._design is not None:
            return self._design
        if self._design is not None and len(changed) <= self.update_rows and self._seed():
            new = {i: row(i) for i in changed}
            if self._update(changed, new):
                design = fmpq_mat(self._design)
                for i, r in new.items():
                    for c, v in enumerate(r):
                        design[i, c] = v
                return self._keep(keys, design, keep_inverse=True)
        rows = [row(i) for i in range(n)]
        integers = fmpz_mat(n, len(rows[0]), [v for r in rows for v in r])
        if integers.rank() != n:
            return None
        return self._keep(keys, fmpq_mat(integers), keep_inverse=False)

    def _keep(self, keys: Sequence[Hashable], design: fmpq_mat, keep_inverse: bool) -> fmpq_mat:
        self._keys, self._design = list(keys), design
        if not keep_inverse:
            self._inverse, self._seeded = None, False
        return design

    def _seed(self) -> bool:
        """The kept design's inverse modulo the prime (computed once per full check)."""
        if not self._seeded:
            assert self._design is not None
            self._seeded = True
            numer, _ = self._design.numer_denom()
            try:
                self._inverse = nmod_mat(numer, self.prime).inv()
            except ZeroDivisionError:  # singular modulo the prime: full checks until the next one
                self._inverse = None
        return self._inverse is not None

    def _update(self, changed: list[int], new: dict[int, list[int]]) -> bool:
        """Whether the design with rows ``new`` has full rank modulo the prime; if so, its inverse is kept."""
        inverse = self._inverse
        assert inverse is not None
        n, k, p = inverse.nrows(), len(changed), self.prime
        pick = nmod_mat(n, k, p)  # columns ``changed`` of the identity
        for col, i in enumerate(changed):
            pick[i, col] = 1
        rows_times_inverse = nmod_mat(k, n, [v for i in changed for v in new[i]], p) * inverse
        small = rows_times_inverse * pick  # (A' A^-1)[S, S]
        if small.rank() != k:
            return False
        # A'^-1 = A^-1 - A^-1[:, S] K^-1 (A'[S, :] A^-1 - I[S, :])
        self._inverse = inverse - (inverse * pick) * small.inv() * (rows_times_inverse - pick.transpose())
        return True
