"""Copy functions over a number field: reconstruction, poles in ``K``, residues (docs/algorithm.md section 3).

The same steps as :mod:`exactlearn.ratfun`, with the samples in ``K``:

* **Cauchy interpolation** as one exact linear system ``p(k_i) = y_i q(k_i)``
  over ``K``, written over ``Q`` (each coefficient of ``p`` and ``q`` is ``n``
  rational unknowns, multiplication by ``y_i`` an ``n x n`` rational matrix) and
  solved by FLINT's integer kernel (``fmpz_mat.nullspace``). Any nonzero
  kernel vector is ``(p s, q s)`` for the reduced interpolant ``p/q`` and some
  ``s`` in ``K[k]`` (the argument of docs/algorithm.md section 3 holds over any
  field), so one gcd over ``K`` reduces it; the result is checked exactly
  against every sample;
* **poles** ``k_0`` as the roots in ``K`` of the denominator
  (:func:`~exactlearn.numberfield.kpoly.roots_in_field`, Trager's method), each
  ``rho = -1/k_0`` positive in the real embedding (decided exactly);
* **residues** ``c = rho p(k_0) / q'(k_0)``.

>>> from exactlearn import NumberField
>>> K = NumberField("a^2 - 2", root=1.414)
>>> R = lambda k: 1 + K("a") / (1 + k * K("1 + a"))        # R(oo) = 1, rho = 1 + a, c = a
>>> copy_terms(K, [0, 1, 2], [R(k) for k in range(3)], 1).terms
((1 + a, a),)
"""

from __future__ import annotations

from collections.abc import Sequence
from math import lcm
from typing import TYPE_CHECKING, Any

from flint import fmpq, fmpq_mat, fmpz_mat

from ..errors import ReconstructionError
from ..ratfun import CopyTerms, with_known_zero
from .element import NumberFieldElement
from .kpoly import KPolynomial, roots_in_field

if TYPE_CHECKING:  # annotations only
    from .field import NumberField

__all__ = ["reconstruct", "copy_terms"]


def _multiplication(y: NumberFieldElement) -> list[list[fmpq]]:
    """The ``n x n`` rational matrix of ``x -> y x`` over ``1, a, ..., a^(n-1)`` (rows: coordinates out)."""
    K = y.field
    columns = [(y * K.gen**s).coordinates() for s in range(K.degree)]
    return [[columns[s][t] for s in range(K.degree)] for t in range(K.degree)]


def _integer_rows(rows: list[list[fmpq]]) -> fmpz_mat:
    """Each rational row times the lcm of its denominators (the kernel is unchanged)."""
    out = []
    for row in rows:
        scale = lcm(*(int(x.q) for x in row))
        out.append([x * scale for x in row])
    return fmpz_mat([[int(x.p) for x in row] for row in out])


def _system(points: Sequence[int], values: Sequence[NumberFieldElement], m: int, n: int,
            normalised: bool) -> tuple[list[list[fmpq]], list[fmpq]]:
    """Rows of ``p(k_i) - y_i q(k_i) = 0`` over ``Q`` (unknowns: the coordinates of ``p_0..p_m, q_0..q_n``);
    ``normalised``: ``q_0 = 1`` is moved to the right-hand side (unknowns ``p_0..p_m, q_1..q_n``)."""
    dim = values[0].field.degree
    first = 1 if normalised else 0
    width = (m + 1 + n + 1 - first) * dim
    rows, rhs = [], []
    for k, y in zip(points, values):
        mul = _multiplication(y)
        for t in range(dim):
            row = [fmpq(0)] * width
            for j in range(m + 1):
                row[j * dim + t] = fmpq(k**j)
            for j in range(first, n + 1):
                for s in range(dim):
                    row[(m + 1 + j - first) * dim + s] = -mul[t][s] * k**j
            rows.append(row)
        rhs.extend(y.coordinates())
    return rows, rhs


def _elements(K: NumberField, vector: Sequence[fmpq], count: int) -> list[NumberFieldElement]:
    dim = K.degree
    return [K.from_coordinates(vector[j * dim:(j + 1) * dim]) for j in range(count)]


def _normalised(K: NumberField, points: Sequence[int], values: Sequence[NumberFieldElement], m: int,
                n: int) -> tuple[KPolynomial, KPolynomial] | None:
    """The ``(p, q)`` with ``q(0) = 1`` through the first ``m + n + 1`` samples when that square system is
    nonsingular (FLINT's Dixon solver), else ``None``."""
    count = m + n + 1
    rows, rhs = _system(points[:count], values[:count], m, n, True)
    size = len(rows)
    try:
        solution = fmpq_mat(size, size, [x for row in rows for x in row]).solve(  # type: ignore[call-arg]
            fmpq_mat(size, 1, rhs), algorithm="dixon")
    except ZeroDivisionError:
        return None
    coeffs = _elements(K, [solution[i, 0] for i in range(size)], m + 1 + n)
    return KPolynomial(K, coeffs[: m + 1]), KPolynomial(K, [K(1)] + coeffs[m + 1:])


def _from_kernel(K: NumberField, points: Sequence[int], values: Sequence[NumberFieldElement], m: int,
                 n: int) -> tuple[KPolynomial, KPolynomial]:
    """Any nonzero kernel vector of the linearised system on the first ``m + n + 1`` samples (FLINT's
    ``fmpz_mat.nullspace``), reduced by the gcd over ``K`` and normalised to ``q(0) = 1`` (or ``q`` monic)."""
    count = m + n + 1
    rows, _ = _system(points[:count], values[:count], m, n, False)
    kernel, nullity = _integer_rows(rows).nullspace()
    if nullity == 0:  # pragma: no cover - more unknowns than equations
        raise ReconstructionError("the interpolation system has no kernel")
    coeffs = _elements(K, [fmpq(kernel[i, 0]) for i in range((m + n + 2) * K.degree)], m + n + 2)
    p, q = KPolynomial(K, coeffs[: m + 1]), KPolynomial(K, coeffs[m + 1:])
    if not p.is_zero():
        g = p.gcd(q)
        if g.degree() > 0:
            p, q = p.divmod(g)[0], q.divmod(g)[0]
    else:
        q = KPolynomial(K, [1])
    scale = (q.c[0] if q.c[0] else q.lc()).inverse()
    return p.scale(scale), q.scale(scale)


def _fits(p: KPolynomial, q: KPolynomial, points: Sequence[int],
          values: Sequence[NumberFieldElement]) -> bool:
    for k, y in zip(points, values):
        qk = q(k)
        if not qk or p(k) != y * qk:
            return False
    return True


def reconstruct(K: NumberField, points: Sequence[int], values: Sequence[Any], m: int,
                n: int) -> tuple[KPolynomial, KPolynomial]:
    """The reduced ``(p, q)``, ``deg p <= m``, ``deg q <= n``, ``q(0) = 1`` (or ``q`` monic if ``q(0) = 0``),
    through the samples (at least ``m + n + 1``); ``ReconstructionError`` if there is none.

    First the square systems with ``q(0) = 1`` for the types ``(m - t, n - t)``,
    ``t = 0, 1, ...`` (on the first ``m + n + 1 - 2t`` samples): a nonsingular one
    whose solution takes *every* sample with ``q(k_i) != 0`` is reduced (a common
    factor would leave a family of solutions) and is the interpolant. Otherwise
    (a pole at ``k = 0``, or no interpolant) the kernel of the full system decides.
    """
    values = [K(y) for y in values]
    if len(values) < m + n + 1 or len(points) != len(values):
        raise ValueError(f"a type ({m}, {n}) rational function needs {m + n + 1} samples, got {len(values)}")
    for t in range(min(m, n) + 1):
        found = _normalised(K, points, values, m - t, n - t)
        if found is not None:
            if _fits(*found, points, values):
                return found
            break
    p, q = _from_kernel(K, points, values, m, n)
    if not _fits(p, q, points, values):
        raise ReconstructionError(f"no rational function of type ({m}, {n}) over the field takes these "
                                  f"{len(values)} values")
    return p, q


def copy_terms(K: NumberField, points: Sequence[int], values: Sequence[Any], n: int, *,
               at_zero: Any = None, at_infinity: Any = None) -> CopyTerms:
    """Reconstruct the type-``(n, n)`` copy function over ``K`` and read off its ``(rho_h, c_h)``, sorted by
    ``rho`` in the real embedding; ``ReconstructionError`` if it is not of the attention form."""
    points, values = with_known_zero(points, values, at_zero)
    if at_infinity is None:
        p, q = reconstruct(K, points, values, n, n)
    else:  # R - R(oo) has type (n - 1, n): 2n samples
        c = K(at_infinity)
        p, q = reconstruct(K, points, [K(y) - c for y in values], n - 1, n)
        if not p.is_zero() and p.degree() >= q.degree():
            raise ReconstructionError(f"no rational function of type ({n}, {n}) takes these values and the "
                                      f"value {c} at infinity")
        p = p + q.scale(c)
    if p.degree() > q.degree():
        raise ReconstructionError(f"the rational function has a pole at infinity (type "
                                  f"({p.degree()}, {q.degree()}))")
    constant = p.lc() * q.lc().inverse() if p.degree() == q.degree() else K.zero()
    dq = q.derivative()
    terms = []
    for k0 in roots_in_field(q):
        if not k0:
            raise ReconstructionError("the copy function has a pole at k = 0")
        rho = -k0.inverse()
        if rho.sign() <= 0:
            raise ReconstructionError(f"the pole k = {k0} is not negative in the real embedding, so it is "
                                      f"not -1/rho for a positive rho")
        terms.append((rho, rho * p(k0) * dq(k0).inverse()))
    terms.sort(key=lambda t: t[0])
    return CopyTerms(p(0) * q(0).inverse(), constant, tuple(terms))
