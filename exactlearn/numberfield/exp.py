"""``exp(W_h)`` in a number field from the measured ``rho``: real logs, lattice reduction, an exact check.

docs/algorithm.md section 2 and docs/number-fields.md. Over ``Q`` the logs of
the ``rho`` are written over a coprime base; a number field has units (``1 + a``
in ``Q(sqrt 2)`` has norm ``-1``) and no unique factorisation of elements, so
that does not carry over. Here, per head:

1. In the chosen real embedding every ``rho_j`` is a positive real, so
   ``W = D^{-1} (log rho_j)_j`` has one real value, computed with arb balls
   (``D`` the integer weight design); ``x = exp(W[a][b])`` is the value of the
   wanted element ``E`` of ``K``.
2. ``E = (w_0 + w_1 a + ... + w_{n-1} a^{n-1}) / L`` with integers ``w, L``:
   ``L x - sum w_k a^k = 0`` is an integer relation among ``x, 1, a, ..., a^{n-1}``,
   found by FLINT's LLL on the lattice spanned by ``(e_k, round(C a^k))`` and
   ``(e_n, round(-C x))`` (:mod:`~exactlearn.numberfield.recognise`). The candidate must be positive
   and its value must overlap ``x``.
3. The candidates are checked **exactly**: ``prod_{a,b} E[a][b]^{M_j[a][b]} = rho_j``
   for every configuration ``j`` (``M_j`` the rows of ``D``). With every
   ``E[a][b] > 0`` this says ``D vec(log E) = (log rho_j)_j``, and ``D`` is
   invertible, so ``log E = W``: the candidate *is* ``exp(W)``. Nothing else is
   ever returned.

Steps 1-2 are tried with integer relations of ``32, 64, ...`` bits up to
``max_bits`` (:attr:`exactlearn.Limits.exp_bits`); if none passes step 3,
:class:`~exactlearn.ReconstructionError` says that ``exp(W)`` is not in ``K``
(or needs larger coordinates).

>>> from flint import fmpq_mat
>>> from exactlearn import NumberField
>>> K = NumberField("a^2 - 2", root=1.414)
>>> E = K("1 + a")                                    # a unit: no coprime base could find it
>>> exp_matrix(K, fmpq_mat([[2]]), [E**2])            # d = 1, log rho = 2 W
((1 + a,),)
"""

from __future__ import annotations

from collections.abc import Sequence
from math import isqrt
from typing import TYPE_CHECKING

from flint import arb, ctx, fmpq_mat

from ..errors import ReconstructionError
from .element import NumberFieldElement
from .recognise import recognise, scale_bits, value

if TYPE_CHECKING:  # annotations only
    from .field import NumberField

__all__ = ["exp_matrix"]

#: The first size (bits of ``w`` and ``L``) of the integer relations tried; doubled up to the limit.
FIRST_BITS = 32


def _magnitude_bits(value: arb) -> int:
    """About ``log2 |value|`` (to plan the precision; never decides anything)."""
    mantissa, exponent = value.mid().man_exp()
    return int(exponent) + int(mantissa.bit_length()) if mantissa != 0 else 0


def _target_values(K: NumberField, inverse: fmpq_mat, rhos: Sequence[NumberFieldElement],
                   accuracy: int) -> tuple[list[arb], arb]:
    """``exp(W[r])`` for every entry ``r`` and the root, as balls of radius below ``2^-accuracy``."""
    prec = accuracy + 64
    for _ in range(8):
        with ctx.workprec(prec):
            alpha = K.root.ball(prec)
            logs = [value(rho, alpha).log() for rho in rhos]
            values = []
            for r in range(inverse.nrows()):
                total = arb(0)
                for j, L in enumerate(logs):
                    coefficient = inverse[r, j]
                    if coefficient != 0:
                        total += arb(coefficient) * L
                values.append(total.exp())
            size = max([0] + [_magnitude_bits(v) for v in values])
            if all(v.rad() < arb(2) ** -accuracy for v in values) and alpha.rad() < arb(2) ** -accuracy:
                return values, alpha
            prec += accuracy + max(size, 0) + 64  # absolute accuracy for values up to 2^size
    raise ReconstructionError("exp(W) could not be evaluated to the accuracy needed")  # pragma: no cover


def _checks(K: NumberField, design: fmpq_mat, rhos: Sequence[NumberFieldElement],
            entries: Sequence[NumberFieldElement]) -> bool:
    """``prod_r entries[r]^design[j, r] == rhos[j]`` for every ``j``, exactly."""
    for j, rho in enumerate(rhos):
        total = K(1)
        for r, e in enumerate(entries):
            power = design[j, r]
            if power != 0:
                total = total * e ** int(power.p)
        if total != rho:
            return False
    return True


def exp_matrix(K: NumberField, design: fmpq_mat, rhos: Sequence[NumberFieldElement],
               max_bits: int = 1024) -> tuple[tuple[NumberFieldElement, ...], ...]:
    """``exp(W)`` with ``design @ vec(W) = (log rho_j)_j``, exactly in ``K`` (see the module docstring)."""
    n_rows = design.nrows()
    d = isqrt(n_rows)
    if d * d != n_rows or design.ncols() != n_rows or len(rhos) != n_rows:
        raise ValueError("the design must be d^2 x d^2 with one rho per row")
    inverse = design.inv()
    bits = FIRST_BITS
    while True:
        scale = scale_bits(K.degree, bits)
        with ctx.workprec(scale + 64):
            values, alpha = _target_values(K, inverse, rhos, scale + 16)
            with ctx.workprec(2 * scale + 128):
                found = [recognise(K, x, alpha, scale) for x in values]
        if all(e is not None and e.sign() > 0 for e in found):
            entries = [e for e in found if e is not None]
            if _checks(K, design, rhos, entries):
                return tuple(tuple(entries[a * d + b] for b in range(d)) for a in range(d))
        if bits >= max_bits:
            raise ReconstructionError(
                f"exp(W) is not in {K}: no entries with coordinates of at most {max_bits} bits give the "
                f"measured rho exactly (the answers fit no model over this field; if its exp(W) has larger "
                f"coordinates, pass limits=Limits(exp_bits=...))")
        bits = min(2 * bits, max_bits)
