"""Step 2: the merged lines, learned exactly on the uniform slice (docs/transformer.md, section 4).

With last token ``0`` every score is ``0``, every head outputs the mean, and
``T([P, 0]) = F(P/2, ..., P/2)``. With the linear part ``lbar = sum_h l_h`` known
from step 1 and ``F`` positively homogeneous, every rational point ``m`` costs
one query of length 2::

    G(m) = 2 T([N m, 0]) / N - lbar . m = 1/2 sum_L kappa_L |J_L . m|,   J_L = sum_h w_Lh.

The half-loop ``p -> q -> -p`` (two straight segments) crosses every plane
``J_L . m = 0`` exactly once. Region gradients are fitted from ``d`` points
``m + eps e_i`` and checked at ``m``; between two regions the gradient jumps by
``+-kappa_L J_L``. A kink is accepted where the two planes meet on the path
only if the value there and on both sides (``+-eta``) matches; otherwise the
interval is bisected.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from flint import fmpq, fmpz

from ..exact import dot
from .canonical import normalise_line
from .errors import Condition, TransformerConditionError
from .pieces import fit_gradient, rank

__all__ = ["MergedLine", "learn_slice"]

MergedLine = tuple[tuple[fmpq, ...], fmpq]  # (J normalised: first nonzero entry 1, kappa)
EPS = fmpq(1, 2**24)
MAX_FITS = 60


class _Slice:
    def __init__(self, ask: Callable[[list], fmpq], lbar: Sequence[fmpq], rng: random.Random):
        self.ask = ask
        self.lbar = tuple(lbar)
        self.d = len(lbar)
        self.rng = rng
        self.fits = 0

    def value(self, m: Sequence[fmpq]) -> fmpq:
        """``G(m)`` from one query ``[N m, 0]``."""
        N = fmpz(1)
        for x in m:
            N = N.lcm(x.q)
        P = tuple(int(x * N) for x in m)
        return 2 * self.ask([P, (0,) * self.d]) / N - dot(self.lbar, m)

    def gradient(self, m: Sequence[fmpq]) -> tuple[fmpq, ...] | None:
        self.fits += 1
        if self.fits > MAX_FITS:
            raise TransformerConditionError(Condition.LINES_ON_SLICE,
                                            f"no consistent set of lines after {MAX_FITS} region fits")
        scale = max(abs(x) for x in m) * EPS
        pts = [tuple(x + (scale if i == j else 0) for j, x in enumerate(m)) for i in range(self.d)]
        back = tuple(x - scale * self.rng.randint(1, 3) for x in m)  # the other side of every e_i
        return fit_gradient(pts, [self.value(p) for p in pts], [m, back], [self.value(m), self.value(back)])


def _point(p, q, s: fmpq) -> tuple[fmpq, ...]:
    """The half-loop: ``(1-s) p + s q`` on ``[0, 1]``, ``(2-s) q - (s-1) p`` on ``[1, 2]``."""
    if s <= 1:
        return tuple((1 - s) * a + s * b for a, b in zip(p, q))
    return tuple((2 - s) * b - (s - 1) * a for a, b in zip(p, q))


def learn_slice(ask: Callable[[list], fmpq], lbar: Sequence[fmpq], rng: random.Random) -> list[MergedLine]:
    """The merged lines ``(J_L, kappa_L)`` of ``G`` on the uniform slice (module docstring)."""
    sl = _Slice(ask, lbar, rng)
    d = sl.d
    fitted: dict[fmpq, tuple] = {}

    def fit(s: fmpq, tries: int = 4) -> tuple | None:
        for _ in range(tries):
            g = sl.gradient(_point(p, q, s))
            if g is not None:
                fitted[s] = g
                return g
            s = s + fmpq(rng.randint(1, 999), 10**6)  # on a plane (or eps too coarse): move a little
        return None

    for _attempt in range(8):  # the corners p and q must not lie on a plane
        p = tuple(fmpq(rng.choice((-1, 1)) * rng.randint(1, 99)) for _ in range(d))
        q = tuple(fmpq(rng.choice((-1, 1)) * rng.randint(1, 99)) for _ in range(d))
        if d > 1 and rank([p, q]) < 2:
            continue
        g0 = fit(fmpq(0), 1)
        g1 = (fit(fmpq(1), 1) if d > 1 else g0) if g0 is not None else None
        if g1 is not None:
            break
    else:
        raise TransformerConditionError(Condition.LINES_ON_SLICE,
                                        "no region gradient could be fitted on the slice")
    assert g0 is not None and g1 is not None
    g2 = tuple(-x for x in g0)  # G is even: the region of -p has gradient -gamma(p)
    if d > 1:
        stack = [(fmpq(0), g0, fmpq(1), g1), (fmpq(1), g1, fmpq(2), g2)]
    else:
        stack = [(fmpq(0), g0, fmpq(2), g2)]
    lines: dict[tuple[fmpq, ...], fmpq] = {}
    while stack:
        sa, ga, sb, gb = stack.pop()
        if ga == gb:
            continue
        delta = tuple(y - x for x, y in zip(ga, gb))
        found = _kink(sl, p, q, sa, ga, sb, gb, delta)
        if found is not None:
            J, c = normalise_line(delta)
            mb = _point(p, q, sb)
            kappa = c if dot(J, mb) > 0 else -c  # delta = kappa sign(J . m_b) J
            if J in lines:
                raise TransformerConditionError(Condition.LINES_ON_SLICE, f"the line {J} was crossed twice")
            lines[J] = kappa
            continue
        sm = sa + (sb - sa) * fmpq(rng.randint(300, 700), 1000)
        gm = fit(sm)
        if gm is None:
            raise TransformerConditionError(Condition.LINES_ON_SLICE,
                                            "no region gradient could be fitted on the slice")
        stack += [(sa, ga, sm, gm), (sm, gm, sb, gb)]
    return sorted(lines.items())


def _kink(sl: _Slice, p, q, sa, ga, sb, gb, delta) -> fmpq | None:
    """The kink between regions ``a`` and ``b`` if it is a single one, else None."""
    ma, mb = _point(p, q, sa), _point(p, q, sb)
    da, db = dot(delta, ma), dot(delta, mb)
    if da == db:
        return None
    t = da / (da - db)  # delta . ((1-t) ma + t mb) = 0 on the straight piece between a and b
    if not 0 < t < 1:
        return None
    eta = fmpq(1, 2**20)
    for tt, g in ((t, ga), (t - eta * t, ga), (t + eta * (1 - t), gb)):
        m = tuple((1 - tt) * x + tt * y for x, y in zip(ma, mb))
        if sl.value(m) != dot(g, m):
            return None
    return t
