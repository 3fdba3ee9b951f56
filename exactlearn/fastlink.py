"""Predicted matching configurations: the terms of a link's copy function without reconstructing it.

The matching configuration ``C`` of a link between configurations with terms
``(rho_i, c_i)`` and ``(rho'_j, c'_j)`` (docs/algorithm.md section 4) has, for a
multi-head attention, the copy function

    R*(k) = R(oo) + sum_i c*_i / (1 + k rho_i rho'_sigma(i))

for a pairing ``sigma``, with ``c*_i = c_i + c'_sigma(i)`` (shared ``x``) or
``c*_i = c_i = c'_sigma(i)`` (shared ``a``). A shared ``a`` of affine attention
(``x`` reflected) has the poles ``rho_i^2 / rho'_sigma(i)`` in place of the
products ``rho_i rho'_sigma(i)`` below, and the residues of a shared ``a``. :func:`predicted_link_terms` finds
``sigma`` modulo the prime ``p = 2^61 - 1`` and then checks ``R*`` *exactly*; it
returns ``R*``'s terms, or ``None`` when anything does not fit (the caller then
reconstructs ``R`` from the samples as usual).

1. The denominator ``q(k) = prod_t (1 + k rho_t)`` modulo ``p``: with ``q(0) = 1``,
   ``r = (R - R(oo)) q`` is a polynomial of degree ``< m`` with the known
   ``r(0) = R(0) - R(oo)``; the ``2m - 1`` unknown coefficients solve one
   ``nmod_mat`` system built from the first ``2m - 1`` samples.
2. ``rho`` is a pole of ``R`` (``q(-1/rho) = 0``) iff it is a root of
   ``x^m q(-1/x) = prod_t (x - rho_t)``. The pairs ``(i, j)`` whose product
   ``rho_i rho'_j`` is a root modulo ``p`` must form a bijection ``sigma``.
3. ``R*`` is built exactly from ``sigma`` (its poles distinct, its residues
   nonzero, so it is reduced of type ``(m, m)``) and compared with ``==`` to
   ``R(0)`` and every sample.

Why step 3 suffices: a function of type at most ``(n, n)`` with the known value
``R(oo)`` is fixed by its values at the ``2n`` points ``k = 0`` and
``k = 1..2n-1`` (two such functions ``R(oo) + a/b`` and ``R(oo) + a'/b'``, ``deg a,
a' < n``, give ``a b' - a' b`` of degree ``< 2n`` with ``2n`` roots; no pole of
``R*`` is at ``k >= 0`` since every ``rho > 0``). So when the check passes,
``R*`` is the function :func:`~exactlearn.ratfun.reconstruct_nn` returns, and
its terms sorted by ``rho`` are exactly what
:func:`~exactlearn.ratfun.copy_terms` reads off it. Steps 1-2 only *propose*
``sigma``: a wrong proposal (a coincidence modulo ``p``, a singular system)
fails the check or returns ``None``, never a wrong answer.

Why the pairing is then the only one: once ``R = R*``, the exact denominator
of ``R*`` solves the system of step 1 modulo ``p`` (every number in it has a
denominator prime to ``p``, or step 1 gave up), and that system was
nonsingular, so its solution is ``prod (x - rho*_t)`` modulo ``p``. Any pair
``(i, j)`` with ``rho_i rho'_j`` *exactly* a pole of ``R`` is therefore a root
modulo ``p``, so ``j = sigma(i)``, the one hit of step 2; and the poles being
distinct, the term it fits is unique too. So the search of
:func:`~exactlearn.matching.link_matchings` would find exactly ``(sigma, tau)``,
and a link whose pairing is not unique is never predicted (step 2 sees two
hits, or two equal products).

A shared ``a`` whose residues are distinct on each side needs no step 1: the
search only pairs equal residues (``c_i = c'_j``), so ``c_i = c'_sigma(i)``
is the only pairing it could find, and step 3 decides whether it does.

>>> from flint import fmpq
>>> prev = [(fmpq(2), fmpq(1)), (fmpq(3), fmpq(5))]
>>> cur = [(fmpq(5), fmpq(-2)), (fmpq(7), fmpq(4))]
>>> poles = [(fmpq(14), fmpq(5)), (fmpq(15), fmpq(3))]   # sigma = (0 -> 1, 1 -> 0), shared x
>>> R = lambda k: 1 + sum(c / (1 + k * r) for r, c in poles)
>>> link = predicted_link_terms("x", prev, cur, [1, 2, 3], [R(k) for k in (1, 2, 3)], 2,
...                             at_zero=R(0), at_infinity=fmpq(1))
>>> link.terms, link.pairing
(((14, 5), (15, 3)), ([1, 0], [0, 1]))
>>> predicted_link_terms("x", prev, cur, [1, 2, 3], [R(1), R(2), R(3) + 1], 2,
...                      at_zero=R(0), at_infinity=fmpq(1)) is None
True
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from flint import fmpq, fmpz, fmpz_poly, nmod, nmod_mat, nmod_poly

from .exact import PRIME_61
from .states import LinkKind

__all__ = ["predicted_link_terms", "PredictedLink", "PRIME"]

#: The pairing is found modulo this prime (``2^61 - 1``) and then checked exactly.
PRIME = PRIME_61


def _mod(value: fmpq) -> nmod:
    """``value`` modulo :data:`PRIME` (ZeroDivisionError if its denominator is divisible by it)."""
    return nmod(value.p, PRIME) / value.q


@lru_cache(maxsize=64)
def _power_rows(points: tuple[int, ...], m: int) -> tuple[tuple[int, ...], ...]:
    """``(k, k^2, ..., k^m)`` modulo :data:`PRIME` for each point."""
    return tuple(tuple(pow(k, e, PRIME) for e in range(1, m + 1)) for k in points)


def _denominator_mod_p(points: Sequence[int], values: Sequence[fmpq], m: int, at_zero: fmpq,
                       at_infinity: fmpq) -> nmod_poly | None:
    """``prod_t (x - rho_t)`` modulo :data:`PRIME` from the samples (step 1), or ``None``.

    ZeroDivisionError if a sample's denominator is divisible by :data:`PRIME`.
    """
    size = 2 * m - 1
    oo = _mod(at_infinity)
    r0 = _mod(at_zero) - oo
    entries: list = []
    rhs = []
    for powers, y in zip(_power_rows(tuple(points[:size]), m), values[:size]):
        w = _mod(y) - oo
        # sum_{l<m} r_l k^l - w sum_{l<=m} q_l k^l = w - r0 (unknowns r_1..r_{m-1}, q_1..q_m)
        entries.extend(powers[: m - 1])
        entries.extend(-w * kp for kp in powers)
        rhs.append(w - r0)
    try:
        solution = nmod_mat(size, size, entries, PRIME).solve(nmod_mat(size, 1, rhs, PRIME))
    except ZeroDivisionError:  # singular modulo p: let the caller reconstruct
        return None
    q = [1] + [int(solution[m - 1 + l, 0]) for l in range(m)]
    # x^m q(-1/x): the coefficient of x^(m - l) is (-1)^l q_l
    return nmod_poly([(-1) ** l * q[l] % PRIME for l in range(m, -1, -1)], PRIME)


def _pairing(roots: nmod_poly, prev: Sequence, cur: Sequence, reflect: bool = False) -> list[int] | None:
    """``sigma`` with ``rho_i rho'_sigma(i)`` (``reflect``: ``rho_i^2 / rho'_sigma(i)``) a root modulo
    :data:`PRIME` for every ``i`` (step 2).

    ZeroDivisionError if a ``rho`` has a numerator or denominator divisible by :data:`PRIME`.
    """
    right = [_mod(r) for r, _ in cur]
    sigma: list[int] = []
    for r, _ in prev:
        a = _mod(r)
        hits = [j for j, b in enumerate(right) if roots(a * a / b if reflect else a * b) == 0]
        if len(hits) != 1:
            return None
        sigma.append(hits[0])
    return sigma if len(set(sigma)) == len(sigma) else None


def _pairing_by_residues(prev: Sequence, cur: Sequence) -> list[int] | None:
    """Shared ``a``: ``sigma`` with ``c_i = c'_sigma(i)``, if the residues on each side are distinct.

    (Step 2 for a shared ``a`` when no two residues of a side are equal: the
    only pairing the search could then find, whatever the poles; ``None``
    otherwise, and steps 1-2 propose.)
    """
    right = [c for _, c in cur]
    if any(right[i] == right[j] for j in range(len(right)) for i in range(j)):
        return None
    sigma = []
    for _, c in prev:  # (fmpq hashing is slow: compare)
        hits = [j for j, r in enumerate(right) if r == c]
        if len(hits) != 1:
            return None
        sigma.append(hits[0])
    return sigma if len(set(sigma)) == len(sigma) else None


def _fits(terms: Sequence[tuple[fmpq, fmpq]], points: Sequence[int], values: Sequence[fmpq], at_zero: fmpq,
          at_infinity: fmpq) -> bool:
    """Step 3, exactly: ``R*(0) = at_zero`` and ``R*(k) = y`` for every sample.

    With ``rho_t = a_t/b_t`` and ``L`` the common denominator of the ``c_t b_t``:
    ``R*(k) - R(oo) = N(k) / (L D(k))`` with the integer polynomials
    ``D = prod_t (b_t + a_t k)`` (positive at ``k >= 0``) and
    ``N = sum_t L c_t b_t D / (b_t + a_t k)``.
    """
    if at_infinity + sum(c for _, c in terms) != at_zero:
        return False
    scaled = [c * rho.q for rho, c in terms]
    common = fmpz(1)
    for g in scaled:
        common = common * g.q // common.gcd(g.q)
    linear = [fmpz_poly([rho.q, rho.p]) for rho, _ in terms]
    prefix = [fmpz_poly([1])]  # prefix[t] = prod_{s < t} (b_s + a_s k); D / linear[t] = prefix[t] * suffix
    for factor in linear:
        prefix.append(prefix[-1] * factor)
    D = prefix[-1]
    N, suffix = fmpz_poly([0]), fmpz_poly([1])
    for t in range(len(linear) - 1, -1, -1):
        g = scaled[t]
        N += g.p * (common // g.q) * (prefix[t] * suffix)
        suffix *= linear[t]
    # N(k) = (y - R(oo)) L D(k) on integers: N(k) y.q oo.q = (y.p oo.q - oo.p y.q) L D(k)
    oo_p, oo_q = at_infinity.p, at_infinity.q
    return all(N(k) * y.q * oo_q == (y.p * oo_q - oo_p * y.q) * common * D(k) for k, y in zip(points, values))


class PredictedLink(NamedTuple):
    """A predicted matching configuration: its ``terms`` and the link's only ``pairing``.

    ``pairing = (sigma, tau)`` as :func:`~exactlearn.matching.link_matchings`
    returns it: term ``i`` of the earlier configuration goes with term
    ``sigma[i]`` of the later one and term ``tau[i]`` of ``terms``.
    """

    terms: tuple[tuple[fmpq, fmpq], ...]
    pairing: tuple[list[int], list[int]]


def predicted_link_terms(kind: LinkKind | str, prev: Sequence, cur: Sequence, points: Sequence[int],
                         values: Sequence[fmpq], n: int, *, at_zero: fmpq,
                         at_infinity: fmpq) -> PredictedLink | None:
    """The terms ``(rho, c)`` (sorted by ``rho``) of a matching configuration and its pairing, or ``None``.

    ``prev`` and ``cur`` are the linked configurations' terms, ``points`` and
    ``values`` the samples (``k >= 1``), ``n`` the reconstruction's degree bound.
    The terms equal ``copy_terms(reconstruct_nn(...)).terms`` and the pairing is
    the only one :func:`~exactlearn.matching.link_matchings` finds (module
    docstring); ``None`` means: reconstruct and search.
    """
    kind = LinkKind(kind)
    m = len(prev)
    if (m == 0 or len(cur) != m or m > n or len(set(points)) < 2 * n - 1 or any(k < 1 for k in points)
            or at_zero is None or at_infinity is None):
        return None
    sigma = _pairing_by_residues(prev, cur) if kind is not LinkKind.X else None
    if sigma is None:
        try:
            roots = _denominator_mod_p(points, values, m, at_zero, at_infinity)
            sigma = None if roots is None else _pairing(roots, prev, cur, kind is LinkKind.REFLECT)
        except ZeroDivisionError:  # a denominator divisible by p: let the caller reconstruct
            return None
    if sigma is None:
        return None
    paired = []
    for (rp, cp), (rc, cc) in zip(prev, (cur[j] for j in sigma)):
        if kind is LinkKind.X:
            c = cp + cc
        elif cp == cc:
            c = cp
        else:
            return None
        if c == 0:
            return None
        rho = rp * rp / rc if kind is LinkKind.REFLECT else rp * rc
        if rho <= 0:  # no pole -1/rho at k < 0: not a copy function of attention
            return None
        paired.append((rho, c))
    terms = sorted(paired)
    if any(terms[t][0] == terms[t + 1][0] for t in range(m - 1)):
        return None
    if not _fits(terms, points, values, at_zero, at_infinity):
        return None
    tau = [terms.index(term) for term in paired]
    return PredictedLink(tuple(terms), (sigma, tau))
