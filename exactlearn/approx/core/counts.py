"""Copy counts of the approximate path: the paper's ``k = 0..2H``, or geometric ones beyond it.

A measurement configuration asks ``S_k(x, z)`` (``k`` copies of ``z``, then
``x``) and fits ``R(k) = a + sum_h c_h / (1 + k rho_h)``. The paper's schedule
asks ``k = 0..2H``: the fewest answers that determine the ``2H + 1``
parameters, and the schedule's maximum query length ``2H + 1``. With exact
answers that is all there is to it. With float answers the fit's condition (how
much an answer error moves a score ``log rho_h``) decides the accuracy, and
samples at ``k = 0..2H`` see only poles ``-1/rho_h`` near ``[-1, -1/(2H)]``:
with ideally placed poles the condition is about 24, 9e2, 1.2e5, 5.8e6 for
``H = 1..4`` and above 1e12 for ``H = 8`` (measured: docs/approximate.md,
"Copy counts"), so float64 answers cannot resolve eight heads at all.

**Geometric copy counts** ``k = 0, 1, ..., K`` spaced evenly on a log scale
(``geometric_points = 3H + 1`` of them, ``K = geometric_top``) see poles
spread over ``[-1, -1/K]``: heads whose scores differ by a few units each get
their own range of ``k``, and the fit (least squares, more answers than
parameters) is conditioned like 10^2 to 10^6 where the paper's counts give
10^6 to 10^13. (Eight heads with random scores crowd, and then float64 answers
resolve few configurations even so: docs/approximate.md, "Limits measured".)
The price: more queries per configuration (``3H + 1`` instead of ``2H + 1``) and
queries up to ``K + 1`` tokens long -- the paper's maximum length
is a statement about its exact schedule, and a run with geometric counts
reports its own (:attr:`~exactlearn.approx.ApproxRecovery.copy_counts`).

**Rational copy ratios.** Softmax attention without positional encoding sees only
the multiset of keys, so the query ``(z,)*k + (x,)*m`` (``x`` last) answers
``R(t)`` at the rational ``t = k/m``. Integer counts sample ``t >= 1`` only, where
two heads with ``rho > 1`` both look like ``c/(rho t)``; ratios ``t`` from ``1/K`` to
``K`` (:func:`ratio_points`, ``3H`` of them and ``0``, evenly spaced in ``log t``,
``K = ratio_top``) see poles over twice the log range. From the true ``d = 8, H = 8``
torch layer at scale 2, 46% of random configurations are conditioned below 1e11 with
them, 0.9% with geometric counts (docs/approximate.md, "Limits measured"). Same number
of queries as geometric counts, queries up to ``K + 1`` tokens.

:class:`CopyCounts` names the choices of :func:`~exactlearn.approx.learn_approx`'s
``copy_counts=``; ``"auto"`` keeps the paper's counts where float64 reaches the
library's targets with them (float64 answers, up to ``H = 4`` heads and ``d = 8``),
takes geometric ones beyond, and ratios from ``ratio_heads`` heads on (where no default
guide exists and geometric counts resolve almost no configuration).

>>> geometric_counts(2)
(0, 1, 5, 28, 147, 776, 4096)
>>> resolve_counts("auto", 4, 4) is None, len(resolve_counts("auto", 8, 8))
(True, 25)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ...errors import InvalidArgumentError
from ...settings import DEFAULT_SETTINGS, ApproxSettings
from ...states import StrEnum

__all__ = ["CopyCounts", "geometric_counts", "ratio_points", "ratio_query", "query_length", "resolve_counts",
           "pseudo_inverse"]


class CopyCounts(StrEnum):
    """The copy counts :func:`~exactlearn.approx.learn_approx` asks a measurement configuration at."""

    AUTO = "auto"  # the paper's where float64 suffices with them, geometric beyond
    PAPER = "paper"  # k = 0..2H (and 1..2H-1 for a matching configuration)
    GEOMETRIC = "geometric"  # geometric_points counts from 0 to geometric_top, spaced on a log scale
    RATIOS = "ratios"  # 0 and rational ratios t = k/m from 1/ratio_top to ratio_top, spaced on a log scale


def geometric_counts(heads: int, settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> tuple[int, ...]:
    """``0`` and ``3H`` distinct integers from 1 to ``geometric_top``, evenly spaced in ``log k``
    (rounded; a collision moves up by one)."""
    n = settings.geometric_points_per_head * heads
    top = settings.geometric_top
    out = [0]
    for i in range(n):
        k = max(out[-1] + 1, round(top ** (i / (n - 1)))) if n > 1 else 1
        out.append(k)
    return tuple(out)


def ratio_points(heads: int, top: int | None = None, settings: ApproxSettings = DEFAULT_SETTINGS.approx
                 ) -> tuple[int | Fraction, ...]:
    """``0`` and ``3H`` distinct rational copy ratios ``t = k/m`` from ``1/K`` to ``K`` (``K = top``, default
    ``ratio_top``), evenly spaced in ``log t`` and symmetric about ``t = 1``: each is the fraction of smallest
    denominator (of ``max(t, 1/t)``) within ``ratio_tolerance`` of its place in ``log t``, so that a query
    ``(z,)*k + (x,)*m`` is at most ``K + 1`` tokens long.

    >>> [str(t) for t in ratio_points(2)]
    ['0', '1/4096', '1/147', '2/11', '11/2', '147', '4096']
    """
    n = settings.geometric_points_per_head * heads
    top = settings.ratio_top if top is None else top
    out = [Fraction(0)]
    for i in range(n):
        e = 2 * i / (n - 1) - 1 if n > 1 else 0.0
        u = float(top) ** abs(e)  # the place of max(t, 1/t) >= 1
        q, best = 1, Fraction(max(1, round(u)))
        while q < top:
            p = max(1, round(u * q))
            if p + q > top + 1:
                break
            best = Fraction(p, q)
            if abs(math.log(p / (q * u))) <= settings.ratio_tolerance:
                break
            q += 1
        t = best if e >= 0 else 1 / best
        if t <= out[-1]:  # (a tolerance wider than the spacing)
            raise InvalidArgumentError(f"ratio copy points collide at K = {top} with {n} points; "
                                       f"lower ratio_tolerance or raise K")
        out.append(t)
    return tuple(int(t) if t.denominator == 1 else t for t in out)


def ratio_query(x: Any, z: Any, t: int | Fraction) -> tuple:
    """The query of copy ratio ``t = k/m``: ``k`` copies of ``z``, then ``m`` copies of ``x`` (``x`` last;
    ``m = 1``, a copy count ``k``: :func:`~exactlearn.schedule.copies_query`). Softmax attention sees
    only the multiset of keys, so its answer is the copy function at ``t``.

    >>> ratio_query("x", "z", Fraction(2, 3)), ratio_query("x", "z", 2)
    (('z', 'z', 'x', 'x', 'x'), ('z', 'z', 'x'))
    """
    k, m = (t, 1) if isinstance(t, int) else (t.numerator, t.denominator)
    return (z,) * k + (x,) * m


def query_length(t: int | Fraction) -> int:
    """The length of :func:`ratio_query` at ``t``: ``k + m``."""
    return t + 1 if isinstance(t, int) else t.numerator + t.denominator


def resolve_counts(spec: Any, d: int, heads: int, rigorous: bool = False, eps: float = 0.0,
                   settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> tuple[int | Fraction, ...] | None:
    """The measurement copy counts of ``copy_counts=spec`` (``None``: the paper's ``0..2H``).

    A sequence gives them explicitly (``0`` and at least ``2H`` positive counts, increasing; integers, or
    ``Fraction`` copy ratios ``k/m``, asked as ``(z,)*k + (x,)*m``).
    """
    if isinstance(spec, str):
        try:
            mode = CopyCounts(spec)
        except ValueError:
            raise InvalidArgumentError(f"copy_counts must be 'auto', 'paper', 'geometric', 'ratios' or a "
                                       f"sequence of copy numbers, got {spec!r}") from None
        beyond = _beyond_paper(d, heads, eps, settings)
        if mode is CopyCounts.PAPER or (mode is CopyCounts.AUTO and not beyond):
            return None
        counts: Sequence[int | Fraction]
        if mode is CopyCounts.RATIOS or (mode is CopyCounts.AUTO and heads >= settings.ratio_heads):
            counts = ratio_points(heads, settings=settings)
        else:
            counts = geometric_counts(heads, settings)
    else:
        counts = tuple(int(k) if isinstance(k, Fraction) and k.denominator == 1 else k for k in spec)
        if (not counts or counts[0] != 0 or len(counts) < 2 * heads + 1
                or any(not isinstance(k, (int, Fraction)) or isinstance(k, bool) for k in counts)
                or any(b <= a for a, b in zip(counts, counts[1:]))):
            raise InvalidArgumentError(f"copy_counts: 0 and at least 2H = {2 * heads} increasing positive "
                                       f"integers or fractions, got {spec!r}")
    if rigorous:
        raise InvalidArgumentError("rigorous=True certifies copy functions through 2H + 1 answers only; "
                                   "pass copy_counts='paper'")
    return tuple(counts)


def _beyond_paper(d: int, heads: int, eps: float, settings: ApproxSettings) -> bool:
    """Whether ``"auto"`` takes geometric counts: from ``geometric_heads`` heads on, from
    ``geometric_heads_large`` heads at token width ``geometric_width`` and beyond, and for answers
    declared no better than ``geometric_eps`` (float32)."""
    return (heads >= settings.geometric_heads or eps >= settings.geometric_eps
            or (heads >= settings.geometric_heads_large and d >= settings.geometric_width))


def pseudo_inverse(M: np.ndarray, cutoff: float = 1e-14) -> np.ndarray:
    """The least-squares map ``(M^T M)^-1 M^T`` of a float matrix with more rows than columns (a copy
    function's Jacobian at more counts than parameters), through the SVD of ``M`` with its columns
    scaled to unit size, so that a column that is small only in its units (a pole far beyond the counts)
    is kept; ``inf`` entries when the scaled matrix is singular to ``cutoff`` (floats by design)."""
    if not np.all(np.isfinite(M)):
        return np.full(M.T.shape, np.inf)
    norms = np.linalg.norm(M, axis=0)
    if not np.all(norms > 0):
        return np.full(M.T.shape, np.inf)
    U, sv, Vt = np.linalg.svd(M / norms, full_matrices=False)
    if sv[-1] <= cutoff * sv[0]:
        return np.full(M.T.shape, np.inf)
    return (Vt.T / sv) @ U.T / norms[:, None]
