"""The residual test and the residual's linear part (docs/transformer.md, sections 3 and 5b).

Along ``(0^k, x)`` every head outputs ``o_h = omega_h x / (k + omega_h)``, so the
odd part ``g((0^k, x)) = T((0^k, x)) - T((0^k, -x))`` is a rational function of
type ``(H, H)`` in ``k``: with a residual connection ``y = x_N + sum_h V_h o_h``
it tends to ``2 l_res . x`` as ``k -> oo`` (``l_res = 1/2 sum_j a_j u_j``),
without one to zero.

>>> from exactlearn.transformer import Transformer
>>> truth = Transformer.random(d=2, heads=1, width=2, seed=0, residual=True)
>>> l_res = learn_residual_linear(truth, d=2, H=1, cap=10, rng=random.Random(0))
>>> l_res == tuple(sum((a * u[i] for a, u in zip(truth.a, truth.U)), fmpq(0)) / 2 for i in range(2))
True
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from flint import fmpq

from ..errors import ReconstructionError
from ..ratfun import reconstruct_nn
from ..settings import DEFAULT_SETTINGS, TransformerSettings
from .canonical import Vector
from .errors import Condition, TransformerConditionError

__all__ = ["learn_residual_linear", "limit_at_infinity", "residual_limit"]


def limit_at_infinity(ks: Sequence[int], ys: Sequence[fmpq], degree: int) -> fmpq | None:
    """``lim_{k -> oo} R(k)`` for the type-``(degree, degree)`` function ``R`` through the first
    ``2 degree + 1`` samples, or None if there is none, it has a pole at infinity, or it misses
    one of the remaining samples.

    >>> ks = range(5)
    >>> limit_at_infinity(ks, [3 + fmpq(2) / (1 + k) for k in ks], 1)
    3
    >>> limit_at_infinity(ks, [3 + fmpq(2) / (1 + k) + (k == 4) for k in ks], 1) is None
    True
    """
    ks, m = list(ks), 2 * degree + 1
    try:
        R = reconstruct_nn(ks[:m], ys[:m], degree)
        if any(R(k) != y for k, y in zip(ks[m:], ys[m:])):
            return None
        return R.at_infinity()
    except (ReconstructionError, ZeroDivisionError):  # no such R, a pole at a sample, or at infinity
        return None


def residual_limit(ask: Callable[[list], fmpq], d: int, H: int, cap: int, rng: random.Random,
                   x: tuple[int, ...] | None = None,
                   settings: TransformerSettings = DEFAULT_SETTINGS.transformer) -> fmpq | None:
    """``lim g((0^k, x))`` as ``k -> oo`` (``x`` random unless given): ``2 l_res . x``, zero without
    a residual; or None if ``g`` along ``k`` is not of that form, or its queries would be longer
    than ``cap``. Asks ``k = 0 .. 2H + checks`` (``settings.residual_test_checks``)."""
    samples = 2 * H + 1 + settings.residual_test_checks
    if samples > cap:  # the longest query, k = samples - 1 zeros and x
        return None
    if x is None:
        x = tuple(rng.choice(settings.residual_test_entries) for _ in range(d))
    zero, negated = (0,) * d, tuple(-t for t in x)
    ks = list(range(samples))
    ys = [ask([zero] * k + [x]) - ask([zero] * k + [negated]) for k in ks]
    return limit_at_infinity(ks, ys, H)


def learn_residual_linear(ask: Callable[[list], fmpq], d: int, H: int, cap: int, rng: random.Random,
                          settings: TransformerSettings = DEFAULT_SETTINGS.transformer) -> Vector:
    """``l_res = 1/2 sum_j a_j u_j`` from the limits of ``g((0^k, e_i))``, ``i = 1..d``."""
    out = []
    for i in range(d):
        limit = residual_limit(ask, d, H, cap, rng, tuple(int(j == i) for j in range(d)), settings)
        if limit is None:
            raise TransformerConditionError(
                Condition.ODD_ATTENTION,
                "g((0,...,0,e_i)) along the number of zeros is not attention plus a constant")
        out.append(limit / 2)
    return tuple(out)
