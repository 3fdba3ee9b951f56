"""The query schedule: configurations, the queries they ask, and the counts.

docs/algorithm.md sections 3-5. A *configuration* is a pair of integer tokens
``(x, z)``; its queries are ``S_k(x, z) = (z, ..., z [k copies], x)`` for a set
of copy numbers ``k``. Two kinds
(:class:`~exactlearn.states.ConfigKind`):

* **measurement** -- ``(x_j, z_j)``, ``k = 0..2H`` (``2H + 1`` queries). The
  ``d^2`` configurations form a chain: configuration ``j`` shares its token
  ``x`` or its difference ``a = z - x`` with configuration ``j - 1``
  (:func:`link_kind`), the other vector is random;
* **matching** -- one per link, tokens formed by adding the two configurations'
  token vectors (:func:`linked_tokens`) so that its matrix is
  ``M_{j-1} + M_j``: every head's pole multiplies (``rho_C = rho_{j-1} rho_j``)
  and its residue adds (shared ``x``) or stays (shared ``a``). ``k = 1..2H-1``
  (``2H - 1`` queries; ``R(0)`` and ``R(oo)`` are known by linearity);

In the lean schedule a measurement configuration after the first ``d`` has
known ``R(0) = u^T x``, ``R(oo) = u^T z`` and residues ``v_h^T (x - z)``, and
is queried at ``k = 1..2H-1`` only (``2H - 1`` queries).

**Affine attention** (scores ``x_i^T W_h x_N + w_h^T x_i``, output offset
``c0``; docs/algorithm.md section 9) runs the same schedule on ``d(d + 1)``
configurations (:func:`configuration_count`): each pole measures
``[W_h | w_h]`` along ``a [x; 1]^T`` (:func:`affine_weight_row`), and a link
sharing ``a`` reflects ``x`` instead of adding it (:attr:`LinkKind.REFLECT`), so
that the bias coordinate of every query token stays 1.

Heads are matched by poles *and* residues (docs/algorithm.md section 4): two
canonical heads with equal ``v_h`` have equal residues in every configuration,
so residues alone cannot separate them.

This schedule is exactlearn's own construction. It meets the counts of the
paper (Kim, Kim & Guo, arXiv 2608.03294): ``4Hd^2 - 2H + 1`` queries of maximum
length ``2H + 1`` (with ``H0`` in place of ``H`` for a known upper bound).

>>> paper_query_count(3, 2), max_query_length(2)
(69, 5)
>>> lean_query_count(3, 2)
39
>>> paper_query_count(3, 2, affine=True)      # 4 H d(d+1) - 2H + 1
93
>>> copies_query((1, 0), (0, 1), 2)
((0, 1), (0, 1), (1, 0))
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from flint import fmpq_mat, fmpz_mat

from .errors import InvalidArgumentError
from .exact import Token
from .ratfun import CopyTerms, known_value_at_zero
from .states import ConfigKind, LinkKind, Status, StrEnum
from .validate import integer

__all__ = [
    "Schedule",
    "as_schedule",
    "link_kind",
    "linked_tokens",
    "matching_kind",
    "configuration_count",
    "affine_weight_row",
    "paper_query_count",
    "lean_query_count",
    "predecessor_query_count",
    "parameter_floor",
    "fallback_query_count",
    "max_query_length",
    "vector_excess",
    "vector_query_count",
    "copies_query",
    "measurement_points",
    "matching_points",
    "weight_row",
    "value_row",
    "Configuration",
    "TokenSampler",
]

def _check_sizes(d: int, heads: int) -> None:
    integer("d", d)  # InvalidArgumentError (a ValueError) naming the argument
    integer("heads", heads)


def configuration_count(d: int, *, affine: bool = False) -> int:
    """The measurement configurations of the paper schedule: ``d^2``, or ``d(d + 1)`` for affine
    attention (the unknowns of ``W_h``, or of ``[W_h | w_h]``)."""
    return d * (d + 1) if affine else d * d


def paper_query_count(d: int, heads: int, *, affine: bool = False) -> int:
    """The abstract's count ``4 H d^2 - 2 H + 1`` (``H`` or the bound ``H0``); ``affine``:
    ``4 H d(d+1) - 2 H + 1`` (docs/algorithm.md section 9)."""
    _check_sizes(d, heads)
    return 4 * heads * configuration_count(d, affine=affine) - 2 * heads + 1


def lean_query_count(d: int, heads: int, *, affine: bool = False) -> int:
    """The lean schedule's count ``d(2H+1) + (n-1)(2H-1)``, ``n = d^2`` (``d(d+1)`` affine; docs/algorithm.md
    section 5)."""
    _check_sizes(d, heads)
    return d * (2 * heads + 1) + (configuration_count(d, affine=affine) - 1) * (2 * heads - 1)


def predecessor_query_count(d: int) -> int:
    """The single-head predecessor's ``d^2 + d`` queries (Bhattamishra et al., H = 1)."""
    return d * d + d


def parameter_floor(d: int, heads: int) -> int:
    """``H (d^2 + d)``: the dimension of the canonical parameters.

    A floor for methods whose answers depend continuously (e.g. algebraically)
    on the parameters: a continuous injective map cannot lower dimension
    (invariance of domain), so fewer real answers cannot determine ``H(d^2+d)``
    real parameters. It is not a floor for arbitrary decoding of exact rationals,
    where one answer can carry unboundedly many digits.
    """
    _check_sizes(d, heads)
    return heads * (d * d + d)


def fallback_query_count(d: int, heads: int, *, affine: bool = False) -> int:
    """Lean schedule when two heads share ``v``: every later configuration gets a matching query."""
    later = configuration_count(d, affine=affine) - d
    return d * (2 * heads + 1) + (d - 1) * (2 * heads - 1) + 2 * later * (2 * heads - 1)


class Schedule(StrEnum):
    """Which query schedule a run follows (docs/algorithm.md sections 4 and 5).

    >>> Schedule.PAPER.query_count(3, 2), Schedule("lean").query_count(3, 2)
    (69, 39)
    """

    PAPER = "paper"  # 4Hd^2 - 2H + 1 queries: every link has a matching configuration
    LEAN = "lean"  # d(2H+1) + (d^2-1)(2H-1): later configurations labelled by predicted residues

    def query_count(self, d: int, heads: int, *, fallback: bool = False, affine: bool = False,
                    outputs: int | None = None) -> int:
        """The count without redraws for ``H`` (or ``H0``) ``heads``; ``fallback``: a lean run whose
        later configurations were matched by queries (two heads share ``v``); ``affine``: the
        schedule of affine attention (``d(d + 1)`` configurations); ``outputs``: vector answers of
        that length (:func:`vector_query_count`)."""
        if outputs is not None:
            return vector_query_count(d, heads, outputs, self.value, fallback=fallback)
        extra = {"affine": True} if affine else {}  # without biases the counts are called as they always were
        if self is Schedule.PAPER:
            return paper_query_count(d, heads, **extra)
        if fallback:
            return fallback_query_count(d, heads, **extra)
        return lean_query_count(d, heads, **extra)


def as_schedule(value: Schedule | str) -> Schedule:
    """``value`` as a :class:`Schedule`, or :class:`~exactlearn.InvalidArgumentError` naming the choices."""
    try:
        return Schedule(value)
    except ValueError:
        choices = tuple(s.value for s in Schedule)
        raise InvalidArgumentError(f"schedule must be one of {choices}, got {value!r}") from None


def max_query_length(heads: int) -> int:
    """``2H + 1``: ``2H`` copies of ``z`` followed by ``x``."""
    return 2 * heads + 1


def copies_query(x: Token, z: Token, k: int) -> tuple[Token, ...]:
    """``S_k(x, z)``: ``k`` copies of ``z``, then ``x`` (the attention query)."""
    return (z,) * k + (x,)


def measurement_points(heads: int, excess: int | None = None) -> list[int]:
    """Copy numbers of a measurement configuration: ``0..2H`` (``0..H + excess``: vector answers,
    :meth:`~exactlearn.field.Field.sample_excess`)."""
    return list(range(heads + 1 + (heads if excess is None else excess)))


def matching_points(heads: int, excess: int | None = None) -> list[int]:
    """Copy numbers of a matching or predicted configuration: ``1..2H-1`` (``1..H - 1 + excess``)."""
    return list(range(1, heads + (heads if excess is None else excess)))


def vector_excess(outputs: int, heads: int) -> int:
    """The copy counts beyond ``H + 1`` of a measurement with ``D = outputs``-vector answers: 1 when
    ``D >= H`` (docs/algorithm.md section 10), else ``H`` (the scalar count)."""
    return 1 if outputs >= heads else heads


def vector_query_count(d: int, heads: int, outputs: int, schedule: str = "paper", *,
                       fallback: bool = False) -> int:
    """Queries of a run with ``outputs``-vector answers (docs/algorithm.md section 10), ``e`` =
    :func:`vector_excess`: paper ``d^2 (H + 1 + e) + (d - 1)(H - 1 + e)`` (``(H + 2) d^2 + H(d - 1)``
    when ``D >= H``), lean ``d (H + 1 + e) + (d^2 - 1)(H - 1 + e)``; ``fallback`` (two heads with equal
    ``V``): every link of the chain has a matching configuration.

    >>> vector_query_count(3, 2, 3), vector_query_count(3, 2, 3, "lean"), paper_query_count(3, 2)
    (40, 28, 69)
    """
    _check_sizes(d, heads)
    e = vector_excess(outputs, heads)
    full, link, n = heads + 1 + e, heads - 1 + e, d * d
    if schedule == "paper":
        return n * full + ((n - 1) if fallback else (d - 1)) * link
    if fallback:
        return d * full + (d - 1) * link + 2 * (n - d) * link
    return d * full + (n - 1) * link


def weight_row(x: Token, z: Token) -> list[int]:
    """``vec((z - x) x^T)`` (row-major): ``log rho_h = <W_h, (z - x) x^T>_F``."""
    return [(zb - xb) * xa for zb, xb in zip(z, x) for xa in x]


def affine_weight_row(x: Token, z: Token) -> list[int]:
    """``vec([a; 0] [x; 1]^T)`` (row-major, ``(d + 1)^2`` entries), ``a = z - x``: the weight row of affine
    attention as a bias-free one on the tokens ``[x; 1]``. With ``M = [[W, w], [*, *]]``,
    ``log rho_h = a^T W_h x + a^T w_h = <M_h, [a; 0] [x; 1]^T>_F``; the last row of ``M`` never enters
    a score difference (it is fixed to 0, :func:`bias_rows`).

    >>> affine_weight_row((1, 2), (2, 2))
    [1, 2, 1, 0, 0, 0, 0, 0, 0]
    """
    right = (*x, 1)
    return [(zb - xb) * xa for zb, xb in zip((*z, 0), (*x, 0)) for xa in right]


def bias_rows(d: int) -> list[list[int]]:
    """The ``d + 1`` unit rows fixing the last row of the ``(d + 1) x (d + 1)`` matrix ``M`` to 0 (score
    ``0``, ``rho = 1``): with the ``d(d + 1)`` rows :func:`affine_weight_row` of an affine run they make the
    square design of ``M``.

    >>> bias_rows(1)
    [[0, 0, 1, 0], [0, 0, 0, 1]]
    """
    n = d + 1
    return [[1 if i == d * n + b else 0 for i in range(n * n)] for b in range(n)]


def value_row(x: Token, z: Token) -> Token:
    """``x - z``: ``c_h = v_h^T (x - z)``."""
    return tuple(a - b for a, b in zip(x, z))


def add_tokens(a: Token, b: Token) -> Token:
    return tuple(p + q for p, q in zip(a, b))


def sub_tokens(a: Token, b: Token) -> Token:
    return tuple(p - q for p, q in zip(a, b))


def link_kind(j: int, d: int) -> LinkKind:
    """Which vector configuration ``j`` shares with configuration ``j - 1`` (``j >= 1``).

    ``"x"``: the same query token ``x`` (a new difference ``a = z - x``);
    ``"a"``: the same difference ``a`` (a new ``x``). The first ``d - 1`` links
    share ``x``, so configurations ``0..d-1`` have ``d`` different ``a`` (they
    determine every ``v_h``); later links alternate ``a, x, a, ...``, so that the
    ``d^2`` rank-one matrices ``a_j x_j^T`` span all ``d x d`` matrices.

    >>> [str(link_kind(j, 3)) for j in range(1, 9)]
    ['x', 'x', 'a', 'x', 'a', 'x', 'a', 'x']
    """
    if j < 1:
        raise ValueError("links start at configuration 1")
    if j < d:
        return LinkKind.X
    return LinkKind.A if (j - d) % 2 == 0 else LinkKind.X


def matching_kind(kind: LinkKind, affine: bool) -> LinkKind:
    """How a link's matching configuration is formed: ``kind`` (the shared vector), except that a shared
    ``a`` of affine attention reflects ``x`` (:attr:`LinkKind.REFLECT`)."""
    return LinkKind.REFLECT if affine and kind is LinkKind.A else kind


def linked_tokens(kind: LinkKind | str, prev: tuple[Token, Token],
                  cur: tuple[Token, Token]) -> tuple[Token, Token]:
    """The matching configuration ``(x_C, z_C)`` of two linked configurations.

    Its matrix is ``(z_C - x_C) x_C^T = M_prev + M_cur``, so for every head
    ``rho_C = rho_prev * rho_cur`` (log-linearity of ``log rho = <W, M>``), and
    the residues combine: ``c_C = c_prev + c_cur`` for a shared ``x``,
    ``c_C = c_prev = c_cur`` for a shared ``a``. The tokens are formed by adding
    the configurations' token vectors:

    * shared ``x``: ``x_C = x``, ``z_C = z_prev + z_cur - x``;
    * shared ``a``: ``x_C = x_prev + x_cur``, ``z_C = z_prev + x_cur``;
    * shared ``a``, reflected (:attr:`LinkKind.REFLECT`, affine attention, whose matrices
      are ``a [x; 1]^T``): ``x_C = 2 x_prev - x_cur``, ``z_C = x_C + a``. Its matrix is
      ``a [x_C; 1]^T = 2 M_prev - M_cur`` (``[x_C; 1] = 2 [x_prev; 1] - [x_cur; 1]``), so
      ``rho_C = rho_prev^2 / rho_cur`` and ``c_C = c_prev = c_cur``.

    >>> linked_tokens("x", ((1, 0), (1, 2)), ((1, 0), (0, 1)))
    ((1, 0), (0, 3))
    >>> linked_tokens("a", ((1, 0), (2, 1)), ((0, 1), (1, 2)))
    ((1, 1), (2, 2))
    >>> linked_tokens(LinkKind.REFLECT, ((1, 0), (2, 1)), ((0, 1), (1, 2)))
    ((2, -1), (3, 0))
    """
    (xp, zp), (xc, zc) = prev, cur
    if kind == LinkKind.REFLECT:
        if sub_tokens(zp, xp) != sub_tokens(zc, xc):
            raise ValueError("a shared-a link needs equal z - x")
        reflected = tuple(2 * p - q for p, q in zip(xp, xc))
        return reflected, add_tokens(reflected, sub_tokens(zc, xc))
    if kind == LinkKind.X:
        if xp != xc:
            raise ValueError("a shared-x link needs equal x")
        return xc, sub_tokens(add_tokens(zp, zc), xc)
    if kind == LinkKind.A:
        if sub_tokens(zp, xp) != sub_tokens(zc, xc):
            raise ValueError("a shared-a link needs equal z - x")
        return add_tokens(xp, xc), add_tokens(zp, xc)
    raise ValueError(f"unknown link kind {kind!r}")


@dataclass
class Configuration:
    """One configuration and what was learned from it.

    ``kind`` is a :class:`~exactlearn.states.ConfigKind`; ``points``
    the copy numbers queried, ``values`` the oracle's answers; ``fit`` the
    copy function read off them (:class:`~exactlearn.ratfun.CopyTerms`, field
    elements; ``None`` for a link whose terms were predicted and checked),
    ``terms`` its ``(rho, c)`` pairs, ``labels[h]`` the index in ``terms`` of
    the head labelled ``h``.
    """

    kind: ConfigKind
    x: Token
    z: Token
    points: list[int] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    at_zero: Any = None
    at_infinity: Any = None
    terms: tuple = ()
    labels: list[int] | None = None
    status: Status = Status.PENDING
    link: LinkKind | None = None  # for a matching configuration
    fit: CopyTerms | None = None

    def term_of(self, head: int) -> tuple:
        """The ``(rho, c)`` of the head labelled ``head``."""
        if self.labels is None:
            raise ValueError("the heads of this configuration are not labelled")
        return self.terms[self.labels[head]]

    @property
    def value_at_zero(self) -> Any:
        """``R(0) = u^T x``: the sample at ``k = 0`` or the known value."""
        return known_value_at_zero(self.points, self.values, self.at_zero)

    @property
    def value_at_infinity(self) -> Any:
        """``R(oo) = u^T z``: the known value, else the fitted copy function's, else ``R(0) - sum_h c_h``.

        On an exact field the fitted value is ``R(0) - sum_h c_h``; over real balls
        the fit gives it directly, with a radius of its own (the sum would carry
        every residue's radius)."""
        if self.at_infinity is not None:
            return self.at_infinity
        if self.fit is not None and self.fit.at_infinity is not None:
            return self.fit.at_infinity
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


def integer_matrix(rows: Sequence[Sequence[int]]) -> fmpq_mat:
    """The integer ``rows`` as an ``fmpq_mat`` (built through ``fmpz_mat``: no gcd per entry)."""
    return fmpq_mat(fmpz_mat(len(rows), len(rows[0]), [x for r in rows for x in r]))


def full_rank(rows: Sequence[Sequence[int]], rank: int) -> bool:
    if not rows:
        return rank == 0
    return integer_matrix(rows).rank() == rank
