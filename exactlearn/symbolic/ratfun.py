"""Rational functions of the copy number ``k`` over ``Q(E, V)``.

The same steps as :mod:`exactlearn.ratfun` (docs/algorithm.md section 3), with the
coefficients in the field ``Q(E, V)`` of :mod:`exactlearn.symbolic.field`:

* reconstruction of the type-``(m, n)`` function through the samples from the
  **linear system** ``P(k_i) = y_i Q(k_i)`` (the first of the two methods of
  docs/algorithm.md section 3). Each row is multiplied by the denominator of its
  own sample, so the system has polynomial entries, and its kernel is found by
  fraction-free Gaussian elimination (Bareiss), whose every entry is a minor
  of the system. (The exact path solves the same system over ``Q`` with FLINT.
  The other method, Cauchy interpolation by the extended Euclidean algorithm,
  swells over ``Q(E, V)``: its remainders carry the lcm of *all* sample
  denominators; docs/generic-certificate.md compares the two);
* reduction by the gcd in ``Q[E, V, k]`` (python-flint's multivariate gcd; by
  Gauss's lemma this is the reduction over ``Q(E, V)``) and normalisation
  ``q(0) = 1``; the result is checked exactly against every sample (and the
  known value at infinity), which by uniqueness of type-``(n, n)``
  interpolation makes it *the* copy function, whatever method found it;
* poles as the factors of the denominator that are *linear in k*, found by
  python-flint's multivariate factorisation in ``Q[E, V, k]`` (Gauss's lemma
  again); a factor ``a k + b`` is the pole ``-b/a``, i.e. ``rho = a/b``;
* residues ``c = rho * p(k0) / q'(k0)``.

Every division and every degree the algorithm relies on records the relevant
polynomial in the field's ledger (kinds in :data:`exactlearn.symbolic.ledger.KINDS`).
What is *checked* here exactly: the reconstructed function takes every sample
value; the denominator splits into distinct linear factors in ``k``; every
``rho`` is a Laurent monomial with a positive coefficient (the symbolic form
of "the pole is negative", as ``rho > 0`` wherever ``E > 0``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flint import fmpq

from ..errors import ReconstructionError
from ..ratfun import CopyTerms, with_known_zero
from .element import Element
from .ledger import SCHEDULE

if TYPE_CHECKING:  # annotations only: the field module imports this one
    from .field import SymbolicField

__all__ = ["KPoly", "KRational", "kernel_vector", "reconstruct", "reconstruct_nn", "copy_terms"]


class KPoly:
    """A polynomial ``sum c_i k^i`` with coefficients in ``Q(E, V)`` (low to high, no trailing zero)."""

    __slots__ = ("F", "c")

    def __init__(self, F: SymbolicField, coeffs: Sequence[Element]):
        c = list(coeffs)
        while c and c[-1].is_zero():
            c.pop()
        self.F, self.c = F, c

    @classmethod
    def rational(cls, F: SymbolicField, coeffs: Sequence) -> KPoly:
        return cls(F, [F.constant(x) for x in coeffs])

    def degree(self) -> int:
        return len(self.c) - 1

    def is_zero(self) -> bool:
        return not self.c

    def lc(self) -> Element:
        return self.c[-1]

    def __call__(self, k) -> Element:
        F = self.F
        total = F.zero()
        for a in reversed(self.c):
            total = total * k + a
        return total

    def derivative(self) -> KPoly:
        return KPoly(self.F, [a * i for i, a in enumerate(self.c)][1:])

    def __repr__(self) -> str:
        return "KPoly(" + " + ".join(f"({a})*k^{i}" for i, a in enumerate(self.c)) + ")"


def _record_degree(p: KPoly, where: str) -> None:
    """The run relies on ``deg p`` as computed: record ``lc(p) != 0``."""
    if not p.is_zero():
        p.F.require_nonzero(p.lc(), "degree", where)


def _k_coefficients(F: SymbolicField, poly) -> list:
    """The coefficients (in ``Q[E, V]``) of the powers of ``k`` of a polynomial in ``Q[E, V, k]``."""
    groups: dict[int, dict] = {}
    for monom, coef in zip(poly.monoms(), poly.coeffs()):
        groups.setdefault(monom[-1], {})[monom[:-1]] = coef
    top = max(groups, default=-1)
    return [F.ctx.from_dict(groups.get(i, {})) for i in range(top + 1)]


def _from_k_coefficients(F: SymbolicField, coeffs: Sequence) -> Any:
    """``sum coeffs[i] k^i`` in ``Q[E, V, k]`` for coefficients in ``Q[E, V]``."""
    out = {}
    for i, c in enumerate(coeffs):
        for monom, coef in zip(c.monoms(), c.coeffs()):
            out[tuple(monom) + (i,)] = coef
    return F.ctx_k.from_dict(out)


def _common_denominator(F: SymbolicField, elements: Sequence[Element]):
    common = F.ctx.constant(1)
    for a in elements:
        common = common * (a.den / common.gcd(a.den))
    return common


class KRational:
    """A reduced fraction ``p / q`` in ``Q(E, V)(k)``, normalised to ``q(0) = 1`` when ``q(0) != 0``.

    ``cleared_denominator`` is ``q`` times a polynomial of ``Q[E, V]``: a
    polynomial in ``Q[E, V, k]``, coprime to the cleared numerator.
    """

    __slots__ = ("numerator", "denominator", "cleared_denominator")

    def __init__(self, numerator: KPoly, denominator: KPoly, cleared_denominator):
        self.numerator, self.denominator = numerator, denominator
        self.cleared_denominator = cleared_denominator

    @classmethod
    def reduced(cls, F: SymbolicField, p: Sequence[Element], q: Sequence[Element], where: str) -> KRational:
        """``p / q`` (coefficient lists, low to high) reduced by the gcd in ``Q[E, V, k]``; ``where``
        labels what the normalisation relies on (:meth:`SymbolicField.require_nonzero`)."""
        if all(a.is_zero() for a in q):
            raise ZeroDivisionError("the denominator of a rational function cannot be zero")
        if all(a.is_zero() for a in p):
            one = KPoly.rational(F, [1])
            return cls(KPoly(F, []), one, F.ctx_k.constant(1))
        common = _common_denominator(F, list(p) + list(q))
        cp = _from_k_coefficients(F, [a.num * (common / a.den) for a in p])
        cq = _from_k_coefficients(F, [a.num * (common / a.den) for a in q])
        g = cp.gcd(cq)
        if not g.is_one():
            cp, cq = cp / g, cq / g
        pc, qc = _k_coefficients(F, cp), _k_coefficients(F, cq)
        scale = qc[0] if not qc[0].is_zero() else qc[-1]
        inv = F.inverse(Element(F, scale), "normalisation", where)
        numerator = KPoly(F, [Element(F, c) * inv for c in pc])
        denominator = KPoly(F, [Element(F, c) * inv for c in qc])
        return cls(numerator, denominator, cq)

    @property
    def F(self) -> SymbolicField:
        return self.numerator.F

    @property
    def type(self) -> tuple[int, int]:
        return (self.numerator.degree(), self.denominator.degree())

    def __call__(self, k, kind: str = "division", where: str = SCHEDULE) -> Element:
        return self.F.divide(self.numerator(k), self.denominator(k), kind, where)

    def at_infinity(self, where: str = SCHEDULE) -> Element:
        dp, dq = self.type
        if dp > dq:
            raise ReconstructionError(f"the rational function has a pole at infinity (type {self.type})")
        if dp < dq:
            return self.F.zero()
        # lc(p) may vanish at a point: the value lc(p)/lc(q) is still right there, so only lc(q) is relied on
        return self.F.divide(self.numerator.lc(), self.denominator.lc(), "degree", where)

    def linear_factors(self) -> list[tuple[Element, Element]]:
        """The factors ``a k + b`` of the denominator over ``Q(E, V)``, as ``(a, b)``.

        Raises ``ReconstructionError`` if the denominator does not split into
        distinct factors linear in ``k``.
        """
        F = self.F
        _, factors = self.cleared_denominator.factor()
        out = []
        for f, mult in factors:
            deg_k = f.degrees()[-1]
            if deg_k == 0:
                continue
            if deg_k > 1:
                raise ReconstructionError(
                    f"the denominator (degree {self.denominator.degree()} in k) does not split into factors "
                    f"linear in k over Q(E, V)"
                )
            if mult != 1:
                raise ReconstructionError(f"a pole has multiplicity {mult}")
            b, a = _k_coefficients(F, f)
            out.append((Element(F, a), Element(F, b)))
        if len(out) != self.denominator.degree():  # pragma: no cover - factor() is complete
            raise ReconstructionError("the denominator's linear factors do not account for its degree")
        return out


def kernel_vector(F: SymbolicField, rows: list[list], where: str = SCHEDULE) -> list[Element]:
    """A nonzero kernel vector of a matrix over ``Q[E, V]`` with more columns than rows.

    Fraction-free Gaussian elimination (Bareiss): after each step every entry is
    a minor of the matrix and the division by the previous pivot is exact
    (python-flint raises if it is not, so this is checked). Each pivot is
    recorded (kind ``pivot``); the first non-pivot column is set to 1, the
    other free columns to 0, and the pivot columns are solved for by back
    substitution over ``Q(E, V)`` (dividing by the recorded pivots).
    """
    a = [list(r) for r in rows]
    n_rows, n_cols = len(a), len(a[0])
    prev = F.ctx.constant(1)
    pivots: list[tuple[int, int]] = []  # (row, column)
    r = 0
    for c in range(n_cols):
        if r == n_rows:
            break
        candidates = [i for i in range(r, n_rows) if not a[i][c].is_zero()]
        if not candidates:
            continue
        s = min(candidates, key=lambda i: len(a[i][c]))
        a[r], a[s] = a[s], a[r]
        pivot = a[r][c]
        F.ledger.add(pivot, "pivot", where)
        for i in range(r + 1, n_rows):
            factor = a[i][c]
            for j in range(c + 1, n_cols):
                a[i][j] = (pivot * a[i][j] - factor * a[r][j]) / prev
            a[i][c] = F.ctx.constant(0)
        prev = pivot
        pivots.append((r, c))
        r += 1
    pivot_cols = {c for _, c in pivots}
    free = next(c for c in range(n_cols) if c not in pivot_cols)
    x = [F.zero() for _ in range(n_cols)]
    x[free] = F.constant(1)
    for row, c in reversed(pivots):
        total = F.zero()
        for j in range(c + 1, n_cols):
            if not a[row][j].is_zero() and not x[j].is_zero():
                total = total + Element(F, a[row][j]) * x[j]
        x[c] = -F.divide(total, Element(F, a[row][c]), "pivot", where)
    return x


def reconstruct(F: SymbolicField, points: Sequence, values: Sequence[Element], num_degree: int,
                den_degree: int, *, at_infinity: Element | None = None, where: str = SCHEDULE) -> KRational:
    """The reduced ``p/q`` with ``deg p <= num_degree``, ``deg q <= den_degree`` through the samples.

    ``num_degree + den_degree + 1`` samples determine it; a known value
    ``at_infinity`` (``num_degree == den_degree``) replaces one sample by the
    row ``p_n = at_infinity * q_n``. Raises ``ReconstructionError`` if no such
    function exists (the candidate from the kernel fails a sample).
    """
    m, n = num_degree, den_degree
    if m < 0 or n < 0:
        raise ValueError("degrees must be non-negative")
    needed = m + n + 1 - (1 if at_infinity is not None else 0)
    if len(points) != needed:
        raise ValueError(f"a type ({m}, {n}) rational function needs exactly {needed} samples here, "
                         f"got {len(points)}")
    if at_infinity is not None and m != n:
        raise ValueError("a value at infinity is only used for type (n, n)")
    xs = [fmpq(p) for p in points]
    zero = F.ctx.constant(0)
    rows = []
    for x, y in zip(xs, values):
        powers = [x**j for j in range(max(m, n) + 1)]
        rows.append([y.den * powers[j] for j in range(m + 1)] + [-y.num * powers[j] for j in range(n + 1)])
    if at_infinity is not None:
        rows.append([zero] * m + [at_infinity.den] + [zero] * n + [-at_infinity.num])
    solution = kernel_vector(F, rows, where)
    result = KRational.reduced(F, solution[: m + 1], solution[m + 1 :], where)
    _record_degree(result.denominator, where)
    fails: Any = None
    for x, y in zip(xs, values):
        if not result(x, "sample denominator", where) == y:
            fails = x
            break
    if fails is None and at_infinity is not None:
        dp, dq = result.type
        if dp > dq or not result.at_infinity(where) == at_infinity:
            fails = "infinity"
    if fails is not None:
        raise ReconstructionError(
            f"no rational function of type ({m}, {n}) takes these {len(xs)} values"
            + (" and the given value at infinity" if at_infinity is not None else "")
            + f" (the candidate fails at k = {fails})"
        )
    return result


def reconstruct_nn(F: SymbolicField, points: Sequence, values: Sequence[Element], n: int, *,
                   at_zero: Element | None = None, at_infinity: Element | None = None,
                   where: str = SCHEDULE) -> KRational:
    """Type-``(n, n)`` reconstruction with optional known ``R(0)`` and ``R(oo)``
    (the same contract as :func:`exactlearn.ratfun.reconstruct_nn`)."""
    points, ys = with_known_zero(points, values, at_zero)
    xs = [fmpq(p) for p in points]
    if at_infinity is not None and n < 1:
        raise ValueError("n must be at least 1 when the value at infinity is given")
    return reconstruct(F, xs, ys, n, n, at_infinity=at_infinity, where=where)


def _positive_monomial_ratio(rho: Element) -> bool:
    """``rho = c * m1 / m2`` with monomials ``m1, m2`` and ``c > 0``: positive wherever ``E > 0``."""
    if len(rho.num) != 1 or len(rho.den) != 1:
        return False
    (cn,), (cd,) = list(rho.num.coeffs()), list(rho.den.coeffs())
    return cn * cd > 0


def copy_terms(F: SymbolicField, points, values, n, *, at_zero=None, at_infinity=None,
               where: str = SCHEDULE) -> CopyTerms:
    """Reconstruct ``R`` over ``Q(E, V)`` and read ``(rho_h, c_h)`` off it (docs/algorithm.md section 3).

    A linear factor ``a k + b`` of the denominator is the pole ``k0 = -b/a``
    (recorded: ``a``, ``b``), ``rho = a / b`` and ``c = rho * p(k0) / q'(k0)``
    (recorded: ``q'(k0)``, kind ``simple pole``). Each ``c_h`` (kind ``residue``)
    and each ``rho_h - rho_h'`` (kind ``pole difference``) is recorded: they are
    the conditions under which a numeric copy function shows exactly these
    ``H`` heads, labelled ``where`` (which copy function this is). Terms are
    sorted by the printed ``rho`` (a deterministic order; the schedule's
    matching does not depend on it).
    """
    rf = reconstruct_nn(F, points, values, n, at_zero=at_zero, at_infinity=at_infinity, where=where)
    if rf.type[1] > n:  # pragma: no cover - reconstruct guarantees the degree bound
        raise ReconstructionError("denominator degree exceeds the bound")
    constant = rf.at_infinity(where)
    dq = rf.denominator.derivative()
    terms = []
    for a, b in rf.linear_factors():
        if b.is_zero():
            raise ReconstructionError("the copy function has a pole at k = 0, "
                                      "so it is not -1/rho for a finite rho")
        k0 = -F.divide(b, a, "pole", where)
        rho = F.divide(a, b, "pole", where)
        if not _positive_monomial_ratio(rho):
            raise ReconstructionError(
                f"the pole k = {k0} is not -1/rho for a rho that is positive wherever E > 0"
            )
        residue = F.divide(rf.numerator(k0), dq(k0), "simple pole", where)
        terms.append((rho, rho * residue))
    terms.sort(key=lambda t: t[0].key())
    labelled = []
    for i, (rho, c) in enumerate(terms):
        F.require_nonzero(c, "residue", where)
        for rho2, _ in terms[:i]:
            F.require_nonzero(rho - rho2, "pole difference", where)
        labelled.append((Element(F, rho.num, rho.den, reduced=True, label=f"rho[{i}] of {where}"),
                         Element(F, c.num, c.den, reduced=True, label=f"c[{i}] of {where}")))
    return CopyTerms(rf(0, where=where), constant, tuple(labelled))
