"""The real embedding of a number field: one real root of its minimal polynomial, isolated exactly.

A :class:`RealRoot` holds an isolating interval ``[lo, hi]`` with rational
ends (sympy's ``Poly.intervals``), refined by bisection (the exact sign of the
polynomial at a rational point decides each half) to choose the root, and arb
balls around it at any precision (FLINT's root isolation, :meth:`RealRoot.ball`).
Signs of other polynomials at the root are decided with those balls, at
whatever precision decides them (:meth:`RealRoot.sign_of`): a nonzero element
of the field is nonzero at the root, so the loop ends. No float is trusted.

>>> from flint import fmpq_poly
>>> r = RealRoot.choose(fmpq_poly([-2, 0, 1]), 1.414)     # sqrt(2)
>>> r.index, r.sign_of(fmpq_poly([-3, 2]))              # 2 sqrt(2) - 3 < 0
(1, -1)
>>> print(r.approximation(12))
1.41421356237
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from flint import arb, arb_poly, ctx, fmpq, fmpq_poly

from ..errors import NumberFieldError
from ..exact import as_rational, rational_str

__all__ = ["RealRoot", "real_root_intervals"]

#: Bisections tried when deciding which root an approximation points to.
MAX_SELECTION_BISECTIONS = 400


def real_root_intervals(poly: fmpq_poly) -> list[tuple[fmpq, fmpq]]:
    """Isolating intervals ``[lo, hi]`` (rational ends, increasing) of the real roots of ``poly``."""
    import sympy

    x = sympy.Symbol("x")
    coeffs = [sympy.Rational(int(c.p), int(c.q)) for c in reversed(poly.coeffs())]
    return [(fmpq(int(lo.p), int(lo.q)), fmpq(int(hi.p), int(hi.q)))
            for (lo, hi), _ in sympy.Poly(coeffs, x).intervals()]


def _sign(value: fmpq) -> int:
    return (value > 0) - (value < 0)


class RealRoot:
    """The real root number ``index`` (in increasing order) of ``poly``, inside ``[lo, hi]``."""

    def __init__(self, poly: fmpq_poly, index: int, lo: fmpq, hi: fmpq):
        self.poly, self.index = poly, index
        self.lo, self.hi = lo, hi
        self._sign_lo = _sign(poly(lo))
        self._balls: dict[int, arb] = {}  # precision -> ball (FLINT's isolation)

    # -- choosing the root ------------------------------------------------------
    @classmethod
    def choose(cls, poly: fmpq_poly, spec: Any, label: str = "the polynomial") -> RealRoot:
        """The root ``spec`` means: ``None`` (the only real root), an interval ``(lo, hi)`` holding exactly
        one real root, or an approximation (see :meth:`_nearest`); ``label`` names the polynomial."""
        intervals = real_root_intervals(poly)
        if not intervals:
            raise NumberFieldError(f"{label} has no real root, so this field has no real embedding; the "
                                   "learner needs one (the attention weights are positive reals)")
        roots = [cls(poly, i, lo, hi) for i, (lo, hi) in enumerate(intervals)]
        if spec is None:
            if len(roots) > 1:
                raise NumberFieldError(f"{label} has {len(roots)} real roots (about "
                                       f"{_listing(roots)}); say which with root=..., e.g. "
                                       f"root={roots[-1].approximation(6)}")
            return roots[0]
        if isinstance(spec, (tuple, list)):
            return cls._in_interval(roots, spec)
        return cls._nearest(roots, _exact(spec, "root"))

    @staticmethod
    def _in_interval(roots: list[RealRoot], spec: Sequence) -> RealRoot:
        if len(spec) != 2:
            raise NumberFieldError(f"an isolating interval is a pair (lo, hi), got {len(spec)} numbers")
        lo, hi = (_exact(v, "root interval") for v in spec)
        if lo > hi:
            raise NumberFieldError(f"the root interval [{lo}, {hi}] is empty (lo > hi)")
        inside = [r for r in roots if r.inside(lo, hi)]
        if len(inside) != 1:
            raise NumberFieldError(f"the interval [{lo}, {hi}] holds {len(inside)} real roots, not exactly "
                                   f"one; the real roots are about {_listing(roots)}")
        return inside[0]

    @staticmethod
    def _nearest(roots: list[RealRoot], x: fmpq) -> RealRoot:
        """The root ``r`` with ``|x - r|`` less than half the distance from ``r`` to every other real root
        (then ``x`` is nearer to ``r`` than to any other root); any ``x`` when there is one real root."""
        if len(roots) == 1:
            return roots[0]
        for _ in range(MAX_SELECTION_BISECTIONS):
            verdicts = [_points_to(r, [o for o in roots if o is not r], x) for r in roots]
            if all(v is not None for v in verdicts):
                chosen = [r for r, v in zip(roots, verdicts) if v]
                if not chosen:
                    break
                return chosen[0]
            for r in roots:
                r.bisect()
        raise NumberFieldError(f"root={x} isolates no real root: it must be nearer to one real root than "
                               f"half that root's distance to the others (the real roots are about "
                               f"{_listing(roots)}); give a closer approximation or an interval (lo, hi)")

    # -- refining and evaluating ------------------------------------------------
    def bisect(self) -> None:
        """Halve the isolating interval (the exact sign of the polynomial at the midpoint decides)."""
        if self.lo == self.hi:
            return
        mid = (self.lo + self.hi) / 2
        s = _sign(self.poly(mid))
        if s == 0:
            self.lo = self.hi = mid
        elif s == self._sign_lo:
            self.lo = mid
        else:
            self.hi = mid

    def inside(self, lo: fmpq, hi: fmpq) -> bool:
        """Is the root in ``[lo, hi]`` (decided exactly)?"""
        while True:
            if lo <= self.lo and self.hi <= hi:
                return True
            if self.hi < lo or self.lo > hi:
                return False
            for end in (lo, hi):
                if self.poly(end) == 0 and self.lo <= end <= self.hi:
                    return True  # a rational root (degree 1) at an end
            self.bisect()

    def ball(self, prec: int) -> arb:
        """An arb ball containing the root, of radius below ``2^-prec``: FLINT's root isolation
        (``fmpq_poly.complex_roots``, which lists the real roots first, increasing, with imaginary part
        exactly zero) at rising precision; a rational root exactly."""
        if self.lo == self.hi:
            return arb(self.lo)
        cached = self._balls.get(prec)
        if cached is not None:
            return cached
        work = prec + 32
        while True:
            with ctx.workprec(work):
                roots = [found[0] for found in self.poly.complex_roots()  # type: ignore[index]
                         if found[0].imag == 0]  # type: ignore[index]
                found = arb(roots[self.index].real)
            if found.rad() < arb(2) ** -prec:
                self._balls[prec] = found
                return found
            work *= 2

    def sign_of(self, p: fmpq_poly) -> int:
        """The sign of ``p`` at the root: exact, by arb at rising precision (``p`` must not vanish there)."""
        if self.lo == self.hi:
            return _sign(p(self.lo))
        if p.is_zero():
            return 0
        prec = 64
        while True:
            with ctx.workprec(prec + 16):
                value = arb_poly([arb(c) for c in p.coeffs()])(self.ball(prec))
                if value > 0:
                    return 1
                if value < 0:
                    return -1
            prec *= 2

    def approximation(self, digits: int = 15) -> str:
        """The root to ``digits`` significant digits (a display string; a rational root exactly)."""
        if self.lo == self.hi:
            return rational_str(self.lo)
        prec = int(digits * 3.33) + 16
        with ctx.workprec(prec):
            return self.ball(prec).mid().str(digits, radius=False)

    def __float__(self) -> float:
        return float(self.approximation(20))

    def __str__(self) -> str:
        return self.approximation()

    def __repr__(self) -> str:
        return f"RealRoot({self.poly}, index={self.index}, in [{self.lo}, {self.hi}])"


def _points_to(r: RealRoot, others: list[RealRoot], x: fmpq) -> bool | None:
    """``|x - r| < gap / 2`` (gap: the distance from ``r`` to the nearest other root): True, False, or None
    while the intervals cannot tell."""
    far = max(abs(x - r.lo), abs(x - r.hi))
    near = fmpq(0) if r.lo <= x <= r.hi else min(abs(x - r.lo), abs(x - r.hi))
    gap_low = min(max(o.lo - r.hi, r.lo - o.hi) for o in others)
    gap_high = min(max(abs(o.hi - r.lo), abs(r.hi - o.lo)) for o in others)
    if 2 * far < gap_low:
        return True
    if 2 * near >= gap_high:
        return False
    return None


def _exact(value: Any, what: str) -> fmpq:
    """An exact rational from an int, a rational, a float (its exact binary value) or a decimal string."""
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise NumberFieldError(f"{what}: {value!r} is not a finite number")
        f = Fraction(value)
        return fmpq(f.numerator, f.denominator)
    if isinstance(value, str) and "." in value:
        try:
            f = Fraction(value.strip())
        except ValueError:
            raise NumberFieldError(f"{what}: cannot read {value[:40]!r} as a number") from None
        return fmpq(f.numerator, f.denominator)
    return as_rational(value, what, NumberFieldError)


def _listing(roots: list[RealRoot]) -> str:
    return ", ".join(r.approximation(6) for r in roots)
