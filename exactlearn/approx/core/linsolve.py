"""The two linear solves of the approximate path with first-order radii (the default, non-rigorous mode).

The schedule ends with two linear systems whose matrices are exact integer
designs and whose right-hand sides are balls: the weights ``D vec(W_h) = log
rho_h`` (``D`` square, ``d^2 x d^2``) and the values ``A v_h = c_h`` (least
squares, ``A`` of ``d^2 x d``). Gaussian elimination in ball arithmetic
(``arb_mat.solve``) encloses the solution, but its radii grow with every
elimination step that loses the correlation of two balls: at ``d = H = 4`` the
weights came out with radii 1e4 times the first-order error ``|D^-1| r``, and
at ``d = 32`` (``n = 1024``) the elimination takes minutes at 256 bits.

Here, as for the copy functions in the default mode
(:mod:`~exactlearn.approx.core.copyfun`), the radius is the first-order
propagation of the right-hand side's radii ``r`` -- ``|D^-1| r`` and
``|A^+| r`` (absolute values summed: the worst case over every error within
the radii) -- and the midpoint is the solution on the midpoints at the working
precision:

* weights: ``R``, a float64 inverse of ``D``, gives a first solution, refined by
  ``x += R (b - D x)`` with the residual in arb at the working precision until
  the correction is below its last bits (each step gains about
  ``-log10(cond(D) 2^-53)`` digits); the radii ``|R| r`` in float64 (times
  ``1 + 2^-20``, room for ``R``'s own error);
* values: ``A^+ = (A^T A)^-1 A^T`` exactly (python-flint ``fmpq_mat``, ``d x d``),
  the midpoints ``A^+ mid(c)`` in arb, the radii ``|A^+| r``.

A rigorous run (``rigorous=True``) keeps ``arb_mat.solve``: its enclosures are
certified, these are estimates. Floats (numpy) appear here by design.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from flint import arb, arb_mat, ctx, fmpq_mat

from ...settings import DEFAULT_SETTINGS
from .balls import radius, to_arb

_SETTINGS = DEFAULT_SETTINGS.approx

__all__ = ["weights_first_order", "values_first_order"]

_REFINEMENTS = 60  # iterative refinement steps at most (a step gains at least a bit, or it stops)
_FINAL_BITS = 24  # refinement ends once a step moves the solution by less than 2^(24 - precision)
_INVERSE_SLACK = 1 + 2.0**-20  # |R| r versus |D^-1| r: room for the float64 inverse's error


def _radii(columns: Sequence[Sequence[arb]]) -> np.ndarray:
    """The radii of ``columns[h][i]`` as a float64 array ``(i, h)`` (rounded up to the next float)."""
    out = np.array([[float(radius(b)) for b in column] for column in columns]).T
    return np.nextafter(out, np.inf)


def _balls(mid: arb_mat, rad: np.ndarray) -> list[list[arb]]:
    """Columns of balls ``mid[i, h] +/- rad[i, h]`` (with a floor for the rounding of the midpoint)."""
    floor = 2.0 ** (_SETTINGS.floor_bits - ctx.prec)
    out = []
    for h in range(mid.ncols()):
        column = []
        for i in range(mid.nrows()):
            m = mid[i, h].mid()
            r = float(rad[i, h]) + floor * (1 + abs(float(m)))
            column.append(m + arb(0, to_arb(r)))
        out.append(column)
    return out


def weights_first_order(design: fmpq_mat, columns: Sequence[Sequence[arb]]) -> list[list[arb]] | None:
    """``design^-1 b`` for each column ``b`` (balls), as first-order balls; ``None`` when the float64
    inverse does not converge (a design too ill-conditioned for it: the caller solves by elimination)."""
    n, m = design.nrows(), len(columns)
    D = np.array([int(e.p) for e in design.entries()], dtype=float).reshape(n, n)
    try:
        R = np.linalg.inv(D)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(R)):
        return None
    exact, inverse = arb_mat(design), arb_mat(R.tolist())
    b = arb_mat(n, m, [columns[h][i].mid() for i in range(n) for h in range(m)])
    x = (inverse * b).mid()
    last = np.inf
    for _ in range(_REFINEMENTS):
        step = (inverse * (b - exact * x).mid()).mid()
        x = (x + step).mid()
        change = max(float(abs(e)) for e in step.entries())
        top = max(float(abs(e)) for e in x.entries()) or 1.0
        if change <= 2.0 ** (_FINAL_BITS - ctx.prec) * top:
            break
        if change > last / 2:  # stalled: the residual's rounding (cond(D) 2^-prec) is reached
            if change > 2.0 ** (-ctx.prec / 2) * top:
                return None
            break
        last = change
    else:
        return None
    rad = (np.abs(R) @ _radii(columns)) * _INVERSE_SLACK
    return _balls(x, rad)


def values_first_order(rows: Sequence[Sequence[int]], columns: Sequence[Sequence[arb]]) -> list[list[arb]]:
    """The least-squares ``A^+ c`` of each column ``c`` (balls) for the integer rows ``A``, as first-order
    balls."""
    m, d = len(rows), len(rows[0])
    A = fmpq_mat(m, d, [x for r in rows for x in r])
    pseudo = (A.transpose() * A).inv() * A.transpose()  # exact, d x m
    P = arb_mat(pseudo)
    c = arb_mat(m, len(columns), [columns[h][j].mid() for j in range(m) for h in range(len(columns))])
    mid = (P * c).mid()
    absP = np.abs(np.array([int(e.p) / int(e.q) for e in pseudo.entries()]).reshape(d, m))
    rad = (absP @ _radii(columns)) * _INVERSE_SLACK
    return _balls(mid, rad)
