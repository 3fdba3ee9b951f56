"""Exact rational functions of one variable: reconstruction, reduction, poles, residues.

This is the "rational functions" room of ALGORITHM.md section 3. Everything is
over ``Q`` with python-flint (``fmpq``, ``fmpq_poly``).

Reconstruction is *Cauchy interpolation* by the extended Euclidean algorithm
(von zur Gathen & Gerhard, *Modern Computer Algebra*, section 5.7): interpolate
the samples by a polynomial ``L`` of degree ``< N``, run the Euclidean algorithm
on ``(M, L)`` with ``M = prod (k - k_i)`` and stop at the first remainder ``r``
of degree ``<= m``; with its cofactor ``t`` (``r = s M + t L``), ``r / t`` is the
unique type-``(m, n)`` function through the ``N = m + n + 1`` samples if one
exists. Because the stopping remainder is determined by the data alone, the
method is correct when the true type is lower than ``(m, n)``: no kernel of
dimension > 1 has to be resolved. The result is reduced and then checked
exactly against every sample.

>>> R = reconstruct([0, 1, 2], [fmpq(1), fmpq(1, 2), fmpq(1, 3)], 1, 1)
>>> R
RationalFunction(1, x + 1)
>>> R.poles()
[(-1, 1)]
>>> R.residue(fmpq(-1))
1
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from flint import fmpq, fmpq_poly

from .errors import ReconstructionError
from .exact import brief

__all__ = [
    "RationalFunction",
    "interpolate",
    "reconstruct",
    "reconstruct_nn",
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
        c0 = denominator(0)
        scale = c0 if c0 != 0 else denominator.leading_coefficient()
        if scale != 1:
            numerator, denominator = numerator / scale, denominator / scale
        self.numerator = numerator
        self.denominator = denominator

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

    def __add__(self, other) -> "RationalFunction":
        if isinstance(other, RationalFunction):
            return RationalFunction(
                self.numerator * other.denominator + other.numerator * self.denominator,
                self.denominator * other.denominator,
            )
        return RationalFunction(self.numerator + _q(other) * self.denominator, self.denominator)

    def __sub__(self, other) -> "RationalFunction":
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

    def partial_fractions(self) -> tuple[fmpq, list[tuple[fmpq, fmpq]]]:
        """``(c, [(k_i, r_i)])`` with ``p/q = c + sum r_i / (k - k_i)``.

        Requires ``deg p <= deg q`` and simple rational poles; raises
        :class:`~exactlearn.ReconstructionError` otherwise.
        """
        constant = self.at_infinity()
        if not self.splits():
            raise ReconstructionError(
                f"the denominator (degree {self.denominator.degree()}) does not split into linear factors over Q"
            )
        terms = []
        for pole, mult in self.poles():
            if mult != 1:
                raise ReconstructionError(f"the pole {brief(pole)} has multiplicity {mult}")
            terms.append((pole, self.residue(pole)))
        return constant, terms

    def __repr__(self) -> str:
        return f"RationalFunction({self.numerator}, {self.denominator})"


def from_partial_fractions(constant, terms: Sequence[tuple]) -> RationalFunction:
    """``constant + sum_i r_i / (k - k_i)`` as a reduced :class:`RationalFunction`."""
    num, den = fmpq_poly([_q(constant)]), fmpq_poly([1])
    for pole, res in terms:
        lin = fmpq_poly([-_q(pole), 1])
        num, den = num * lin + _q(res) * den, den * lin
    return RationalFunction(num, den)


def reconstruct(points: Sequence, values: Sequence, num_degree: int, den_degree: int) -> RationalFunction:
    """The unique reduced ``p/q`` with ``deg p <= num_degree``, ``deg q <= den_degree``
    and ``p(k_i)/q(k_i) = values[i]`` for all ``len(points) = num_degree + den_degree + 1``
    samples, by the extended Euclidean algorithm.

    Correct whenever the true type is lower (every solution of the linearised
    system reduces to the same fraction; the EEA finds it directly). Raises
    :class:`~exactlearn.ReconstructionError` if no such function exists.
    """
    if num_degree < 0 or den_degree < 0:
        raise ValueError("degrees must be non-negative")
    n_points = len(points)
    if n_points != num_degree + den_degree + 1:
        raise ValueError(
            f"a type ({num_degree}, {den_degree}) rational function needs exactly "
            f"{num_degree + den_degree + 1} samples, got {n_points}"
        )
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
    of ALGORITHM.md section 4 use ``2n - 1`` samples and both known values.
    """
    xs = [_q(p) for p in points]
    ys = [_q(v) for v in values]
    if at_zero is not None:
        if any(x == 0 for x in xs):
            raise ValueError("k = 0 is both sampled and given as known")
        xs, ys = [fmpq(0)] + xs, [_q(at_zero)] + ys
    if at_infinity is None:
        return reconstruct(xs, ys, n, n)
    if n < 1:
        raise ValueError("n must be at least 1 when the value at infinity is given")
    c = _q(at_infinity)
    shifted = reconstruct(xs, [y - c for y in ys], n - 1, n)
    if shifted.numerator.degree() >= shifted.denominator.degree() and not shifted.numerator.is_zero():
        raise ReconstructionError(
            f"no rational function of type ({n}, {n}) takes these values and the value {brief(c)} at infinity"
        )
    return shifted + c


@dataclass(frozen=True)
class CopyTerms:
    """``R(k) = at_infinity + sum_h c_h / (1 + k rho_h)``: the attention reading of ``R``.

    ``terms`` lists ``(rho_h, c_h)`` sorted by ``rho``; each pole ``-1/rho_h`` is
    simple and negative, each ``c_h`` nonzero.
    """

    at_zero: fmpq
    at_infinity: fmpq
    terms: tuple[tuple[fmpq, fmpq], ...]


def copy_terms(rf: RationalFunction) -> CopyTerms:
    """Read ``(rho_h, c_h)`` off ``R`` (ALGORITHM.md section 3).

    A pole ``k0`` gives ``rho = -1/k0`` and ``c = rho * Res_{k0} R``. Raises
    :class:`~exactlearn.ReconstructionError` if ``R`` is not of this form
    (a non-rational, multiple or non-negative pole, or a pole at infinity):
    no multi-head attention has such a copy function.
    """
    constant, terms = rf.partial_fractions()
    out = []
    for pole, res in terms:
        if pole >= 0:
            raise ReconstructionError(
                f"the pole k = {brief(pole)} is not negative, so it is not -1/rho for a positive rho"
            )
        rho = -1 / pole
        out.append((rho, rho * res))
    out.sort(key=lambda t: t[0])
    return CopyTerms(rf(0), constant, tuple(out))
