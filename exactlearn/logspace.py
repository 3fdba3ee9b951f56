"""Exact logarithms of positive rationals: coprime bases and exponent vectors.

docs/algorithm.md section 2. Each pole gives ``log rho``, a linear measurement of
``W_h``; the ``rho`` are positive rationals, their logs are transcendental. To do
exact linear algebra on them, write every observed ``rho`` over a **coprime
base** ``b_1, ..., b_m`` (pairwise coprime integers ``> 1``, none a perfect
power) of all observed numerators and denominators:

    rho = prod_l b_l ** e_l,   e in Z^m     so    log rho = sum_l e_l log b_l .

The logs of pairwise coprime integers ``> 1`` are linearly independent over
``Q`` (unique factorisation), so linear algebra over ``Q`` on exponent vectors
is exact linear algebra on the logs. The base is found by factor refinement
(gcds only, no integer factorisation). Because no ``b_l`` is a perfect power,
``prod b_l ** q_l`` (``q`` rational) is rational iff every ``q_l`` is an integer.

>>> base = coprime_base([12, 18])
>>> base
(2, 3)
>>> exponent_vector(fmpq(4, 27), base)
(2, -3)
>>> LogNumber(base, (fmpq(1, 2), fmpq(0))).is_rational
False

The same log form serves indeterminates: over ``Q(E, V)`` the base is the
names of the ``E`` indeterminates, whose logs are independent too.

>>> print(LogNumber(("E_0", "E_1"), (fmpq(1), fmpq(-1, 2))))
log(E_0) - 1/2*log(E_1)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import gcd
from operator import sub
from typing import Any

from flint import fmpq, fmpq_mat, fmpz, fmpz_mat

from .errors import NotRationalError
from .exact import rational_str

__all__ = [
    "coprime_base",
    "exponent_vector",
    "coprime_exponents",
    "remove_factor",
    "LogNumber",
    "LogMatrix",
    "log_matrix_of",
    "solve_log_system",
    "solve_log_coordinates",
    "rational_log_coordinates",
    "power_product",
    "Base",
]

#: A log base: pairwise coprime integers > 1 (none a perfect power), or indeterminate names.
Base = tuple[fmpz | str, ...]


def _fmpz(n) -> fmpz:
    return n if isinstance(n, fmpz) else fmpz(n)


def remove_factor(n: fmpz, b: fmpz) -> tuple[fmpz, int]:
    """``(n / b**e, e)`` with ``e`` the multiplicity of ``b`` in ``n`` (``b > 1``).

    Uses repeated squaring, so large multiplicities cost ``O(log e)`` divisions.
    """
    e = 0
    stack: list[fmpz] = []
    power = b
    while True:
        quotient, remainder = divmod(n, power)
        if remainder != 0:
            break
        n = quotient
        e += 1 << len(stack)
        stack.append(power)
        power = power * power
    while stack:
        power = stack.pop()
        quotient, remainder = divmod(n, power)
        if remainder == 0:
            n = quotient
            e += 1 << len(stack)
    return n, e


def _root_of_perfect_power(b: fmpz) -> fmpz:
    """The smallest ``r`` with ``b = r**k`` for some ``k >= 1`` (``b >= 2``).

    FLINT's partial factorisation gives the exponent's candidates (the gcd of
    the exponents found); only if it reveals none are prime ``k`` tried in turn.
    """
    while b.is_perfect_power():
        g = 0
        for _, e in b.factor_smooth(32):
            g = gcd(g, int(e))
        if g > 1:
            r = b.root(g)
            if r**g == b:
                b = r
                continue
        for k in range(2, b.bit_length() + 1):
            if not fmpz(k).is_prime():
                continue
            r = b.root(k)
            if r**k == b:
                b = r
                break
        else:  # pragma: no cover - is_perfect_power promised a root
            break
    return b


def coprime_base(numbers: Iterable) -> tuple[fmpz, ...]:
    """A coprime base of the given nonzero integers, free of perfect powers, sorted.

    Every input ``n`` factors as ``+-prod b_l ** e_l`` with integer ``e_l >= 0``.
    Factor refinement (gcds only): a new number ``a`` is compared with the base
    through one gcd with the product of the base (``gcd(a, b) = gcd(gcd(a, P), b)``
    for every ``b | P``), so a number coprime to the base costs one gcd; a base
    element that divides ``a`` is divided out completely at once; when ``a``
    shares a proper factor ``g`` with ``b``, both are replaced by the pieces
    ``g, a/g, b/g``, which are refined in turn (the product of the pending
    numbers strictly decreases, so this terminates). The learner's inputs are
    power products of a few numbers, so the work is about linear in their size
    (docs/performance.md).

    >>> coprime_base([12, 18, 35])
    (2, 3, 35)
    >>> coprime_base([2**40 * 3**7, 6**5, 4])
    (2, 3)
    """
    base: list[fmpz] = []
    product = fmpz(1)  # the product of the base elements
    for n in numbers:
        n = abs(_fmpz(n))
        if n == 0:
            raise ValueError("zero has no logarithm")
        work = [n]
        while work:
            a = work.pop()
            if a == 1:
                continue
            common = a.gcd(product)
            if common == 1:
                base.append(a)
                product *= a
                continue
            i = 0
            while i < len(base):
                b = base[i]
                g = common.gcd(b)  # = gcd(a, b): b divides the product
                if g == 1:
                    i += 1
                    continue
                if g == b:
                    # b | a: divide it out completely (a stays coprime to the other elements)
                    a, _ = remove_factor(a, b)
                    if a == 1:
                        break
                    g = a.gcd(b)  # b = 4, a = 8 leaves a = 2: still a proper common factor
                    if g == 1:
                        i += 1
                        continue
                base[i] = base[-1]
                base.pop()
                product //= b
                work.extend((g, a // g, b // g))
                break
            else:
                base.append(a)
                product *= a
    return tuple(sorted({_root_of_perfect_power(b) for b in base}))


def exponent_vector(q, base: Sequence[fmpz]) -> tuple[int, ...]:
    """Integer exponents ``e`` with ``q = prod base[l] ** e[l]`` for a positive rational ``q``.

    Raises ``ValueError`` if ``q`` is not positive or does not factor over ``base``.
    """
    q = q if isinstance(q, fmpq) else fmpq(q)
    if q <= 0:
        raise ValueError(f"{q} is not positive, so it has no real logarithm")
    num, den = q.p, q.q
    out = []
    for b in base:
        num, e_num = remove_factor(num, b)
        den, e_den = remove_factor(den, b)
        out.append(e_num - e_den)
    if num != 1 or den != 1:
        raise ValueError(f"{rational_str(q)} does not factor over the coprime base")
    return tuple(out)


def coprime_exponents(rationals: Sequence) -> tuple[tuple[fmpz, ...], list[tuple[int, ...]]]:
    """``(base, vectors)``: the coprime base of the numerators and denominators of
    ``rationals`` and every exponent vector over it.

    The same as ``coprime_base`` of the numerators and denominators followed
    by :func:`exponent_vector` for each number, computed from factorisations:
    FLINT's ``fmpz.factor_smooth`` splits every numerator and denominator into
    pieces (primes, or cofactors it did not split), the few distinct pieces get
    a coprime base by refinement, and base elements whose exponent columns are
    proportional over all the inputs are merged back into one element (the base
    of the inputs themselves is the coarsest one, docs/performance.md).

    >>> coprime_exponents([fmpq(4, 27), fmpq(12)])
    ((2, 3), [(2, -3), (2, 1)])
    >>> coprime_exponents([fmpq(36)])
    ((6,), [(2,)])
    """
    qs = [q if isinstance(q, fmpq) else fmpq(q) for q in rationals]
    for q in qs:
        if q.p <= 0:  # (the denominator is positive; comparing numerators is cheaper)
            raise ValueError(f"{q} is not positive, so it has no real logarithm")
    numbers = [x for q in qs for x in (q.p, q.q)]  # every input as a nonnegative integer, in order
    # trial division up to the largest small prime (< 2**16) of the largest number; trial division
    # by the 6542 primes below 2**16 finds them (and runs no expensive algorithm)
    first = max(numbers, default=fmpz(1))
    bits = max([5] + [piece.bit_length() for piece, _ in first.factor(trial_limit=6542) if piece < 1 << 16])
    # pieces as Python ints: hashing fmpz is slow
    factored = [[(int(piece), e) for piece, e in n.factor_smooth(bits)] if n != 1 else [] for n in numbers]
    pieces = sorted({piece for f in factored for piece, _ in f})
    fine = coprime_base(pieces)
    if len(fine) == len(pieces) and all(b == piece for b, piece in zip(fine, pieces)):
        piece_terms = {piece: [(idx, 1)] for idx, piece in enumerate(pieces)}  # distinct primes, typically
    else:
        piece_terms = {piece: [(idx, k) for idx, k in enumerate(exponent_vector(fmpq(piece), fine)) if k]
                       for piece in pieces}
    # columns[idx][i]: exponent of fine[idx] in numbers[i]
    columns = [[0] * len(numbers) for _ in fine]
    for i, f in enumerate(factored):
        for piece, e in f:
            for idx, k in piece_terms[piece]:
                columns[idx][i] += k * e
    # merge fine elements with proportional columns: one coarse element per direction
    groups: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for idx, column in enumerate(columns):
        g = gcd(*column)
        direction = tuple(column) if g == 1 else tuple(c // g for c in column)
        groups.setdefault(direction, []).append((idx, g))
    coarse = []
    for direction, members in groups.items():
        g = gcd(*(k for _, k in members))
        element = fmpz(1)
        for idx, k in members:
            element *= fine[idx] ** (k // g)
        coarse.append((element, [g * t for t in direction]))
    coarse.sort(key=lambda item: item[0])
    base = tuple(element for element, _ in coarse)
    per_number = list(zip(*(column for _, column in coarse))) or [()] * len(numbers)
    vectors = [tuple(map(sub, per_number[2 * j], per_number[2 * j + 1])) for j in range(len(qs))]
    return base, vectors


def power_product(base: Sequence[Any], exponents: Sequence[Any]) -> fmpq:
    """``prod base[l] ** exponents[l]`` as an exact rational (integer base; integer exponents, or
    ``fmpq`` exponents with denominator 1)."""
    num = den = fmpz(1)
    for b, e in zip(base, exponents):
        if e:  # most exponents are zero: skipped before anything is built
            e = e.p if isinstance(e, fmpq) else e
            if e > 0:
                num *= b ** e
            else:
                den *= b ** -e
    return fmpq(num, den)


@dataclass(frozen=True)
class LogNumber:
    """The exact real number ``sum_l coefficients[l] * log(base[l])`` (integer or indeterminate base)."""

    base: Base
    coefficients: tuple[fmpq, ...]

    @property
    def is_rational(self) -> bool:
        """True iff ``exp`` of this number is rational (integer base, all coefficients integers)."""
        pairs = zip(self.base, self.coefficients)
        return all(c.q == 1 and not isinstance(b, str) for b, c in pairs if c != 0)

    def exp(self) -> fmpq:
        """``prod base[l] ** coefficients[l]`` as an exact rational, or NotRationalError."""
        if not self.is_rational:
            raise NotRationalError(f"exp({self}) is not a rational number")
        return power_product(self.base, self.coefficients)

    def __str__(self) -> str:
        parts = []
        for b, c in zip(self.base, self.coefficients):
            if c == 0:
                continue
            sign = "-" if c < 0 else "+"
            mag = -c if c < 0 else c
            coef = "" if mag == 1 else f"{rational_str(mag)}*"
            parts.append(f"{sign} {coef}log({b})")
        if not parts:
            return "0"
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else "-" + text[2:]

    def to_sympy(self):
        """The same number as a sympy expression (``sum q_l * log(b_l)``)."""
        import sympy

        return sympy.Add(*[sympy.Rational(int(c.p), int(c.q))
                           * sympy.log(sympy.Symbol(b, positive=True) if isinstance(b, str) else int(b))
                           for b, c in zip(self.base, self.coefficients) if c != 0])

    def to_mpmath(self, dps: int = 30):
        """A high-precision float approximation (mpmath ``mpf``), for display only."""
        import mpmath

        with mpmath.workdps(dps):
            return mpmath.fsum(mpmath.mpf(int(c.p)) / int(c.q) * mpmath.log(int(b))
                               for b, c in zip(self.base, self.coefficients))


@dataclass(frozen=True)
class LogMatrix:
    """An exact real ``d x d`` matrix ``W`` with ``W[a][b] = sum_l C[a][b][l] log base[l]``.

    This is the exact form of a recovered weight matrix: always available, even
    when ``exp(W)`` is not rational. :meth:`exp` returns the rational matrix
    ``exp(W)`` (entrywise) or raises :class:`~exactlearn.NotRationalError`. The
    base is integers (numbers) or indeterminate names (the generic certificate).
    """

    base: Base
    coefficients: tuple[tuple[tuple[fmpq, ...], ...], ...]

    @property
    def d(self) -> int:
        return len(self.coefficients)

    def _bilinear(self, left: Sequence[int], right: Sequence[int]) -> fmpq_mat:
        """Log coordinates of ``left^T W right`` (integer vectors) as a ``1 x len(base)`` matrix.

        One ``fmpq_mat`` product with the ``d^2 x len(base)`` coefficient matrix,
        which is built once per LogMatrix and kept (not pickled).
        """
        matrix = self.__dict__.get("_coefficient_matrix")
        d, m = self.d, len(self.base)
        if matrix is None:
            matrix = fmpq_mat(d * d, m, [c for row in self.coefficients for cell in row for c in cell])
            object.__setattr__(self, "_coefficient_matrix", matrix)
        row = fmpq_mat(1, d * d, [la * rb for la in left for rb in right])
        return row * matrix

    def exponents(self, left: Sequence[int], right: Sequence[int]) -> list[fmpq]:
        """The log coordinates of ``left^T W right`` over the base (empty base: ``[]``)."""
        if not self.base:
            return []
        row = self._bilinear(left, right)
        return [row[0, l] for l in range(len(self.base))]

    def is_log_of(self, names: Sequence[Sequence[str]]) -> bool:
        """True iff ``W[a][b] = log(names[a][b])`` exactly for every entry (indeterminate base)."""
        return all(c == (1 if name == names[a][b] else 0)
                   for a in range(self.d) for b in range(self.d)
                   for name, c in zip(self.base, self.coefficients[a][b]))

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_coefficient_matrix", None)  # fmpq_mat does not pickle; rebuilt on demand
        return state

    def entry(self, a: int, b: int) -> LogNumber:
        return LogNumber(self.base, self.coefficients[a][b])

    def entries(self) -> list[list[LogNumber]]:
        return [[self.entry(a, b) for b in range(self.d)] for a in range(self.d)]

    @property
    def is_rational(self) -> bool:
        """True iff every entry's ``exp`` is rational (computed once per LogMatrix)."""
        known = self.__dict__.get("_is_rational")
        if known is None:
            # LogNumber.is_rational of every entry, without building them: integer coefficients
            # everywhere (a zero has q = 1), and none but zeros on an indeterminate base element
            named = [index for index, b in enumerate(self.base) if isinstance(b, str)]
            cells = [cell for row in self.coefficients for cell in row]
            known = (all(c.q == 1 for cell in cells for c in cell)
                     and all(cell[index] == 0 for cell in cells for index in named))
            object.__setattr__(self, "_is_rational", known)
        return known

    def exp(self) -> tuple[tuple[fmpq, ...], ...]:
        """``exp(W)`` entrywise as rationals; NotRationalError names the first bad entry."""
        if self.is_rational:
            return tuple(tuple(power_product(self.base, cell) for cell in row)
                         for row in self.coefficients)
        out = []
        for a in range(self.d):
            row = []
            for b in range(self.d):
                entry = self.entry(a, b)
                if not entry.is_rational:
                    raise NotRationalError(
                        f"exp(W)[{a}][{b}] = exp({entry}) is not rational: this W has no "
                        f"exp-parametrised rational form (use log_W for the exact value)"
                    )
                row.append(entry.exp())
            out.append(tuple(row))
        return tuple(out)

    def __str__(self) -> str:
        return "[" + ",\n ".join("[" + ", ".join(str(e) for e in row) + "]" for row in self.entries()) + "]"

    def to_dict(self) -> dict:
        return {
            "base": [str(b) for b in self.base],
            "coefficients": [[[rational_str(c) for c in cell] for cell in row] for row in self.coefficients],
        }

    def to_sympy(self):
        import sympy

        return sympy.Matrix([[e.to_sympy() for e in row] for row in self.entries()])

    def to_mpmath(self, dps: int = 30):
        return [[e.to_mpmath(dps) for e in row] for row in self.entries()]


def log_matrix_of(exp_W: Sequence[Sequence[fmpq]]) -> LogMatrix:
    """The exact log form of a rational matrix ``exp_W`` (entries positive)."""
    entries = [e for row in exp_W for e in row]
    base = coprime_base([x for e in entries for x in (e.p, e.q)])
    d = len(exp_W)
    coeffs = tuple(
        tuple(tuple(fmpq(x) for x in exponent_vector(exp_W[a][b], base)) for b in range(d)) for a in range(d)
    )
    return LogMatrix(base, coeffs)


def solve_log_coordinates(design: fmpq_mat,
                          heads: Sequence[tuple[Base, Sequence[Sequence[int]]]]) -> list[LogMatrix]:
    """Solve ``design @ vec(W_h) = log rho_h`` given each head's base and exponent vectors.

    ``heads[h] = (base, vectors)`` with ``vectors[j]`` the exponents of ``rho_{h,j}``
    over ``base``. All heads' exponent columns are solved with a single call
    (one factorisation of the design matrix for every head and log coordinate).
    """
    n = design.nrows()
    d = int(round(n**0.5))
    if d * d != n or design.ncols() != n:
        raise ValueError("the design matrix must be square of size d^2")
    columns: list[list[int]] = []  # one list per (head, base element)
    for base, vectors in heads:
        if len(vectors) != n:
            raise ValueError(f"expected {n} measurements per head, got {len(vectors)}")
        columns.extend([[v[l] for v in vectors] for l in range(len(base))])
    if not columns:
        return [LogMatrix((), tuple(tuple(() for _ in range(d)) for _ in range(d))) for _ in heads]
    # an integer system: FLINT's fmpz_mat solve (Dixon p-adic lifting) returns the rational solution
    numerators, denominator = design.numer_denom()
    rhs = fmpz_mat(columns).transpose()  # (a list of rows converts faster than a flat list)
    if denominator != 1:
        rhs *= denominator
    solution = numerators.solve(rhs)
    out = []
    col = 0
    for base, _ in heads:
        m = len(base)
        coeffs = tuple(
            tuple(tuple(solution[a * d + b, col + l] for l in range(m)) for b in range(d)) for a in range(d)
        )
        out.append(LogMatrix(base, coeffs))
        col += m
    return out


def rational_log_coordinates(rhos: Sequence[fmpq]) -> tuple[Base, list[tuple[int, ...]]]:
    """A coprime base of the positive rationals ``rhos`` and their exponent vectors over it."""
    return coprime_exponents(rhos)


def solve_log_system(design: fmpq_mat, rhos_per_head: Sequence[Sequence[fmpq]]) -> list[LogMatrix]:
    """Solve ``design @ vec(W_h) = log rho_h`` exactly for every head at once.

    ``design`` is the invertible ``d^2 x d^2`` matrix whose row ``j`` is
    ``vec(M_j)`` (row-major), and ``rhos_per_head[h][j]`` the positive rational
    ``rho`` with ``log rho = <W_h, M_j>_F``. Each head gets its own coprime base
    (:func:`solve_log_coordinates`).
    """
    n = design.nrows()
    for rhos in rhos_per_head:
        if len(rhos) != n:
            raise ValueError(f"expected {n} measurements per head, got {len(rhos)}")
    return solve_log_coordinates(design, [rational_log_coordinates(rhos) for rhos in rhos_per_head])
