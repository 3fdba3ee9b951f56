"""Exact rational functions of one variable: reconstruction, reduction, poles, residues.

This is the "rational functions" room of docs/algorithm.md section 3. Everything is
over ``Q`` with python-flint (``fmpq``, ``fmpq_poly``).

Reconstruction is *Cauchy interpolation* (von zur Gathen & Gerhard, *Modern
Computer Algebra*, section 5.7) as an exact linear system, by one of two methods,
each followed by an exact check of the candidate against every sample (a failed
check proves that no solution exists):

* integer sample points (every call the learner makes): the *value method*
  (:func:`_reconstruct_by_values`), whose unknowns are the scaled denominator
  values ``q(k_i) / D_i``. For an attention copy function they are small, so
  the system is solved modulo a few 61-bit primes and checked exactly
  (:func:`_solve_small`); the part that depends only on the points is cached.
* anything it cannot settle (rational points, a lower true type, a pole at a
  sample): the *kernel method* (:func:`_reconstruct_by_kernel`). A type-``(m, n)``
  function ``p/q`` through ``(k_i, y_i)`` satisfies ``p(k_i) - y_i q(k_i) = 0``, a
  linear system of ``N = m + n + 1`` equations in the ``m + n + 2`` coefficients,
  scaled to integers row by row; FLINT's ``fmpz_mat.nullspace`` gives a kernel
  vector. If a reduced solution ``p/q`` exists, *every* kernel vector is
  ``(p s, q s)`` for a polynomial ``s`` (``P q - p Q`` has degree ``< N`` and ``N``
  roots), so reducing any kernel vector by its gcd gives the unique answer, also
  when the true type is lower than ``(m, n)`` and the kernel has dimension ``> 1``.

:func:`_reconstruct_euclid`, the extended Euclidean algorithm over ``Q``, computes
the same fraction; it is the reference the tests compare with (docs/performance.md
has the costs of the three).

>>> R = reconstruct([0, 1, 2], [fmpq(1), fmpq(1, 2), fmpq(1, 3)], 1, 1)
>>> R
RationalFunction(1, x + 1)
>>> R.poles()
[(-1, 1)]
>>> R.residue(fmpq(-1))
1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from math import comb, isqrt, lcm
from typing import Any

from flint import fmpq, fmpq_mat, fmpq_poly, fmpz, fmpz_mat, fmpz_poly, nmod, nmod_mat, nmod_poly

from .errors import ReconstructionError
from .exact import PRIME_61, brief

__all__ = [
    "RationalFunction",
    "interpolate",
    "reconstruct",
    "reconstruct_nn",
    "poles_among",
    "from_partial_fractions",
    "CopyTerms",
    "copy_terms",
]

_X = fmpq_poly([0, 1])


def _q(value) -> fmpq:
    return value if isinstance(value, fmpq) else fmpq(value)


def interpolate(points: Sequence, values: Sequence) -> fmpq_poly:
    """The polynomial of degree ``< len(points)`` through ``(points[i], values[i])``.

    Newton's divided differences, exact over ``Q``.

    >>> interpolate([0, 1, 2], [1, 2, 5])
    x^2 + 1
    """
    xs = [_q(p) for p in points]
    ys = [_q(v) for v in values]
    if len(xs) != len(ys):
        raise ValueError(f"{len(xs)} points but {len(ys)} values")
    if len(set(xs)) != len(xs):
        raise ValueError("interpolation points must be pairwise distinct")
    n = len(xs)
    coeffs = list(ys)
    for level in range(1, n):
        for i in range(n - 1, level - 1, -1):
            coeffs[i] = (coeffs[i] - coeffs[i - 1]) / (xs[i] - xs[i - level])
    poly = fmpq_poly([coeffs[-1]]) if n else fmpq_poly([])
    for i in range(n - 2, -1, -1):
        poly = poly * fmpq_poly([-xs[i], 1]) + coeffs[i]
    return poly


class RationalFunction:
    """A reduced fraction ``p / q`` of polynomials over ``Q`` in one variable ``k``.

    The denominator is normalised to ``q(0) = 1`` when ``q(0) != 0`` (the form
    ``prod (1 + k rho_h)`` of the attention rational function), else to be monic.
    """

    __slots__ = ("numerator", "denominator")

    def __init__(self, numerator: fmpq_poly, denominator: fmpq_poly):
        if denominator.is_zero():
            raise ZeroDivisionError("the denominator of a rational function cannot be zero")
        if numerator.is_zero():
            numerator, denominator = fmpq_poly([]), fmpq_poly([1])
        else:
            g = numerator.gcd(denominator)
            if g.degree() > 0:
                numerator, denominator = numerator // g, denominator // g
        self._set_normalised(numerator, denominator)

    def _set_normalised(self, numerator: fmpq_poly, denominator: fmpq_poly) -> None:
        """Store a reduced fraction with ``q(0) = 1`` (or ``q`` monic when ``q(0) = 0``)."""
        c0 = denominator(0)
        scale = c0 if c0 != 0 else denominator.leading_coefficient()
        if scale != 1:
            numerator, denominator = numerator / scale, denominator / scale
        self.numerator = numerator
        self.denominator = denominator

    @classmethod
    def _normalised(cls, numerator: fmpq_poly, denominator: fmpq_poly) -> RationalFunction:
        """Wrap an already reduced fraction, normalising the denominator as ``__init__`` does."""
        obj = cls.__new__(cls)
        obj._set_normalised(numerator, denominator)
        return obj

    @property
    def type(self) -> tuple[int, int]:
        """``(deg p, deg q)`` of the reduced fraction (``deg 0 = -1``)."""
        return (self.numerator.degree(), self.denominator.degree())

    def __call__(self, k) -> fmpq:
        k = _q(k)
        den = self.denominator(k)
        if den == 0:
            raise ZeroDivisionError(f"k = {k} is a pole")
        return self.numerator(k) / den

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RationalFunction):
            return NotImplemented
        return self.numerator == other.numerator and self.denominator == other.denominator

    def __hash__(self) -> int:
        return hash((str(self.numerator), str(self.denominator)))

    def __add__(self, other) -> RationalFunction:
        if isinstance(other, RationalFunction):
            return RationalFunction(
                self.numerator * other.denominator + other.numerator * self.denominator,
                self.denominator * other.denominator,
            )
        return RationalFunction(self.numerator + _q(other) * self.denominator, self.denominator)

    def __sub__(self, other) -> RationalFunction:
        if isinstance(other, RationalFunction):
            return self + RationalFunction(-other.numerator, other.denominator)
        return self + (-_q(other))

    def at_infinity(self) -> fmpq:
        """``lim_{k -> oo} p(k)/q(k)``; raises if the limit is infinite."""
        dp, dq = self.type
        if dp > dq:
            raise ReconstructionError(f"the rational function has a pole at infinity (type {self.type})")
        if dp < dq:
            return fmpq(0)
        return self.numerator.leading_coefficient() / self.denominator.leading_coefficient()

    def poles(self) -> list[tuple[fmpq, int]]:
        """Rational poles with multiplicities, in increasing order."""
        return sorted((fmpq(r), m) for r, m in self.denominator.roots())

    def splits(self) -> bool:
        """True iff the denominator is a product of linear factors over ``Q``."""
        return sum(m for _, m in self.denominator.roots()) == self.denominator.degree()

    def residue(self, pole: fmpq) -> fmpq:
        """Residue ``p(k0) / q'(k0)`` at a simple pole ``k0``."""
        pole = _q(pole)
        if self.denominator(pole) != 0:
            raise ValueError(f"{pole} is not a pole")
        dq = self.denominator.derivative()(pole)
        if dq == 0:
            raise ValueError(f"{pole} is not a simple pole")
        return self.numerator(pole) / dq

    def partial_fractions(self, candidates: Sequence | None = None) -> tuple[fmpq, list[tuple[fmpq, fmpq]]]:
        """``(c, [(k_i, r_i)])`` with ``p/q = c + sum r_i / (k - k_i)``.

        Requires ``deg p <= deg q`` and simple rational poles; raises
        :class:`~exactlearn.ReconstructionError` otherwise. ``candidates``
        (optional) are rationals that may be poles: if ``deg q`` distinct ones
        are, checked exactly, no factorisation is needed (:func:`poles_among`).
        """
        constant = self.at_infinity()
        poles = None if candidates is None else poles_among(self.denominator, candidates)
        if poles is None:
            poles = _simple_rational_roots(self.denominator)
        derivative = self.denominator.derivative()
        return constant, [(pole, self.numerator(pole) / derivative(pole)) for pole in poles]

    def __repr__(self) -> str:
        return f"RationalFunction({self.numerator}, {self.denominator})"


_PRIME = PRIME_61  # candidate poles are screened modulo this prime


def _linear_factors(q: fmpq_poly) -> tuple[fmpz, list[tuple[fmpz, fmpz]]]:
    """``(kappa, [(n_h, m_h)])`` with ``numer(q) = kappa prod_h (n_h k + m_h)``, ``n_h > 0``, sorted by
    the roots ``-m_h/n_h``, if the roots are rational, simple and ``deg q`` many; else ReconstructionError.

    One factorisation over ``Z`` (FLINT's ``fmpz_poly.factor``) of the integer
    multiple of ``q``.
    """
    degree = q.degree()
    content, factors = q.numer().factor()
    linear = [(f[1], f[0], mult) for f, mult in factors if f.degree() == 1]  # f = n k + m, n > 0
    if sum(mult for *_, mult in linear) != degree:
        raise ReconstructionError(f"the denominator (degree {degree}) does not split "
                                  "into linear factors over Q")
    linear = _by_root(linear)
    for n, m, mult in linear:
        if mult != 1:
            raise ReconstructionError(f"the pole {brief(fmpq(-m, n))} has multiplicity {mult}")
    return content, [(n, m) for n, m, _ in linear]


def _by_root(linear: list[tuple[fmpz, fmpz, int]]) -> list[tuple[fmpz, fmpz, int]]:
    """The factors ``n k + m`` (``n > 0``, distinct) sorted by their roots ``-m/n``: by the roots'
    nearest floats, then checked exactly on integers (``-m/n < -m'/n'`` iff ``m' n < m n'``); the exact
    sort if the floats got an order wrong (roots closer than a float can tell)."""
    try:
        ordered = sorted(linear, key=lambda f: -int(f[1]) / int(f[0]))
    except OverflowError:  # a root beyond the float range
        ordered = []
    if ordered and all(f[0] > 0 for f in ordered) and all(
            b[1] * a[0] < a[1] * b[0] for a, b in zip(ordered, ordered[1:])):
        return ordered
    return sorted(linear, key=lambda f: fmpq(-f[1], f[0]))


def _simple_rational_roots(q: fmpq_poly) -> list[fmpq]:
    """The roots of ``q``, sorted, if they are rational, simple and ``deg q`` many; else ReconstructionError.

    The linear factors ``n k + m`` of :func:`_linear_factors` are the roots ``-m/n``.
    """
    return [fmpq(-m, n) for n, m in _linear_factors(q)[1]]


def poles_among(q: fmpq_poly, candidates: Sequence) -> list[fmpq] | None:
    """The roots of ``q``, sorted, if ``deg q`` distinct ``candidates`` are roots; else None.

    Each candidate is screened modulo the prime ``2**61 - 1`` (FLINT's
    ``nmod_poly``) and confirmed by exact evaluation; ``deg q`` distinct exact
    roots of a polynomial of degree ``deg q`` are all of its roots, each simple.
    None (not enough candidates are roots) means: factor ``q`` instead.

    >>> q = fmpq_poly([1, 5, 6])  # (1 + 2k)(1 + 3k)
    >>> poles_among(q, [fmpq(-1, 2), fmpq(7), fmpq(-1, 3)])
    [-1/2, -1/3]
    >>> poles_among(q, [fmpq(-1, 2)]) is None
    True
    """
    degree = q.degree()
    if degree < 1:
        return [] if degree == 0 else None
    integer = q.numer()
    reduced = nmod_poly([c % _PRIME for c in integer.coeffs()], _PRIME)
    found: list[fmpq] = []
    for c in candidates:
        c = _q(c)
        den = c.q % _PRIME
        if den == 0:
            continue  # cannot screen this candidate modulo p; factoring decides
        if int(reduced(nmod(c.p % _PRIME, _PRIME) / den)) != 0:
            continue
        if integer(c) == 0 and all(c != f for f in found):  # exact confirmation
            found.append(c)
            if len(found) == degree:
                return sorted(found)
    return None


def from_partial_fractions(constant, terms: Sequence[tuple]) -> RationalFunction:
    """``constant + sum_i r_i / (k - k_i)`` as a reduced :class:`RationalFunction`."""
    num, den = fmpq_poly([_q(constant)]), fmpq_poly([1])
    for pole, res in terms:
        lin = fmpq_poly([-_q(pole), 1])
        num, den = num * lin + _q(res) * den, den * lin
    return RationalFunction(num, den)


def _check_degrees_and_points(points: Sequence, num_degree: int, den_degree: int) -> int:
    if num_degree < 0 or den_degree < 0:
        raise ValueError("degrees must be non-negative")
    n_points = len(points)
    if n_points != num_degree + den_degree + 1:
        raise ValueError(
            f"a type ({num_degree}, {den_degree}) rational function needs exactly "
            f"{num_degree + den_degree + 1} samples, got {n_points}"
        )
    return n_points


def reconstruct(points: Sequence, values: Sequence, num_degree: int, den_degree: int) -> RationalFunction:
    """The unique reduced ``p/q`` with ``deg p <= num_degree``, ``deg q <= den_degree``
    and ``p(k_i)/q(k_i) = values[i]`` for all ``len(points) = num_degree + den_degree + 1``
    samples.

    Integer sample points (the learner's case) take :func:`_reconstruct_by_values`,
    an exact linear system whose solution is small; anything it cannot settle
    (rational points, a lower true type, a pole at a sample, ``min(m, n) = 0``)
    goes to :func:`_reconstruct_by_kernel`, the linearised coefficient system.
    Both check the result exactly against every sample. Correct whenever the true
    type is lower. Raises :class:`~exactlearn.ReconstructionError` if no such
    function exists.
    """
    n_points = _check_degrees_and_points(points, num_degree, den_degree)
    ys = [_q(v) for v in values]
    if len(points) != len(ys):
        raise ValueError(f"{len(points)} points but {len(ys)} values")
    xs: list[fmpq] | None = None
    if all(type(p) is int for p in points):  # the learner's points: Python ints
        integers: list[int] | None = list(points)
        distinct = len(set(points)) == n_points
    else:
        xs = [_q(p) for p in points]
        ordered = sorted(xs)  # fmpq hashing is slow; sorting compares exactly
        distinct = all(ordered[i] != ordered[i + 1] for i in range(len(ordered) - 1))
        integers = [int(x.p) for x in xs] if all(x.q == 1 for x in xs) else None
    if not distinct:
        raise ValueError("interpolation points must be pairwise distinct")
    if min(num_degree, den_degree) >= 1 and integers is not None:
        result = _reconstruct_by_values(integers, ys, num_degree, den_degree)
        if result is not None:
            return result
    return _reconstruct_by_kernel(xs or [fmpq(p) for p in points], ys, num_degree, den_degree, n_points)


def _fail(num_degree: int, den_degree: int, n_points: int, x=None) -> ReconstructionError:
    where = "" if x is None else f" (the candidate fails at k = {brief(x)})"
    return ReconstructionError(
        f"no rational function of type ({num_degree}, {den_degree}) takes these {n_points} values{where}"
    )


def _difference_rows(xs: Sequence[int], degree: int) -> list[list[int]]:
    """Integer rows annihilating the values at ``xs`` of every polynomial of degree ``<= degree``.

    Row ``i`` is the divided difference over the window ``xs[i .. i + degree + 1]``
    scaled to integers (for consecutive points: signed binomial coefficients).
    """
    count = len(xs) - degree - 1
    if count > 0 and all(xs[i + 1] - xs[i] == 1 for i in range(len(xs) - 1)):
        # consecutive integers: the finite difference of order degree + 1
        stencil = [(-1) ** (degree + 1 - j) * comb(degree + 1, j) for j in range(degree + 2)]
        return [[0] * i + stencil + [0] * (count - 1 - i) for i in range(count)]
    rows = []
    for i in range(count):
        window = range(i, i + degree + 2)
        dens = []
        for j in window:
            d = 1
            for l in window:
                if l != j:
                    d *= xs[j] - xs[l]
            dens.append(d)
        scale = lcm(*dens)
        row = [0] * len(xs)
        for j, d in zip(window, dens):
            row[j] = scale // d
        rows.append(row)
    return rows


def _extrapolation_weights(xs: Sequence[int], target: int) -> tuple[list[int], int]:
    """``(w, W)`` with ``f(target) = sum_i w[i] f(xs[i]) / W`` for every ``f`` of degree ``< len(xs)``."""
    nums, dens = [], []
    for i, xi in enumerate(xs):
        num, den = 1, 1
        for l, xl in enumerate(xs):
            if l != i:
                num *= target - xl
                den *= xi - xl
        nums.append(num)
        dens.append(den)
    scale = lcm(*dens)
    return [num * (scale // den) for num, den in zip(nums, dens)], abs(scale)


@dataclass(frozen=True)
class _ValueSystem:
    """What :func:`_reconstruct_by_values` needs of a point set and a type, computed once.

    ``den_rows`` / ``num_rows``: the nonzero stretch ``(start, coefficients)`` of
    each difference row of order ``n + 1`` / ``m + 1`` on ``xs[1:]``;
    ``lam``, ``mu``: extrapolation weights to ``xs[0]`` (scaled, with their
    scales); ``basis``: the inverse Vandermonde matrix of ``xs[1 : top + 1]``
    (``top = max(m, n) + 1``), whose product with values gives coefficients, as an
    integer matrix (``basis`` times its common denominator, which cancels in ``p/q``).
    """

    den_rows: tuple[tuple[int, tuple[int, ...]], ...]
    num_rows: tuple[tuple[int, tuple[int, ...]], ...]
    lam: tuple[int, ...]
    lam_scale: int
    mu: tuple[int, ...]
    mu_scale: int
    basis: fmpz_mat


def _sparse(rows: list[list[int]]) -> tuple[tuple[int, tuple[int, ...]], ...]:
    out = []
    for row in rows:
        nonzero = [k for k, u in enumerate(row) if u]
        start, stop = nonzero[0], nonzero[-1] + 1
        out.append((start, tuple(row[start:stop])))
    return tuple(out)


@lru_cache(maxsize=64)
def _value_system(xs: tuple[int, ...], m: int, n: int) -> _ValueSystem:
    """The point-set part of :func:`_reconstruct_by_values` (cached: the learner reuses a few point sets)."""
    x0, rest = xs[0], xs[1:]
    lam, lam_scale = _extrapolation_weights(rest[: n + 1], x0)  # q(k_0) = sum lam_i q(k_i) / lam_scale
    mu, mu_scale = _extrapolation_weights(rest[: m + 1], x0)  # p(k_0) = sum mu_i p(k_i) / mu_scale
    top = max(m, n) + 1
    vandermonde = fmpq_mat(top, top, [x**i for x in rest[:top] for i in range(top)])
    return _ValueSystem(_sparse(_difference_rows(rest, n)), _sparse(_difference_rows(rest, m)),
                        tuple(lam), lam_scale, tuple(mu), mu_scale, vandermonde.inv().numer_denom()[0])


@lru_cache(maxsize=1)
def _solver_primes(count: int = 16) -> tuple[int, ...]:
    """The ``count`` largest primes below ``2**61``."""
    primes: list[int] = []
    n = 2**61 - 1
    while len(primes) < count:
        if fmpz(n).is_prime():
            primes.append(n)
        n -= 2
    return tuple(primes)


def _rational_from_residue(a: int, modulus: int, bound: int) -> tuple[int, int] | None:
    """``(n, d)`` with ``n = a d`` mod ``modulus``, ``|n| <= bound``, ``0 < d <= bound``, or None."""
    r0, r1, t0, t1 = modulus, a, 0, 1
    while r1 > bound:
        quotient = r0 // r1
        r0, r1 = r1, r0 - quotient * r1
        t0, t1 = t1, t0 - quotient * t1
    if t1 == 0 or abs(t1) > bound:
        return None
    return (r1, t1) if t1 > 0 else (-r1, -t1)


def _solve_small(size: int, entries: list, rhs: list) -> list[fmpq] | None:
    """The solution of the integer system ``A x = b`` (``A`` row-major), or None if ``A`` is singular.

    The learner's solutions are small rationals over large entries, so they are
    found modulo a few 61-bit primes (``nmod_mat``, Chinese remaindering),
    rebuilt with a common denominator by rational reconstruction, and accepted
    only if ``A x = b`` holds exactly; a nonsingular ``A`` mod p is nonsingular,
    so that ``x`` is the unique solution. Adding primes stops as soon as the
    check passes (output sensitive); after 16 primes, or if ``A`` is singular
    modulo the first prime, FLINT's Dixon solver decides.
    """
    found = _solve_small_integers(size, entries, rhs)
    if found is None:
        return None
    numerators, denominator = found
    return [fmpq(n, denominator) for n in numerators]


def _solve_small_integers(size: int, entries: list, rhs: list) -> tuple[list, fmpz] | None:
    """:func:`_solve_small` as integer numerators over one positive common denominator."""
    exact_matrix = fmpz_mat(size, size, entries)
    exact_rhs = fmpz_mat(size, 1, rhs)
    modulus, residues = 1, [0] * size
    for p in _solver_primes():
        try:
            x = nmod_mat(exact_matrix, p).solve(nmod_mat(exact_rhs, p))
        except ZeroDivisionError:
            if modulus == 1:
                break
            continue
        xs = [int(v) for v in x.entries()]
        if modulus == 1:
            residues = xs
        else:  # Chinese remaindering: r + modulus * ((x - r) / modulus mod p)
            inverse = pow(modulus % p, -1, p)
            residues = [r + modulus * (((xi - r) * inverse) % p) for r, xi in zip(residues, xs)]
        modulus *= p
        candidate = _common_denominator_reconstruction(residues, modulus)
        if candidate is None:
            continue
        numerators, denominator = candidate
        if exact_matrix * fmpz_mat(size, 1, numerators) == denominator * exact_rhs:
            return [fmpz(n) for n in numerators], fmpz(denominator)
    try:
        # the stubs of python-flint do not list solve(algorithm=...)
        solution = fmpq_mat(size, size, entries).solve(  # type: ignore[call-arg]
            fmpq_mat(size, 1, rhs), algorithm="dixon")
    except ZeroDivisionError:
        return None
    numerators_matrix, common = solution.numer_denom()
    return [numerators_matrix[k, 0] for k in range(size)], common


def _common_denominator_reconstruction(residues: list[int], modulus: int) -> tuple[list[int], int] | None:
    """Integers ``n_i`` and one ``d > 0`` with ``n_i = residues[i] d`` mod ``modulus``, all small; or None."""
    bound = isqrt(modulus // 2)
    half = modulus // 2
    denominator = 1
    numerators: list[int] = []
    for r in residues:
        n = (r * denominator) % modulus
        if n > half:
            n -= modulus
        if abs(n) > bound:
            found = _rational_from_residue(n % modulus, modulus, bound)
            if found is None:
                return None
            num, den = found
            denominator *= den
            if denominator > bound:
                return None
            numerators = [v * den for v in numerators]
            n = num
        numerators.append(n)
    return numerators, denominator


def _reconstruct_by_values(xs: list[int], ys: list[fmpq], m: int, n: int) -> RationalFunction | None:
    """Cauchy interpolation with the *scaled denominator values* as unknowns.

    Write ``y_i = N_i / D_i`` and take as unknowns ``u_i = q(k_i) / D_i`` at the
    points ``k_1 .. k_{N-1}``. For an attention copy function ``D_i`` is, up to a
    small factor, ``q(k_i)`` itself, so the ``u_i`` are small rationals and
    :func:`_solve_small` needs only a few primes; the linearised coefficient
    system instead has a kernel vector as large as a ``N x N`` minor. The
    equations, all with integer entries:

    * ``D_i u_i`` are values of a polynomial of degree ``<= n`` (divided differences vanish);
    * ``N_i u_i = y_i q(k_i)`` are values of a polynomial of degree ``<= m`` (same);
    * the sample ``k_0``: ``p(k_0) = y_0 q(k_0)`` with both sides extrapolated from ``k_1..``.

    These are ``N - 2`` equations in ``N - 1`` unknowns, and ``(p, q) -> u`` is a
    linear bijection between the solutions of the linearised system and of this
    one (needs ``min(m, n) >= 1`` so that ``k_1..`` determine ``p`` and ``q``).
    With ``u_{N-1} = 1`` the system is square; if it is singular (a lower true
    type, or ``q(k_{N-1}) = 0``) return None and let the general method decide.
    Otherwise the kernel is one-dimensional, so ``(p, q)`` is determined up to a
    constant and is reduced whenever a solution exists; the candidate is checked
    against every sample (at ``k_1..`` the exact solve already gives ``p(k_i) = Y_i u_i``
    and ``q(k_i) = D_i u_i``, so there the check is ``u_i != 0``), and a failure proves
    that no solution exists. The parts
    that depend only on the points and the type (difference rows, extrapolation
    weights, the inverse Vandermonde matrix that turns values into coefficients)
    are computed once per point set (:func:`_value_system`).
    """
    N = len(xs)
    system = _value_system(tuple(xs), m, n)
    y0 = ys[0]
    D = [y.q for y in ys[1:]]
    Y = [y.p for y in ys[1:]]
    size = N - 2
    width = N - 1
    entries: list = []
    for factors, sparse in ((D, system.den_rows), (Y, system.num_rows)):
        for start, stencil in sparse:
            row: list = [0] * width
            for k, c in enumerate(stencil, start):
                row[k] = c * factors[k]
            entries.append(row)
    y0p, y0q = y0.p, y0.q
    last: list = [0] * width
    a, b = system.lam_scale * y0q, system.mu_scale * y0p
    for k, w in enumerate(system.mu):
        last[k] += w * a * Y[k]
    for k, w in enumerate(system.lam):
        last[k] -= w * b * D[k]
    entries.append(last)
    flat: list = []
    for r in entries:
        flat += r[:size]  # (slices: no Python loop per entry)
    solution = _solve_small_integers(size, flat, [-r[size] for r in entries])
    if solution is None:
        return None
    numerators, common = solution
    u = numerators + [common]  # u_i times the common denominator, which cancels in p/q
    # p and q through their values at the same top + 1 points (deg p <= m, deg q <= n)
    top = max(m, n) + 1
    values = fmpz_mat(top, 2, [z for k in range(top) for z in (Y[k] * u[k], D[k] * u[k])])
    coefficients = system.basis * values
    p = fmpq_poly([coefficients[i, 0] for i in range(top)])
    q = fmpq_poly([coefficients[i, 1] for i in range(top)])
    if q.is_zero():  # pragma: no cover - u != 0 and D_i != 0 give q != 0
        return None
    # Every sample, exactly. A x = b holds exactly, so Y_i u_i and D_i u_i lie on p and q at
    # every k_i of k_1.. (their divided differences vanish): p/q = y_i there iff u_i != 0.
    # At k_0 the extrapolation row gives p(k_0) = y_0 q(k_0); it is checked on integers.
    pz, pd = p.numer(), p.denom()
    qz, qd = q.numer(), q.denom()
    qx = qz(xs[0])
    if qx == 0 or pz(xs[0]) * qd * y0q != y0p * qx * pd:
        raise _fail(m, n, N, xs[0])
    for x, ui in zip(xs[1:], u):
        if ui == 0:
            raise _fail(m, n, N, x)
    if p.is_zero():
        return RationalFunction._normalised(fmpq_poly([]), fmpq_poly([1]))
    return RationalFunction._normalised(p, q)


def _reconstruct_by_kernel(xs: list[fmpq], ys: list[fmpq], m: int, n: int, n_points: int) -> RationalFunction:
    """The general method: one integer kernel vector of the linearised system.

    ``p(k_i) - y_i q(k_i) = 0`` for every sample, rows scaled to integers, FLINT's
    ``fmpz_mat.nullspace``, reduction by an ``fmpz_poly`` gcd, exact check against
    every sample (module docstring).
    """
    top = max(m, n)
    rows = []
    for x, y in zip(xs, ys):
        # x = a/b: multiply the row by b^top * den(y) to make it integral
        a, b = x.p, x.q
        powers = [fmpz(1)] * (top + 1)
        for i in range(1, top + 1):
            powers[i] = powers[i - 1] * a
        if b != 1:
            cof = [fmpz(1)] * (top + 1)
            for i in range(1, top + 1):
                cof[i] = cof[i - 1] * b
            powers = [powers[i] * cof[top - i] for i in range(top + 1)]
        yp, yq = y.p, y.q
        rows.append([yq * powers[i] for i in range(m + 1)] + [-yp * powers[i] for i in range(n + 1)])
    kernel, nullity = fmpz_mat(rows).nullspace()
    if nullity == 0:  # pragma: no cover - N equations in N + 1 unknowns always have a kernel
        raise ReconstructionError("the linearised interpolation system has no kernel")
    p = fmpz_poly([kernel[i, 0] for i in range(m + 1)])
    q = fmpz_poly([kernel[m + 1 + i, 0] for i in range(n + 1)])
    if q.is_zero():  # pragma: no cover - then p has N > m roots, so p = 0 too: not a kernel vector
        raise _fail(m, n, n_points)
    if not p.is_zero():
        g = p.gcd(q)
        if not g.is_one():
            p, q = p // g, q // g
    else:
        q = fmpz_poly([1])
    for x, y in zip(xs, ys):
        if x.q == 1:
            qx = q(x.p)
            ok = qx != 0 and p(x.p) * y.q == y.p * qx
        else:
            qq = fmpq_poly(q)(x)
            ok = qq != 0 and fmpq_poly(p)(x) == y * qq
        if not ok:
            raise _fail(m, n, n_points, x)
    return RationalFunction._normalised(fmpq_poly(p), fmpq_poly(q))


def _reconstruct_euclid(points: Sequence, values: Sequence, num_degree: int,
                        den_degree: int) -> RationalFunction:
    """Reference implementation of :func:`reconstruct` by the extended Euclidean algorithm.

    Interpolate by ``L`` (degree ``< N``), run the Euclidean algorithm on
    ``(prod (k - k_i), L)`` over ``Q`` and stop at the first remainder ``r`` of
    degree ``<= num_degree``; with its cofactor ``t``, ``r / t`` is the answer if
    one exists. The reference the tests compare :func:`reconstruct` with (its remainder
    sequence over ``Q`` carries rationals far larger than the answer).
    """
    n_points = _check_degrees_and_points(points, num_degree, den_degree)
    xs = [_q(p) for p in points]
    ys = [_q(v) for v in values]
    interp = interpolate(xs, ys)
    modulus = fmpq_poly([1])
    for x in xs:
        modulus *= fmpq_poly([-x, 1])
    r0, r1 = modulus, interp
    t0, t1 = fmpq_poly([]), fmpq_poly([1])
    while r1.degree() > num_degree:
        quotient, remainder = divmod(r0, r1)
        r0, r1 = r1, remainder
        t0, t1 = t1, t0 - quotient * t1
    if t1.degree() > den_degree or t1.is_zero():
        raise ReconstructionError(
            f"no rational function of type ({num_degree}, {den_degree}) takes these {n_points} values"
        )
    result = RationalFunction(r1, t1)
    for x, y in zip(xs, ys):
        if result.denominator(x) == 0 or result(x) != y:
            raise ReconstructionError(
                f"no rational function of type ({num_degree}, {den_degree}) takes these {n_points} values "
                f"(the candidate fails at k = {brief(x)})"
            )
    return result


def with_known_zero(points: Sequence, values: Sequence, at_zero: Any) -> tuple[list, list]:
    """The samples with a known ``R(0)`` put first as the sample at ``k = 0`` (if given).

    >>> with_known_zero([1, 2], ["a", "b"], "z"), with_known_zero([0, 1], ["a", "b"], None)
    (([0, 1, 2], ['z', 'a', 'b']), ([0, 1], ['a', 'b']))
    """
    if at_zero is None:
        return list(points), list(values)
    if any(p == 0 for p in points):
        raise ValueError("k = 0 is both sampled and given as known")
    return [0, *points], [at_zero, *values]


def known_value_at_zero(points: Sequence, values: Sequence, at_zero: Any) -> Any:
    """``R(0)``: the known value, else the sample at ``k = 0``, else ``None``.

    >>> known_value_at_zero([0, 1], ["a", "b"], None), known_value_at_zero([1], ["b"], "z")
    ('a', 'z')
    """
    if at_zero is not None:
        return at_zero
    points = list(points)
    return values[points.index(0)] if 0 in points else None


def reconstruct_nn(
    points: Sequence,
    values: Sequence,
    n: int,
    *,
    at_zero=None,
    at_infinity=None,
) -> RationalFunction:
    """Reconstruct a type-``(n, n)`` function from samples plus optional known values.

    Without known values it needs ``2n + 1`` samples. A known ``at_infinity``
    value ``c`` replaces one sample: ``R - c`` has type ``(n - 1, n)``. A known
    ``at_zero`` value is the sample at ``k = 0``. So the matching configurations
    of docs/algorithm.md section 4 use ``2n - 1`` samples and both known values.
    """
    points, values = with_known_zero(points, values, at_zero)
    ys = [_q(v) for v in values]
    if at_infinity is None:
        return reconstruct(points, ys, n, n)
    if n < 1:
        raise ValueError("n must be at least 1 when the value at infinity is given")
    c = _q(at_infinity)
    shifted = reconstruct(points, [y - c for y in ys], n - 1, n)
    if shifted.numerator.degree() >= shifted.denominator.degree() and not shifted.numerator.is_zero():
        raise ReconstructionError(
            f"no rational function of type ({n}, {n}) takes these values and the value {brief(c)} at infinity"
        )
    # gcd(p + c q, q) = gcd(p, q) = 1: adding the constant keeps the fraction reduced
    return RationalFunction._normalised(shifted.numerator + c * shifted.denominator, shifted.denominator)


@dataclass(frozen=True)
class CopyTerms:
    """``R(k) = at_infinity + sum_h c_h / (1 + k rho_h)``: the attention reading of ``R``.

    ``terms`` lists ``(rho_h, c_h)`` sorted by ``rho``; each pole ``-1/rho_h`` is
    simple and negative, each ``c_h`` nonzero.
    """

    at_zero: Any  # field elements: fmpq here, balls or Q(E, V) elements on the other paths
    at_infinity: Any
    terms: tuple[tuple[Any, Any], ...]


def copy_terms(rf: RationalFunction, candidates: Sequence | None = None) -> CopyTerms:
    """Read ``(rho_h, c_h)`` off ``R`` (docs/algorithm.md section 3).

    A pole ``k0`` gives ``rho = -1/k0`` and ``c = rho * Res_{k0} R``. Raises
    :class:`~exactlearn.ReconstructionError` if ``R`` is not of this form
    (a non-rational, multiple or non-negative pole, or a pole at infinity):
    no multi-head attention has such a copy function. ``candidates``: possible
    poles, passed to :meth:`RationalFunction.partial_fractions`.
    """
    if candidates is None:
        constant = rf.at_infinity()
        from_factors = _terms_from_factors(rf, *_linear_factors(rf.denominator))
        return CopyTerms(rf(0), constant, from_factors)
    constant, terms = rf.partial_fractions(candidates)
    out = []
    for pole, res in terms:
        _check_negative(pole)
        rho = -1 / pole
        out.append((rho, rho * res))
    # the poles come sorted and negative, and rho = -1/k0 increases with k0 < 0: sorted by rho
    return CopyTerms(rf(0), constant, tuple(out))


def _check_negative(pole: fmpq) -> None:
    if pole >= 0:
        raise ReconstructionError(
            f"the pole k = {brief(pole)} is not negative, so it is not -1/rho for a positive rho"
        )


def _terms_from_factors(rf: RationalFunction, kappa: fmpz,
                        factors: list[tuple[fmpz, fmpz]]) -> tuple[tuple[fmpq, fmpq], ...]:
    """``(rho_h, c_h)`` from the linear factors ``n_h k + m_h`` of the denominator, on integers.

    ``rho_h = n_h/m_h`` and ``c_h = rho_h Res R`` at ``-m_h/n_h``; with ``p = P/p_d``,
    ``q = Q/q_d`` and ``Q = kappa prod_g (n_g k + m_g)`` that is
    ``c_h = P_hom(-m_h, n_h) q_d / (m_h n_h p_d kappa prod_{g != h} (m_g n_h - n_g m_h))``
    with ``P_hom(a, b) = sum_i P_i a^i b^(H - i)``: one reduction per term instead
    of rational evaluations of ``p`` and ``q'`` (docs/performance.md).
    """
    H = len(factors)
    P = rf.numerator.numer().coeffs()
    q_d, p_d = rf.denominator.denom(), rf.numerator.denom()
    out = []
    for h, (n, m) in enumerate(factors):
        if m <= 0:  # n > 0: the root -m/n is not negative
            _check_negative(fmpq(-m, n))
        value = fmpz(0)
        if P:  # P_hom(-m, n) by Horner, then n^(H - deg P)
            value, power = P[-1], fmpz(1)
            for coefficient in P[-2::-1]:
                power *= n
                value = value * -m + coefficient * power
            value *= n ** (H - len(P) + 1)
        cross = fmpz(1)
        for g, (n_g, m_g) in enumerate(factors):
            if g != h:
                cross *= m_g * n - n_g * m
        out.append((fmpq(n, m), fmpq(value * q_d, m * n * p_d * kappa * cross)))
    return tuple(out)
