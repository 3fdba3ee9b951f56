"""Real balls: python-flint ``arb`` conversions used by the approximate path.

Every number on the approximate path is an ``arb`` ball ``[m +/- r]``: a
binary floating-point midpoint ``m`` and a radius ``r`` such that the true
value lies in ``[m - r, m + r]``. Oracle answers enter as balls of radius
``eps`` (the declared bound on the oracle's output error); python-flint then
propagates rounding errors rigorously. Results leave as mpmath numbers
(``mpf``, the midpoint, exactly) plus their radii.

The working precision of arb is python-flint's global ``flint.ctx.prec``; the
learner sets it (and mpmath's ``mp.prec``) for the duration of a run with
:func:`working_precision`.

>>> from flint import fmpq
>>> with working_precision(64):
...     x = to_arb(fmpq(1, 4)) + eps_ball(fmpq(1, 10**6))
...     (to_mpf(x), float(radius(x)) >= 1e-6)
(mpf('0.25'), True)
"""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import mpmath
from flint import arb, ctx, fmpq, fmpz
from mpmath.libmp import from_man_exp

from ...errors import InvalidArgumentError, OracleOutputError
from ...exact import rational_str
from ...settings import DEFAULT_SETTINGS

__all__ = [
    "DEFAULT_PRECISION",
    "working_precision",
    "to_arb",
    "eps_ball",
    "to_mpf",
    "radius",
    "upper",
    "abs_upper",
    "brief_decimal",
    "as_fmpq",
    "recenter",
]


#: Default working precision in bits (:attr:`~exactlearn.settings.ApproxSettings.precision`).
DEFAULT_PRECISION = DEFAULT_SETTINGS.approx.precision


@contextlib.contextmanager
def working_precision(bits: int) -> Iterator[None]:
    """Set arb's (``flint.ctx``) and mpmath's working precision to ``bits`` bits."""
    with ctx.workprec(bits), mpmath.mp.workprec(bits):
        yield


def _dyadic(man: int, exp: int) -> fmpq:
    return fmpq(man * (1 << exp)) if exp >= 0 else fmpq(man, 1 << (-exp))


def as_fmpq(value: Any, what: str = "value", error: type[Exception] = InvalidArgumentError) -> fmpq:
    """The exact rational value of an int, rational, Python float or mpmath ``mpf``.

    Floats and ``mpf`` are binary fractions, so this is exact (no decimal
    rounding): ``as_fmpq(0.1)`` is ``3602879701896397/36028797018963968``.
    Strings ``"p/q"`` and decimal strings such as ``"1e-30"`` are read exactly.
    """
    if isinstance(value, bool):
        raise error(f"{what}: expected a real number, got the bool {value!r}")
    if isinstance(value, fmpq):
        return value
    if isinstance(value, (int, fmpz)):
        return fmpq(int(value))
    if isinstance(value, Fraction):
        return fmpq(value.numerator, value.denominator)
    if isinstance(value, mpmath.mpf):
        if not mpmath.isfinite(value):
            raise error(f"{what}: {value} is not a finite real number")
        sign, man, exp, _ = value._mpf_
        return _dyadic(-int(man) if sign else int(man), int(exp))
    if isinstance(value, str):
        try:
            frac = Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise error(f"{what}: {value!r} is not a number such as '1/3', '0.25' or '1e-30'") from None
        return fmpq(frac.numerator, frac.denominator)
    if isinstance(value, numbers.Real):  # float, numpy floating, ...
        f = float(value)
        if not math.isfinite(f):
            raise error(f"{what}: {value!r} is not a finite real number")
        frac = Fraction(f)
        return fmpq(frac.numerator, frac.denominator)
    if isinstance(value, numbers.Rational):
        return fmpq(int(value.numerator), int(value.denominator))
    raise error(f"{what}: expected a real number, got {type(value).__name__} {value!r}")


def to_arb(value: Any, what: str = "the oracle's answer") -> arb:
    """A ball containing ``value`` (exact when the value fits the working precision).

    Accepts ``arb`` (returned as is), ints, rationals, Python floats and mpmath
    ``mpf``; raises :class:`~exactlearn.OracleOutputError` for anything else
    (complex numbers, NaN, infinities, tensors: convert with ``float(...)``).
    """
    if isinstance(value, arb):
        if not value.is_finite():
            raise OracleOutputError(f"{what}: {value} is not a finite real ball")
        return value
    try:
        return arb(as_fmpq(value, what, OracleOutputError))
    except OracleOutputError:
        raise
    except Exception as exc:  # pragma: no cover - defensive
        raise OracleOutputError(f"{what}: cannot read {value!r} as a real number ({exc})") from None


def eps_ball(eps: Any) -> arb:
    """The ball ``[0 +/- eps]`` (its radius rounded up at the working precision)."""
    e = as_fmpq(eps, "eps")
    if e < 0:
        raise InvalidArgumentError(f"eps must be >= 0, got {e}")
    if e == 0:
        return arb(0)
    return arb(0, arb(e).upper())


def _exact_mpf(point: arb) -> mpmath.mpf:
    man, exp = point.man_exp()
    return mpmath.mp.make_mpf(from_man_exp(int(man), int(exp)))  # no rounding


def to_mpf(x: arb | fmpq) -> mpmath.mpf:
    """The midpoint of a ball ``x`` as an mpmath ``mpf``, exactly (whatever mpmath's precision); a
    rational rounded to mpmath's precision."""
    if isinstance(x, fmpq):
        return mpmath.mpf(int(x.p)) / int(x.q)
    return _exact_mpf(x.mid())


def radius(x: arb) -> mpmath.mpf:
    """The radius of ``x`` as an ``mpf``: a bound on ``|to_mpf(x) - true value|``."""
    return _exact_mpf(x.rad())


def upper(x: arb) -> mpmath.mpf:
    """An upper bound of every number in ``x`` (midpoint + radius, rounded up)."""
    return mpmath.fadd(to_mpf(x), radius(x), rounding="u")


def abs_upper(x: arb | fmpq) -> mpmath.mpf:
    """An upper bound of ``|t|`` for every ``t`` in a ball ``x``, or of ``|x|`` for a rational."""
    if isinstance(x, fmpq):
        q = abs(x)
        return mpmath.fdiv(int(q.p), int(q.q), rounding="u")
    return mpmath.fadd(abs(to_mpf(x)), radius(x), rounding="u")


def brief_decimal(q: fmpq) -> str:
    """An exact rational for messages: as it is when short (an integer always), else 6 significant
    digits (:func:`exactlearn.exact.brief` describes a long rational by its digits instead; a bound
    such as ``eps = 1e-30`` reads better as a decimal).

    >>> brief_decimal(fmpq(1, 1000)), brief_decimal(fmpq(1, 10**30))
    ('1/1000', '1.0e-30')
    """
    if q.q == 1 or len(str(q)) <= 24:
        return rational_str(q)
    return mpmath.nstr(to_mpf(q), 6)


def recenter(ball: arb, center: arb) -> arb:
    """A ball around the midpoint of ``center`` that contains ``ball``.

    arb computes the midpoint of an operation on wide balls at reduced
    precision (only as many bits as the radius leaves meaningful), so that
    midpoint can be off by a small fraction of the radius. The approximate
    learner wants its *estimate* (the midpoint) to be the exact-arithmetic
    result on the midpoints; it computes that on exact points (``center``) and
    keeps the enclosure by widening: the result contains ``ball``.
    """
    c = center.mid()
    return c + arb(0, to_arb(abs_upper(ball - c)))
