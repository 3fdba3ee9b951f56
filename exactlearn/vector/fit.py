"""The common-denominator (vector Padé) fit of a vector copy function (docs/algorithm.md section 10).

With vector outputs a configuration's copy function is

    R(k) = U z + sum_h C_h / (1 + k rho_h),   C_h = V_h (x - z) in Q^D,

and every output coordinate has the same poles. The fit looks for one
denominator ``q`` (degree ``<= n``) and numerators ``P_c`` (degree ``<= nd``)
with ``P_c(k_i) = y_{i,c} q(k_i)`` at every sample: eliminating ``P_c`` (the
rows of an integer annihilator of degree-``nd`` polynomials on the sample
points) leaves one exact linear system for the coefficients of ``q``, solved by
FLINT (``fmpz_mat.nullspace``). The samples *determine* the copy function when
every solution is a multiple ``(P s, q s)`` of one reduced fit; then that fit
is the copy function of any attention that gives these samples. Otherwise
:class:`~exactlearn.UndeterminedFitError` asks for more samples.

>>> from flint import fmpq, fmpq_mat
>>> R = lambda k: fmpq_mat(2, 1, [fmpq(3, 1 + 2 * k), fmpq(1, 1 + 2 * k) + fmpq(5, 1 + 3 * k)])
>>> fit = vector_copy_terms([0, 1, 2, 3], [R(k) for k in range(4)], 2)
>>> [(rho, C.entries()) for rho, C in fit.terms]
[(2, [3, 1]), (3, [0, 5])]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from flint import fmpq, fmpq_mat, fmpq_poly, fmpz_mat

from ..errors import ReconstructionError, UndeterminedFitError
from ..ratfun import CopyTerms, interpolate, with_known_zero

__all__ = ["vector_copy_terms", "denominator_kernel"]


def _annihilator(points: Sequence[int], degree: int) -> list[list[int]]:
    """Integer rows ``l`` with ``sum_i l_i p(k_i) = 0`` for every polynomial ``p`` of degree ``<= degree``."""
    m = len(points)
    vandermonde_t = fmpz_mat(degree + 1, m, [k**j for j in range(degree + 1) for k in points])
    basis, nullity = vandermonde_t.nullspace()
    return [[int(basis[i, r]) for i in range(m)] for r in range(nullity)]


def denominator_kernel(points: Sequence[int], columns: Sequence[Sequence[fmpq]], nd: int,
                       n: int) -> list[fmpq_poly]:
    """A basis of the denominators ``q`` (degree ``<= n``) for which every coordinate ``y_c q`` takes the
    values of a polynomial of degree ``<= nd`` on ``points`` (``columns[c][i] = y_{i,c}``)."""
    rows: list[list[fmpq]] = []
    for ell in _annihilator(points, nd):
        for ys in columns:
            rows.append([sum((fmpq(l * k**j) * y for l, k, y in zip(ell, points, ys) if l), fmpq(0))
                         for j in range(n + 1)])
    if not rows:
        return [fmpq_poly([0] * j + [1]) for j in range(n + 1)]
    integer_rows = [[int(x * _denominator(row)) for x in row] for row in rows]
    basis, nullity = fmpz_mat(len(rows), n + 1, [x for r in integer_rows for x in r]).nullspace()
    return [fmpq_poly([basis[j, r] for j in range(n + 1)]) for r in range(nullity)]


def _denominator(row: Sequence[fmpq]) -> int:
    """The least common denominator of ``row``."""
    return math.lcm(*(int(x.q) for x in row))


def _reduced_fit(points: Sequence[int], columns: Sequence[Sequence[fmpq]], nd: int,
                 n: int) -> tuple[fmpq_poly, list[fmpq_poly]]:
    """``(q, [P_c])``: the one reduced fit every solution is a multiple of, or an error."""
    kernel = denominator_kernel(points, columns, nd, n)
    if not kernel:
        raise ReconstructionError(f"no common denominator of degree <= {n} fits the {len(points)} samples")
    g = kernel[0]
    for other in kernel[1:]:
        g = g.gcd(other)
    numerators = [interpolate(points, [y * g(k) for k, y in zip(points, ys)]) for ys in columns]
    top = max(P.degree() for P in numerators)
    if top > nd:
        raise UndeterminedFitError(f"the {len(points)} samples admit several copy functions of type "
                                   f"({nd}, {n}) and no common reduced one")
    spare = n - g.degree() if top < 0 else min(n - g.degree(), nd - top)  # top < 0: R is constant
    if len(kernel) != spare + 1:
        raise UndeterminedFitError(f"the {len(points)} samples admit a {len(kernel)}-dimensional family "
                                   f"of fits of type ({nd}, {n}), not one copy function")
    return g, numerators


def vector_copy_terms(points: Sequence[int], values: Sequence[fmpq_mat], n: int, *,
                      at_zero: fmpq_mat | None = None, at_infinity: fmpq_mat | None = None) -> CopyTerms:
    """The copy function of vector samples ``values`` (``D x 1`` ``fmpq_mat``) read as
    ``R(k) = R(oo) + sum_h C_h / (1 + k rho_h)``: ``CopyTerms`` whose terms are ``(rho_h, C_h)`` sorted by
    ``rho``. ``at_zero``, ``at_infinity``: known ``R(0)``, ``R(oo)`` (then the numerator of
    ``R - R(oo)`` has degree ``< n``). Raises :class:`~exactlearn.UndeterminedFitError` when the samples
    do not determine the function, :class:`~exactlearn.ReconstructionError` when no attention fits."""
    points, values = with_known_zero(points, values, at_zero)
    D = values[0].nrows()
    shift = at_infinity if at_infinity is not None else fmpq_mat(D, 1)
    columns = [[(y - shift)[c, 0] for y in values] for c in range(D)]
    nd = n - 1 if at_infinity is not None else n
    if n < 1 or nd < 0:
        raise ValueError("a vector copy function needs n >= 1")
    g, numerators = _reduced_fit(points, columns, nd, n)
    t = g.degree()
    infinity = [fmpq(0) if P.degree() < t else P.coeffs()[t] / g.coeffs()[t] for P in numerators]
    if any(P.degree() > t for P in numerators) or (at_infinity is not None and any(infinity)):
        raise ReconstructionError("the fitted copy function has a pole at infinity: no attention gives it")
    terms = _terms(g, numerators)
    at_inf = shift + fmpq_mat(D, 1, infinity)
    zero = at_inf + fmpq_mat(D, 1, [P(0) / g(0) - x for P, x in zip(numerators, infinity)])
    return CopyTerms(zero, at_inf, terms)


def _terms(g: fmpq_poly, numerators: Sequence[fmpq_poly]) -> tuple[tuple[fmpq, Any], ...]:
    """``(rho_h, C_h)`` at the roots ``k0 = -1/rho_h`` of ``g``: ``C_h = rho_h P(k0) / g'(k0)``; every root
    rational, simple and negative, every residue vector nonzero."""
    roots = g.roots()
    if sum(mult for _, mult in roots) != g.degree():
        raise ReconstructionError(f"the common denominator (degree {g.degree()}) does not split over Q")
    slope = g.derivative()
    out = []
    for k0, mult in roots:
        if mult != 1:
            raise ReconstructionError(f"the pole k = {k0} has multiplicity {mult}")
        if k0 >= 0:
            raise ReconstructionError(f"the pole k = {k0} is not negative, so it is not -1/rho")
        rho = -1 / k0
        residue = [rho * P(k0) / slope(k0) for P in numerators]
        if not any(residue):
            raise ReconstructionError(f"the pole k = {k0} has a zero residue vector")
        out.append((rho, fmpq_mat(len(residue), 1, residue)))
    return tuple(sorted(out, key=lambda term: term[0]))
