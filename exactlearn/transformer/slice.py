"""Step 2: the merged lines, learned exactly on the uniform slice (docs/transformer.md, section 4).

With last token ``0`` every score is ``0``, every head outputs the mean, and
``T([P, 0]) = F(P/2, ..., P/2)``. With the slice's linear part
``l_bar = sum_h l_h`` known from step 1 and ``F`` positively homogeneous, every
rational point ``m`` costs one query of length 2::

    G(m) = 2 T([N m, 0]) / N - l_bar . m = 1/2 sum_L kappa_L |J_L . m|,   J_L = sum_h w_Lh.

The half-loop ``p -> q -> -p`` (two straight segments) crosses every plane
``J_L . m = 0`` exactly once. Region gradients are fitted from ``d`` points
``m + eps e_i`` and checked at ``m`` and at a point on the other side; between
two regions the gradient jumps by ``+-kappa_L J_L``. A kink is accepted where
the two planes meet on the path only if the value there and on both sides
matches; otherwise the interval is bisected.

>>> from exactlearn.transformer import Transformer
>>> truth = Transformer([[[2, 1], [1, 3]]], [[[1, 0], [0, 1]]], [[1, -1]], [2])
>>> learn_slice(truth, (fmpq(1), fmpq(-1)), random.Random(0))
[MergedLine(J=(1, -1), kappa=2)]
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from flint import fmpq, fmpz

from ..exact import dot
from ..settings import DEFAULT_SETTINGS, UniformSliceSettings
from .canonical import Vector, normalise_line
from .errors import Condition, TransformerConditionError
from .pieces import fit_gradient, rank

__all__ = ["MergedLine", "learn_slice"]


class MergedLine(NamedTuple):
    """A line of ``G`` on the uniform slice: ``J_L = sum_h w_Lh`` scaled so that its first
    nonzero entry is 1, and its coefficient ``kappa_L``."""

    J: Vector
    kappa: fmpq


class _Region(NamedTuple):
    """A fitted region of the half-loop: a place ``s`` on it (``0 .. 2``) and ``G``'s gradient there."""

    s: fmpq
    gradient: Vector


@dataclass(frozen=True)
class _HalfLoop:
    """The path ``p -> q -> -p``: ``(1-s) p + s q`` for ``s`` in ``[0, 1]``, then
    ``(2-s) q - (s-1) p`` for ``s`` in ``[1, 2]``."""

    p: Vector
    q: Vector

    def point(self, s: fmpq) -> Vector:
        if s <= 1:
            return tuple((1 - s) * a + s * b for a, b in zip(self.p, self.q))
        return tuple((2 - s) * b - (s - 1) * a for a, b in zip(self.p, self.q))


class _SliceFunction:
    """``G`` on the uniform slice, asked one query at a time, with its region fits counted."""

    def __init__(self, ask: Callable[[list], fmpq], slice_linear: Sequence[fmpq], rng: random.Random,
                 settings: UniformSliceSettings):
        self.ask = ask
        self.slice_linear = tuple(slice_linear)  # l_bar = sum_h l_h
        self.d = len(slice_linear)
        self.rng = rng
        self.settings = settings
        self.fits = 0

    def value(self, m: Sequence[fmpq]) -> fmpq:
        """``G(m)`` from one query ``[N m, 0]``."""
        N = fmpz(1)
        for x in m:
            N = N.lcm(x.q)
        P = tuple(int(x * N) for x in m)
        return 2 * self.ask([P, (0,) * self.d]) / N - dot(self.slice_linear, m)

    def gradient(self, m: Sequence[fmpq]) -> Vector | None:
        """``G``'s gradient at ``m`` from ``d`` points ``m + eps e_i``, checked at ``m`` and on the other
        side of every ``e_i``, or None if no single gradient fits (a plane is that close)."""
        self.fits += 1
        if self.fits > self.settings.max_fits:
            raise TransformerConditionError(Condition.LINES_ON_SLICE,
                                            f"no consistent set of lines after {self.fits - 1} region fits")
        eps = max(abs(x) for x in m) / 2**self.settings.step_exponent
        points = [tuple(x + (eps if i == j else 0) for j, x in enumerate(m)) for i in range(self.d)]
        back = tuple(x - eps * self.rng.randint(1, self.settings.back_steps) for x in m)
        return fit_gradient(points, [self.value(p) for p in points], [m, back],
                            [self.value(m), self.value(back)])

    def fit(self, loop: _HalfLoop, s: fmpq, tries: int) -> Vector | None:
        """The gradient of the region at ``s``, trying up to ``tries`` points from ``s`` on, each a
        random ``nudge`` further along than the one before, or None."""
        for _ in range(tries):
            gradient = self.gradient(loop.point(s))
            if gradient is not None:
                return gradient
            s = s + fmpq(self.rng.randint(1, self.settings.nudge_steps), self.settings.nudge_denominator)
        return None


def _corners(G: _SliceFunction) -> tuple[_HalfLoop, _Region, _Region]:
    """A half-loop whose corners ``p`` (``s = 0``) and ``q`` (``s = 1``) have fitted regions."""
    rng, bound = G.rng, G.settings.corner_bound
    for _ in range(G.settings.corner_draws):
        p = tuple(fmpq(rng.choice((-1, 1)) * rng.randint(1, bound)) for _ in range(G.d))
        q = tuple(fmpq(rng.choice((-1, 1)) * rng.randint(1, bound)) for _ in range(G.d))
        if G.d > 1 and rank([p, q]) < 2:
            continue
        loop = _HalfLoop(p, q)
        at_p = G.fit(loop, fmpq(0), 1)
        if at_p is None:
            continue
        at_q = G.fit(loop, fmpq(1), 1) if G.d > 1 else at_p  # d = 1: the path p -> -p has no corner
        if at_q is not None:
            return loop, _Region(fmpq(0), at_p), _Region(fmpq(1), at_q)
    raise TransformerConditionError(Condition.LINES_ON_SLICE,
                                    "no region gradient could be fitted on the slice")


def learn_slice(ask: Callable[[list], fmpq], slice_linear: Sequence[fmpq], rng: random.Random,
                settings: UniformSliceSettings = DEFAULT_SETTINGS.transformer.uniform_slice,
                ) -> list[MergedLine]:
    """The merged lines ``(J_L, kappa_L)`` of ``G`` on the uniform slice, sorted (module docstring).

    ``slice_linear`` is ``l_bar = sum_h l_h``, the linear part of ``F`` on the slice.
    """
    G = _SliceFunction(ask, slice_linear, rng, settings)
    loop, start, corner = _corners(G)
    end = _Region(fmpq(2), tuple(-x for x in start.gradient))  # G is even: the region of -p
    stack = [(start, corner), (corner, end)] if G.d > 1 else [(start, end)]
    lines: dict[Vector, fmpq] = {}
    while stack:
        a, b = stack.pop()
        if a.gradient == b.gradient:
            continue
        delta = tuple(y - x for x, y in zip(a.gradient, b.gradient))
        if _single_kink(G, loop, a, b, delta):
            J, c = normalise_line(delta)
            kappa = c if dot(J, loop.point(b.s)) > 0 else -c  # delta = kappa sign(J . m_b) J
            if J in lines:
                raise TransformerConditionError(Condition.LINES_ON_SLICE, f"the line {J} was crossed twice")
            lines[J] = kappa
            continue
        low, high = settings.bisection_range
        s = a.s + (b.s - a.s) * fmpq(rng.randint(low, high), settings.bisection_denominator)
        gradient = G.fit(loop, s, settings.fit_tries)
        if gradient is None:
            raise TransformerConditionError(Condition.LINES_ON_SLICE,
                                            "no region gradient could be fitted on the slice")
        middle = _Region(s, gradient)  # at s, where the fit began
        stack += [(a, middle), (middle, b)]
    return [MergedLine(J, kappa) for J, kappa in sorted(lines.items())]


def _single_kink(G: _SliceFunction, loop: _HalfLoop, a: _Region, b: _Region, delta: Vector) -> bool:
    """Whether ``G`` between regions ``a`` and ``b`` has a single kink: where ``delta = gamma_b - gamma_a``
    vanishes on the straight piece from ``m_a`` to ``m_b``, ``G`` and both sides of it must match
    ``gamma_a`` and ``gamma_b``."""
    ma, mb = loop.point(a.s), loop.point(b.s)
    da, db = dot(delta, ma), dot(delta, mb)
    if da == db:
        return False
    t = da / (da - db)  # delta . ((1-t) ma + t mb) = 0
    if not 0 < t < 1:
        return False
    margin = fmpq(1, 2**G.settings.kink_margin_exponent)
    checks = ((t, a.gradient), (t - margin * t, a.gradient), (t + margin * (1 - t), b.gradient))
    for place, gradient in checks:
        m = tuple((1 - place) * x + place * y for x, y in zip(ma, mb))
        if G.value(m) != dot(gradient, m):
            return False
    return True
