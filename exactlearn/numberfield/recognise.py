"""Elements of a number field from their value in the real embedding: lattice reduction, then exact checks.

An element ``x = (w_0 + w_1 a + ... + w_{n-1} a^{n-1}) / L`` of ``K = Q(a)``
(integers ``w``, ``L``) satisfies the integer relation
``L x - sum w_k a^k = 0`` among the real numbers ``x, 1, a, ..., a^{n-1}``.
:func:`recognise` finds short relations with FLINT's LLL on the lattice spanned
by ``(e_k, round(C a^k))`` and ``(e_n, round(-C x))`` (``C = 2^scale_bits``) and
returns the first candidate whose value overlaps the ball ``x``. A candidate
is only a proposal: the callers check it exactly (``q(r) == 0`` for a root,
``prod E^M == rho`` for ``exp(W)``) and try larger relations when it fails.

>>> from flint import arb, ctx
>>> from exactlearn import NumberField
>>> K = NumberField("a^2 - 2", root=1.414)
>>> with ctx.workprec(200):
...     alpha = K.root.ball(200)
...     print(recognise(K, value(K("3/7 - 2*a/5"), alpha), alpha, 120))
3/7 - 2*a/5
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flint import arb, arb_poly, fmpq, fmpz_mat

from .element import NumberFieldElement

if TYPE_CHECKING:  # annotations only
    from .field import NumberField

__all__ = ["recognise", "value", "scale_bits"]


def value(x: NumberFieldElement, alpha: arb) -> arb:
    """``x`` at the ball ``alpha`` (the root), at the current arb precision."""
    return arb_poly([arb(c) for c in x.poly.coeffs()])(alpha) if not x.poly.is_zero() else arb(0)


def scale_bits(degree: int, bits: int) -> int:
    """The scale ``log2 C`` of the lattice for relations whose integers have about ``bits`` bits."""
    return (degree + 1) * bits + 16 * degree + 32


def _round(ball: arb) -> int:
    integer = ball.mid().floor().unique_fmpz()  # the floor of an exact midpoint is one integer
    assert integer is not None
    return int(integer)


def recognise(K: NumberField, x: arb, alpha: arb, scale: int) -> NumberFieldElement | None:
    """An element of ``K`` whose value at ``alpha`` overlaps ``x``, from the reduced relation lattice scaled
    by ``2^scale``; ``None`` if no reduced vector gives one."""
    n = K.degree
    factor = arb(2) ** scale
    rows = [[int(i == k) for i in range(n + 1)] + [_round(alpha**k * factor)] for k in range(n)]
    rows.append([0] * n + [1, _round(-x * factor)])
    reduced = fmpz_mat(rows).lll()
    for r in range(n + 1):
        L = reduced[r, n]
        if L == 0:
            continue
        candidate = K.from_coordinates([fmpq(reduced[r, k], L) for k in range(n)])
        if value(candidate, alpha).overlaps(x):
            return candidate
    return None
