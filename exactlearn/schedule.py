"""The query schedule: configurations, the queries they ask, and the counts.

ALGORITHM.md sections 3-5. A *configuration* is a pair of integer tokens
``(x, z)``; its queries are ``S_k(x, z) = (z, ..., z [k copies], x)`` for a set
of copy numbers ``k``. Three kinds:

* **measurement** -- random ``(x_j, z_j)``, ``k = 0..2H`` (``2H + 1`` queries);
* **matching** -- ``(x_1 + x_j, z_1 + z_j)``, ``k = 1..2H-1`` (``2H - 1``
  queries; ``R(0)`` and ``R(oo)`` are known by linearity);
* **predicted** (lean schedule only) -- a later measurement configuration whose
  ``R(0) = u^T x``, ``R(oo) = u^T z`` and residues ``v_h^T (x - z)`` are known,
  ``k = 1..2H-1`` (``2H - 1`` queries).

This schedule is exactlearn's own construction. The paper (Kim, Kim & Guo,
arXiv 2608.03294) is available to us only as its abstract; the construction here
meets every number the abstract states: ``4Hd^2 - 2H + 1`` queries of maximum
length ``2H + 1`` (with ``H0`` in place of ``H`` for a known upper bound).

>>> paper_query_count(3, 2), max_query_length(2)
(69, 5)
>>> lean_query_count(3, 2)
39
>>> copies_query((1, 0), (0, 1), 2)
((0, 1), (0, 1), (1, 0))
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Sequence

from flint import fmpq_mat

from .exact import Token

__all__ = [
    "SCHEDULES",
    "paper_query_count",
    "lean_query_count",
    "predecessor_query_count",
    "parameter_floor",
    "query_count",
    "max_query_length",
    "copies_query",
    "measurement_points",
    "matching_points",
    "weight_row",
    "value_row",
    "Configuration",
    "TokenSampler",
]

SCHEDULES = ("paper", "lean")


def paper_query_count(d: int, heads: int) -> int:
    """The abstract's count ``4 H d^2 - 2 H + 1`` (``H`` or the bound ``H0``)."""
    return 4 * heads * d * d - 2 * heads + 1


def lean_query_count(d: int, heads: int) -> int:
    """The lean schedule's count ``d(2H+1) + (d^2-1)(2H-1)`` (ALGORITHM.md section 5)."""
    return d * (2 * heads + 1) + (d * d - 1) * (2 * heads - 1)


def predecessor_query_count(d: int) -> int:
    """The single-head predecessor's ``d^2 + d`` queries (Bhattamishra et al., H = 1)."""
    return d * d + d


def parameter_floor(d: int, heads: int) -> int:
    """``H (d^2 + d)``: one number per query, so no method can use fewer queries."""
    return heads * (d * d + d)


def query_count(d: int, heads: int, schedule: str = "paper") -> int:
    """The count of a schedule without redraws."""
    if schedule == "paper":
        return paper_query_count(d, heads)
    if schedule == "lean":
        return lean_query_count(d, heads)
    raise ValueError(f"unknown schedule {schedule!r}; choose one of {SCHEDULES}")


def max_query_length(heads: int) -> int:
    """``2H + 1``: ``2H`` copies of ``z`` followed by ``x``."""
    return 2 * heads + 1


def copies_query(x: Token, z: Token, k: int) -> tuple[Token, ...]:
    """``S_k(x, z)``: ``k`` copies of ``z``, then ``x`` (the attention query)."""
    return (z,) * k + (x,)


def measurement_points(heads: int) -> list[int]:
    """Copy numbers of a measurement configuration: ``0..2H``."""
    return list(range(2 * heads + 1))


def matching_points(heads: int) -> list[int]:
    """Copy numbers of a matching or predicted configuration: ``1..2H-1``."""
    return list(range(1, 2 * heads))


def weight_row(x: Token, z: Token) -> list[int]:
    """``vec((z - x) x^T)`` (row-major): ``log rho_h = <W_h, (z - x) x^T>_F``."""
    return [(zb - xb) * xa for zb, xb in zip(z, x) for xa in x]


def value_row(x: Token, z: Token) -> Token:
    """``x - z``: ``c_h = v_h^T (x - z)``."""
    return tuple(a - b for a, b in zip(x, z))


def add_tokens(a: Token, b: Token) -> Token:
    return tuple(p + q for p, q in zip(a, b))


@dataclass
class Configuration:
    """One configuration and what was learned from it.

    ``kind`` is ``"measurement"``, ``"matching"`` or ``"predicted"``; ``points``
    the copy numbers queried, ``values`` the oracle's answers; ``terms`` the
    ``(rho, c)`` pairs read off the reconstructed copy function (field elements),
    ``labels[h]`` the index in ``terms`` of the head labelled ``h``.
    """

    kind: str
    x: Token
    z: Token
    points: list[int] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    at_zero: Any = None
    at_infinity: Any = None
    terms: tuple = ()
    labels: list[int] | None = None
    status: str = "pending"  # pending | measured | used | degenerate

    @property
    def value_at_zero(self) -> Any:
        """``R(0) = u^T x``: the sample at ``k = 0`` or the known value."""
        if self.at_zero is not None:
            return self.at_zero
        return self.values[self.points.index(0)]

    @property
    def value_at_infinity(self) -> Any:
        """``R(oo) = u^T z``: the known value, or ``R(0) - sum_h c_h``."""
        if self.at_infinity is not None:
            return self.at_infinity
        total = self.value_at_zero
        for _, c in self.terms:
            total = total - c
        return total


class TokenSampler:
    """Random integer tokens with entries uniform in ``[-bound, bound]``.

    Owns a ``random.Random`` seeded by the caller (no global state).
    """

    def __init__(self, d: int, bound: int, rng: random.Random):
        self.d = d
        self.bound = bound
        self.rng = rng

    def token(self) -> Token:
        return tuple(self.rng.randint(-self.bound, self.bound) for _ in range(self.d))

    def pair(self) -> tuple[Token, Token]:
        """A pair ``(x, z)`` with ``x != 0`` and ``z != x`` (checked before querying)."""
        while True:
            x, z = self.token(), self.token()
            if any(x) and z != x:
                return x, z


def full_rank(rows: Sequence[Sequence[int]], rank: int) -> bool:
    if not rows:
        return rank == 0
    m = fmpq_mat(len(rows), len(rows[0]), [x for r in rows for x in r])
    return m.rank() == rank
