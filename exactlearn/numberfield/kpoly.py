"""Polynomials in ``k`` over a number field ``K``, and their roots in ``K`` (Trager's method).

python-flint has no polynomials over number fields, so :class:`KPolynomial` keeps a
list of :class:`~exactlearn.numberfield.element.NumberFieldElement` (low to
high) with the few operations the copy function needs: evaluation, the
derivative, division with remainder and the (monic) gcd by Euclid's algorithm.

:func:`roots_in_field` finds the roots in ``K`` of a polynomial that should
split into distinct linear factors: first in the real embedding (arb), each
identified in ``K`` (:mod:`~exactlearn.numberfield.recognise`) and checked exactly; failing that,
as Trager does for factoring over ``K`` (:func:`trager_roots`):
its norm ``N(k) = Res_a(f(a), q(a, k))`` over ``Q`` (python-flint's
``fmpq_mpoly.resultant``) is factored with FLINT; when ``N`` is squarefree,
each irreducible factor ``g`` of ``N`` belongs to one irreducible factor
``gcd(q, g)`` of ``q`` over ``K``, of degree ``deg g / [K:Q]``; when it is not,
``k`` is shifted to ``k + s a`` (finitely many ``s`` fail).

>>> from exactlearn import NumberField
>>> K = NumberField("a^2 - 2", root=1.414)
>>> q = KPolynomial(K, [K(1), K("2 + 2*a"), K("1 + 2*a")])   # (1 + k)(1 + (1 + 2a) k)
>>> sorted(roots_in_field(q))
[-1, 1/7 - 2*a/7]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flint import acb_poly, arb, ctx, fmpq_mpoly_ctx, fmpq_poly

from ..errors import ReconstructionError
from .element import NumberFieldElement
from .recognise import recognise, scale_bits, value

if TYPE_CHECKING:  # annotations only
    from .field import NumberField

__all__ = ["KPolynomial", "roots_in_field", "trager_roots", "norm"]

#: The first size (bits) of the integer relations tried when identifying a root; doubled up to the limit.
FIRST_BITS = 64
#: Shifts ``k -> k + s a`` tried (``s = 0, 1, -1, 2, ...``) before a squarefree norm must have appeared.
MAX_SHIFTS = 200


class KPolynomial:
    """``sum c[i] k^i`` with ``c[i]`` in ``K`` (no trailing zero)."""

    __slots__ = ("K", "c")

    def __init__(self, K: NumberField, coeffs: Sequence[Any]):
        c = [K(x) for x in coeffs]
        while c and not c[-1]:
            c.pop()
        self.K, self.c = K, c

    def degree(self) -> int:
        return len(self.c) - 1

    def is_zero(self) -> bool:
        return not self.c

    def lc(self) -> NumberFieldElement:
        return self.c[-1]

    def __call__(self, k: Any) -> NumberFieldElement:
        total = self.K.zero()
        for x in reversed(self.c):
            total = total * k + x
        return total

    def derivative(self) -> KPolynomial:
        return KPolynomial(self.K, [x * i for i, x in enumerate(self.c)][1:])

    def __add__(self, other: KPolynomial) -> KPolynomial:
        n = max(len(self.c), len(other.c))
        zero = self.K.zero()
        a = self.c + [zero] * (n - len(self.c))
        b = other.c + [zero] * (n - len(other.c))
        return KPolynomial(self.K, [x + y for x, y in zip(a, b)])

    def scale(self, x: Any) -> KPolynomial:
        return KPolynomial(self.K, [c * x for c in self.c])

    def monic(self) -> KPolynomial:
        return self.scale(self.lc().inverse())

    def divmod(self, other: KPolynomial) -> tuple[KPolynomial, KPolynomial]:
        """Quotient and remainder (``other`` nonzero)."""
        if other.is_zero():
            raise ZeroDivisionError("division by the zero polynomial")
        rem = list(self.c)
        inv = other.lc().inverse()
        quot = [self.K.zero()] * max(0, len(rem) - len(other.c) + 1)
        for i in range(len(rem) - len(other.c), -1, -1):
            t = rem[i + len(other.c) - 1] * inv
            quot[i] = t
            for j, y in enumerate(other.c):
                rem[i + j] = rem[i + j] - t * y
        return KPolynomial(self.K, quot), KPolynomial(self.K, rem[: len(other.c) - 1])

    def gcd(self, other: KPolynomial) -> KPolynomial:
        """The monic gcd (Euclid's algorithm over ``K``)."""
        a, b = self, other
        while not b.is_zero():
            a, b = b, a.divmod(b)[1]
        return a.monic() if not a.is_zero() else a

    def shift(self, x: NumberFieldElement) -> KPolynomial:
        """``self(k + x)`` (Horner)."""
        out = KPolynomial(self.K, [])
        linear = KPolynomial(self.K, [x, 1])
        for c in reversed(self.c):
            out = out.times(linear) + KPolynomial(self.K, [c])
        return out

    def times(self, other: KPolynomial) -> KPolynomial:
        if self.is_zero() or other.is_zero():
            return KPolynomial(self.K, [])
        out = [self.K.zero()] * (len(self.c) + len(other.c) - 1)
        for i, x in enumerate(self.c):
            for j, y in enumerate(other.c):
                out[i + j] = out[i + j] + x * y
        return KPolynomial(self.K, out)

    def __repr__(self) -> str:
        return "KPolynomial(" + ", ".join(str(x) for x in self.c) + ")"


def norm(q: KPolynomial) -> fmpq_poly:
    """``N(k) = Res_a(f(a), q(a, k))``, the product of the conjugates of ``q``: a polynomial over ``Q``."""
    K = q.K
    ctx = fmpq_mpoly_ctx.get(("a", "k"), "lex")
    a, k = ctx.gens()
    f = sum((c * a**i for i, c in enumerate(K.polynomial.coeffs())), ctx.constant(0))
    bivariate = ctx.constant(0)
    for i, x in enumerate(q.c):
        for j, c in enumerate(x.poly.coeffs()):
            if c != 0:
                bivariate += c * a**j * k**i
    res = f.resultant(bivariate, "a")
    return fmpq_poly([_coefficient(res, i) for i in range(q.degree() * K.degree + 1)])


def _coefficient(poly: Any, power: int) -> Any:
    """The coefficient of ``k^power`` of a polynomial in ``Q[a, k]`` that does not involve ``a``."""
    return sum((c for m, c in zip(poly.monoms(), poly.coeffs()) if m[1] == power), 0)


def _squarefree(p: fmpq_poly) -> bool:
    return p.gcd(p.derivative()).degree() == 0


def _recognised_roots(q: KPolynomial, max_bits: int) -> list[NumberFieldElement] | None:
    """The roots of ``q`` found in the real embedding (arb's ``acb_poly.roots``), identified in ``K`` by
    lattice reduction and each checked exactly (``q(r) == 0``); ``None`` if that does not give ``deg q``
    distinct roots. A root whose ball is off the real line is not in ``K``: ReconstructionError."""
    K = q.K
    bits = FIRST_BITS
    while bits <= max_bits:
        scale = scale_bits(K.degree, bits)
        prec = 2 * scale + 128
        with ctx.workprec(prec):
            alpha = K.root.ball(prec)
            try:
                balls = acb_poly([value(c, alpha) for c in q.c]).roots(tol=arb(2) ** -(scale + 16),
                                                                       maxprec=4 * prec)
            except ValueError:  # a multiple root, or too close to tell: Trager's method decides
                return None
            found: list[NumberFieldElement] = []
            for z in balls:
                if not z.imag.contains(0):
                    raise ReconstructionError(_NOT_SPLIT.format(q.degree(), K) + " (a pole is not real)")
                r = recognise(K, z.real, alpha, scale)
                if r is not None and not q(r) and all(r != other for other in found):
                    found.append(r)
        if len(found) == q.degree():
            return found
        bits *= 2
    return None


_NOT_SPLIT = ("the denominator (degree {} in k) does not split into linear factors over {}: a pole is not "
              "in the field")


def roots_in_field(q: KPolynomial, max_bits: int = 1024) -> list[NumberFieldElement]:
    """The ``deg q`` distinct roots of ``q`` in ``K``; ``ReconstructionError`` if ``q`` does not split so.

    First the roots of ``q`` in the real embedding, identified in ``K`` and checked
    exactly (relations of up to ``max_bits`` bits); if that does not find them all,
    Trager's method decides (:func:`trager_roots`).
    """
    if q.degree() < 1:
        return []
    found = _recognised_roots(q, max_bits)
    return found if found is not None else trager_roots(q)


def trager_roots(q: KPolynomial) -> list[NumberFieldElement]:
    """The roots of ``q`` in ``K`` by Trager's method (the module docstring), if it splits into distinct
    linear factors over ``K``; else ReconstructionError."""
    K = q.K
    if q.degree() < 1:
        return []
    if q.gcd(q.derivative()).degree() > 0:
        raise ReconstructionError("the denominator has a multiple root: a pole is not simple")
    for step in range(MAX_SHIFTS):
        s = (step + 1) // 2 * (1 if step % 2 else -1)
        shifted = q.shift(K.gen * s) if s else q
        N = norm(shifted)
        if _squarefree(N):
            break
    else:  # pragma: no cover - only finitely many shifts give a norm with a repeated factor
        raise ReconstructionError(f"no squarefree norm after {MAX_SHIFTS} shifts")
    _, factors = N.factor()
    roots = []
    for g, _ in factors:
        if g.degree() != K.degree:
            raise ReconstructionError(_NOT_SPLIT.format(q.degree(), K))
        h = shifted.gcd(KPolynomial(K, [K(c) for c in g.coeffs()]))
        if h.degree() != 1:  # pragma: no cover - a squarefree norm pairs each factor with one of degree 1
            raise ReconstructionError("a pole is not in the field")
        roots.append(-h.c[0] + K.gen * s)
    return roots
