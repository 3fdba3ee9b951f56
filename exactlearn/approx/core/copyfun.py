"""The copy function over real balls: fit ``R(k) = a + sum_h c_h / (1 + k rho_h)`` and certify it.

docs/algorithm.md section 3 over the reals. The exact path reconstructs ``R`` as a
reduced fraction and reads off poles and residues. With approximate answers a
"reduced fraction" does not exist (noise makes every fraction irreducible), so
this module works with the attention parameters ``theta = (a, c_1..c_n,
rho_1..rho_n)`` directly:

1. **Guess** (floating point at the working precision, midpoints only): solve
   the linearised interpolation system ``p(k_i) = y_i q(k_i)`` with ``q(0) = 1``
   (python-flint ``arb_mat.solve(algorithm="approx")``, LU on points), take the
   roots of ``q`` (``acb_poly.roots``), ``rho = -1/root``,
   ``c = rho p(root) / q'(root)``, ``a = p_n / q_n``; polish by Newton's method.
2. **Error radii.** Default: first-order estimates, ``FIRST_ORDER_SAFETY`` times
   the linearised propagation ``|J^-1| r`` of the data radii ``r``.
   With ``rigorous=True``, **certify** (python-flint ``arb``): the parametric Krawczyk operator
   ``K(X) = theta0 - L F(theta0, Y) + (I - L J(X)) (X - theta0)``, with ``Y``
   the answers as balls of radius ``eps`` and ``L`` an approximate inverse of the
   Jacobian. If ``K(X)`` lies in the interior of the box ``X``, then for every
   data vector in ``Y`` the equations have exactly one solution in ``X``, and it
   lies in ``K(X)`` (Krawczyk 1969; see Rump, "Verification methods", Acta Numerica 2010). A
   type-``(n, n)`` interpolant through ``2n + 1`` points is unique, so the true
   heads of this configuration lie in the returned balls -- provided the oracle
   is an attention with ``n`` heads answering within ``eps``.

Every failure (singular system, complex or positive poles, no certificate) is
reported as :class:`Uncertified` with a reason; the field turns it into "fewer
heads than expected", which the schedule treats as a degenerate configuration
(redrawn, counted). Only a certified contradiction (a pole certified to be
non-negative) is a :class:`~exactlearn.ReconstructionError`.

Either way the radii are about ``sum_i |d theta / d y_i| * eps`` (the quantity
:mod:`exactlearn.approx.bounds` computes), and the midpoints are the Newton solution on the
midpoints of the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import mpmath
from flint import acb_poly, arb, arb_mat, arb_poly, ctx

from ...errors import ReconstructionError
from ...ratfun import with_known_zero
from ...settings import DEFAULT_SETTINGS
from .balls import abs_upper, recenter, to_arb, to_mpf

__all__ = ["Uncertified", "CertifiedCopyFunction", "certify_copy_function", "condition", "FIRST_ORDER_SAFETY"]

_SETTINGS = DEFAULT_SETTINGS.approx

#: Factor on the first-order radii ``|J^-1| r`` in the non-rigorous mode
#: (:attr:`~exactlearn.settings.ApproxSettings.first_order_safety`).
FIRST_ORDER_SAFETY = _SETTINGS.first_order_safety


class Uncertified(Exception):
    """The data do not certify ``n`` separated heads (too much noise, or a degenerate draw)."""


@dataclass(frozen=True)
class CertifiedCopyFunction:
    """Balls for ``a = R(oo)`` and the ``(rho_h, c_h)`` pairs (sorted by the midpoint of ``rho``)."""

    at_infinity: arb
    terms: tuple[tuple[arb, arb], ...]
    #: a least-squares fit's weighted residual per degree of freedom: the answers' root-mean-square
    #: error in units of their radius ``eps``, as this fit shows it; ``None`` without spare equations
    noise: mpmath.mpf | None = None


@dataclass(frozen=True)
class _Row:
    k: int | None  # copy number (numerator of a copy ratio t = k/m), or None for the known value at infinity
    y: arb
    m: int = 1  # the denominator of the copy ratio: ``R(k/m)``, asked as ``(z,)*k + (x,)*m``


def _ratio(t: Any) -> tuple[int, int]:
    """``(k, m)`` of a copy count (an integer) or a copy ratio ``t = k/m`` (a ``Fraction``), ``m > 0``."""
    if isinstance(t, int):
        return t, 1
    if isinstance(t, Fraction):
        return t.numerator, t.denominator
    return int(t), 1


def _rows(points, values, at_zero, at_infinity) -> list[_Row]:
    points, values = with_known_zero(points, values, at_zero)
    rows = []
    for t, y in zip(points, values):
        k, m = _ratio(t)
        rows.append(_Row(k, y, m))
    if at_infinity is not None:
        rows.append(_Row(None, at_infinity))
    return rows


# -- the model equations F(theta) - y, in any arithmetic (mpf or arb) -------------------
def _residual(theta, rows, n, one):
    a, c, rho = theta[0], theta[1 : n + 1], theta[n + 1 :]
    out = []
    for row in rows:
        if row.k is None:
            out.append(a - row.y)
        else:
            total = a
            for h in range(n):  # c / (1 + t rho) = c m / (m + k rho); m = 1 for a copy count
                total = total + (c[h] if row.m == 1 else c[h] * row.m) / (row.m * one + row.k * rho[h])
            out.append(total - row.y)
    return out


def _jacobian(theta, rows, n, one):
    c, rho = theta[1 : n + 1], theta[n + 1 :]
    zero = one - one
    out = []
    for row in rows:
        if row.k is None:
            out.append([one] + [zero] * (2 * n))
            continue
        line = [one]
        denominators = [row.m * one + row.k * rho[h] for h in range(n)]  # m (1 + t rho)
        line += [row.m * one / den for den in denominators]
        line += [-(c[h] * (row.k * row.m)) / (denominators[h] * denominators[h]) for h in range(n)]
        out.append(line)
    return out


# -- step 1: an approximate solution (midpoints, floating point) ---------------------------
def _approx_solve(matrix: list[list[arb]], rhs: list[list[arb]]) -> list[list[arb]] | None:
    """Floating-point solve on exact points (python-flint ``arb_mat.solve(algorithm="approx")``)."""
    m, k = len(matrix), len(rhs[0])
    A = arb_mat(m, m, [e.mid() for line in matrix for e in line])
    B = arb_mat(m, k, [e.mid() for line in rhs for e in line])
    try:
        X = A.solve(B, algorithm="approx")
    except ZeroDivisionError:
        return None
    out = [[X[i, j].mid() for j in range(k)] for i in range(m)]
    if not all(e.is_finite() for line in out for e in line):
        return None
    return out


def _guess(rows: list[_Row], n: int) -> list[arb]:
    """The copy function through the midpoints of the data, as exact points ``(a, c, rho)``."""
    one, zero = arb(1), arb(0)
    matrix, rhs = [], []
    for r in rows:
        y = r.y.mid()
        if r.k is None:  # p_n - A q_n = 0
            line = [zero] * (2 * n + 1)
            line[n] = one
            line[2 * n] = -y
            matrix.append(line)
            rhs.append([zero])
        else:  # p(t) - y q(t) = 0 times m^n: homogeneous in (k, m), exact integers
            k, m = arb(r.k), arb(r.m)
            matrix.append([k**i * m ** (n - i) for i in range(n + 1)]
                          + [-y * k**j * m ** (n - j) for j in range(1, n + 1)])
            rhs.append([y * m**n])
    sol = _approx_solve(matrix, rhs)
    if sol is None:
        raise Uncertified("the linearised interpolation system is singular (fewer heads show)")
    theta = _parameters([sol[i][0] for i in range(n + 1)], [one] + [sol[n + 1 + j][0] for j in range(n)], n)
    # Newton polish on the midpoints
    mids = [_Row(r.k, r.y.mid(), r.m) for r in rows]
    for _ in range(_SETTINGS.newton_steps):
        residual = [[e] for e in _residual(theta, mids, n, one)]
        step = _approx_solve(_jacobian(theta, mids, n, one), residual)
        if step is None:
            raise Uncertified("the Jacobian of the copy function is singular")
        theta = [(t - step[i][0]).mid() for i, t in enumerate(theta)]
    return theta


def _parameters(p: list[arb], q: list[arb], n: int) -> list[arb]:
    """``(a, c, rho)`` of ``p / q`` (``q(0) = 1``): the poles are the roots of ``q``."""
    if q[n] == 0:
        raise Uncertified("the denominator has degree < n (fewer heads show)")
    try:
        roots = acb_poly(q).roots()
    except (ValueError, ArithmeticError):
        raise Uncertified("the poles could not be separated") from None
    P, dQ = arb_poly(p), arb_poly(q).derivative()
    rhos, cs = [], []
    for root in roots:
        # the ball of an isolated root of the (midpoint) polynomial: a real root's ball meets the real axis
        if not root.imag.contains(0):
            raise Uncertified("two poles form a complex pair (nearly equal heads, or too much noise)")
        re = root.real.mid()
        if not re < 0:
            raise Uncertified("a pole is not negative")
        dqk = dQ(re)
        if dqk.contains(0):
            raise Uncertified("a pole is not simple")
        rho = (-1 / re).mid()
        rhos.append(rho)
        cs.append((rho * P(re) / dqk).mid())
    return [(p[n] / q[n]).mid()] + cs + rhos


def _guess_least_squares(rows: list[_Row], n: int, weights: list[arb]) -> list[arb]:
    """A first ``(a, c, rho)`` from more equations than unknowns: the linearised system
    ``p(k_i) - y_i q(k_i) = 0`` in weighted least squares, each row divided by ``|q(k_i)|`` of the last
    solution (Sanathanan-Koerner iteration: the rows then weigh like ``R(k_i) - y_i``), columns scaled to
    unit size before the normal equations are solved."""
    one, zero = arb(1), arb(0)
    m = 2 * n + 1
    scale = [one] * len(rows)
    p: list[arb] = []
    q: list[arb] = []
    for _ in range(_SETTINGS.linearised_sweeps):
        matrix, rhs = [], []
        for r, w, t in zip(rows, weights, scale):
            y, f = r.y.mid(), w / t
            if r.k is None:
                line = [zero] * m
                line[n], line[2 * n] = f, -y * f
                matrix.append(line)
                rhs.append(zero)
            else:  # homogeneous in (k, m) as in _guess; t is the weight's |m^n q(t)|
                k, mm = arb(r.k), arb(r.m)
                matrix.append([f * k**i * mm ** (n - i) for i in range(n + 1)]
                              + [-y * f * k**j * mm ** (n - j) for j in range(1, n + 1)])
                rhs.append(y * f * mm**n)
        norms = [mpmath.sqrt(mpmath.fsum(to_mpf(line[a]) ** 2 for line in matrix)) or 1 for a in range(m)]
        A = arb_mat(matrix) * _diagonal([to_arb(1 / c) for c in norms])
        At = A.transpose()
        try:
            sol = (At * A).solve(At * arb_mat([[e] for e in rhs]), algorithm="approx")
        except ZeroDivisionError:
            raise Uncertified("the linearised least-squares system is singular (fewer heads show)") from None
        if not all(sol[a, 0].is_finite() for a in range(m)):
            raise Uncertified("the linearised least-squares system is singular (fewer heads show)")
        x = [(sol[a, 0] / to_arb(norms[a])).mid() for a in range(m)]
        p, q = x[: n + 1], [one] + x[n + 1 :]
        scale = [one if r.k is None else abs(_homogeneous(q, r.k, r.m)).mid() for r in rows]
        if any(not t > 0 for t in scale):
            raise Uncertified("a pole sits on a sampled copy count")
    return _parameters(p, q, n)


def _homogeneous(q: list[arb], k: int, m: int) -> arb:
    """``m^n q(k/m) = sum_j q_j k^j m^(n-j)`` (``q(k)`` for ``m = 1``)."""
    if m == 1:
        return arb_poly(q)(arb(k))
    n = len(q) - 1
    total = arb(0)
    for j, coefficient in enumerate(q):
        total += coefficient * arb(k) ** j * arb(m) ** (n - j)
    return total


# -- step 2: the Krawczyk certificate (arb) ------------------------------------------------
def _box(center: list[arb], radii: list[mpmath.mpf]) -> list[arb]:
    return [c + arb(0, to_arb(r)) for c, r in zip(center, radii)]


def certify_copy_function(
    points: Sequence[int],
    values: Sequence[arb],
    n: int,
    *,
    at_zero: arb | None = None,
    at_infinity: arb | None = None,
    rigorous: bool = True,
    max_condition: Any = None,
) -> CertifiedCopyFunction:
    """Balls for ``a`` and ``(rho_h, c_h)``, ``h = 1..n``, from answer balls.

    ``points`` are copy numbers ``k`` with answers ``values`` (arb balls);
    ``at_zero`` / ``at_infinity`` are known values of ``R(0)`` / ``R(oo)``. The
    number of equations must be ``2n + 1``.

    With ``rigorous=True`` the balls are certified by the Krawczyk test. With
    ``rigorous=False`` they are *first-order error estimates*: the Newton
    solution on the midpoints, with radius ``FIRST_ORDER_SAFETY * |J^-1| r``
    (``r`` = the data radii) -- not an enclosure, but valid far beyond the
    noise level where the Krawczyk test (which needs the Jacobian to vary by
    less than its own conditioning over the error box) still succeeds.

    ``max_condition``: if given, a configuration whose :func:`condition`
    exceeds it is reported as :class:`Uncertified` (ill-conditioned), so the
    schedule redraws it (counted) instead of using it.

    Raises :class:`Uncertified` when the data do not determine ``n`` heads,
    :class:`~exactlearn.ReconstructionError` when they certainly contradict the
    attention form.
    """
    rows = _rows(points, values, at_zero, at_infinity)
    m = 2 * n + 1
    if len(rows) > m and not rigorous:
        return _least_squares(rows, n, max_condition)
    if len(rows) != m:
        more = " (more are fitted by least squares only with rigorous=False)" if rigorous else ""
        raise ValueError(f"{n} heads need {m} equations, got {len(rows)}{more}")
    mp = mpmath.mp
    theta0 = _guess(rows, n)  # exact points
    theta0_mp = [to_mpf(t) for t in theta0]
    one = arb(1)
    # L ~ J(theta0)^-1 (a floating-point approximation; the certificate does not need it to be exact)
    identity = [[one if i == j else arb(0) for j in range(m)] for i in range(m)]
    inv = _approx_solve(_jacobian(theta0, rows, n, one), identity)
    if inv is None:
        raise Uncertified("the Jacobian of the copy function is singular")
    L = arb_mat(m, m, [e for line in inv for e in line])
    if max_condition is not None:
        kappa = condition(L, theta0, n)
        if kappa > max_condition:
            raise Uncertified(f"ill-conditioned configuration (condition above max_condition = "
                              f"{mpmath.nstr(mpmath.mpf(max_condition), 3)})")
    F0 = arb_mat(m, 1, _residual(theta0, rows, n, one))
    delta = L * F0
    tiny = mp.mpf(2) ** (_SETTINGS.floor_bits - mp.prec)
    if not rigorous:
        radii = [FIRST_ORDER_SAFETY * abs_upper(delta[i, 0]) + tiny * (1 + abs(theta0_mp[i]))
                 for i in range(m)]
        return _result(_box(theta0, radii), n, certified=False)
    # (the certified balls are re-centred on theta0, the Newton solution on the midpoints, so
    # both modes return the same estimates; see balls.recenter)
    radii = [2 * abs_upper(delta[i, 0]) + tiny * (1 + abs(theta0_mp[i])) for i in range(m)]
    return _krawczyk(theta0, radii, rows, n, L, delta)


def _krawczyk(theta0, radii, rows, n: int, L, delta) -> CertifiedCopyFunction:
    """Inflate the box around ``theta0`` until the Krawczyk operator maps it into its interior."""
    m, one = 2 * n + 1, arb(1)
    ident = arb_mat(m, m, [1 if i == j else 0 for i in range(m) for j in range(m)])
    for _ in range(_SETTINGS.krawczyk_inflations):
        X = _box(theta0, radii)
        JX = arb_mat(m, m, [e for line in _jacobian(X, rows, n, one) for e in line])
        diff = arb_mat(m, 1, [X[i] - theta0[i] for i in range(m)])
        K = (ident - L * JX) * diff
        K = [theta0[i] - delta[i, 0] + K[i, 0] for i in range(m)]
        if all(k.is_finite() for k in K) and all(X[i].contains_interior(K[i]) for i in range(m)):
            return _result([recenter(K[i], theta0[i]) for i in range(m)], n)
        radii = [max(2 * r, 2 * abs_upper(K[i] - theta0[i]) if K[i].is_finite() else 4 * r)
                 for i, r in enumerate(radii)]
    raise Uncertified("the heads could not be certified "
                      "(Krawczyk test failed: too much noise or nearly equal heads)")


def _least_squares(rows: list[_Row], n: int, max_condition: Any) -> CertifiedCopyFunction:
    """More equations than ``2n + 1`` (copy numbers beyond the paper's, e.g. geometric): a linearised
    first solution (:func:`_guess_least_squares`), then Gauss-Newton on every equation weighted by
    ``1 / radius``; first-order radii ``FIRST_ORDER_SAFETY |G| r`` with
    ``G = (J_w^T J_w)^-1 J_w^T diag(w)`` the map from the answers' errors to the parameters. All of it
    runs at ``ApproxSettings.guess_precision_factor`` times the working precision (normal equations
    square the condition); Gauss-Newton stops at the working precision's half bits, as the estimates
    are returned at the working precision."""
    radii = [to_mpf(r.y.rad()) for r in rows]
    top = max(radii)
    weights = [arb(1) if top == 0 else to_arb(1 / max(r, top * mpmath.mpf(2) ** -20)) for r in radii]
    limit = mpmath.mpf(2) ** (-mpmath.mp.prec // 2)  # Gauss-Newton's last step, at the working precision
    tiny = mpmath.mp.mpf(2) ** (_SETTINGS.floor_bits - mpmath.mp.prec)
    factor = _SETTINGS.guess_precision_factor
    with ctx.workprec(factor * ctx.prec), mpmath.mp.workprec(factor * mpmath.mp.prec):
        theta = _guess_least_squares(rows, n, weights)
        theta, J, F = _gauss_newton(theta, rows, n, weights, limit)
        # with every answer within its radius, the weighted least-squares residual is at most sqrt(#answers)
        misfit = mpmath.sqrt(mpmath.fsum(to_mpf(F[i, 0]) ** 2 for i in range(F.nrows())))
        if top > 0 and misfit > 1.01 * mpmath.sqrt(len(rows)):
            raise Uncertified(f"no copy function with {n} heads fits the answers within eps (weighted "
                              f"residual {mpmath.nstr(misfit, 2)}; within eps at most "
                              f"{mpmath.nstr(mpmath.sqrt(len(rows)), 2)})")
        Jt = J.transpose()
        try:
            G = ((Jt * J).solve(Jt * _diagonal(weights), algorithm="approx")).mid()
        except ZeroDivisionError:
            raise Uncertified("the Jacobian of the copy function is singular") from None
        if max_condition is not None and condition(G, theta, n) > max_condition:
            raise Uncertified(f"ill-conditioned configuration (condition above max_condition = "
                              f"{mpmath.nstr(mpmath.mpf(max_condition), 3)})")
        out = []
        for i in range(2 * n + 1):
            spread = mpmath.fsum(abs_upper(G[i, k]) * radii[k] for k in range(len(rows)))
            out.append(FIRST_ORDER_SAFETY * spread + tiny * (1 + abs(to_mpf(theta[i]))))
    # the midpoints rounded to the working precision
    spare = len(rows) - (2 * n + 1)
    fit = _result(_box([(t + 0).mid() for t in theta], out), n, certified=False)
    return replace(fit, noise=misfit / mpmath.sqrt(spare)) if spare > 0 and top > 0 else fit


def _diagonal(entries: list[arb]) -> arb_mat:
    m = len(entries)
    return arb_mat(m, m, [entries[i] if i == j else 0 for i in range(m) for j in range(m)])


def _gauss_newton(theta: list[arb], rows: list[_Row], n: int, weights: list[arb], limit: mpmath.mpf
                  ) -> tuple[list[arb], arb_mat, arb_mat]:
    """Gauss-Newton on the weighted equations from ``theta`` until a step moves no parameter by more
    than ``limit`` (relative): ``(theta, J_w, F_w)`` there."""
    one, m = arb(1), 2 * n + 1
    mids = [_Row(r.k, r.y.mid(), r.m) for r in rows]
    W = _diagonal(weights)
    for step_number in range(_SETTINGS.gauss_newton_steps + 1):
        J = W * arb_mat(_jacobian(theta, mids, n, one))
        F = W * arb_mat([[e] for e in _residual(theta, mids, n, one)])
        if step_number == _SETTINGS.gauss_newton_steps:
            break
        Jt = J.transpose()
        try:
            step = (Jt * J).solve(Jt * F, algorithm="approx")
        except ZeroDivisionError:
            raise Uncertified("the Jacobian of the copy function is singular") from None
        if not all(step[i, 0].is_finite() for i in range(m)):
            raise Uncertified("the Jacobian of the copy function is singular")
        theta = [(t - step[i, 0]).mid() for i, t in enumerate(theta)]
        if all(abs(to_mpf(step[i, 0].mid())) <= limit * (1 + abs(to_mpf(theta[i]))) for i in range(m)):
            J = W * arb_mat(_jacobian(theta, mids, n, one))
            F = W * arb_mat([[e] for e in _residual(theta, mids, n, one)])
            return theta, J, F
    raise Uncertified("the least-squares fit of the copy function did not converge")


def condition(inv, theta, n: int) -> mpmath.mpf:
    """The amplification of answer errors into the quantities the solve uses.

    ``max(max_h sum_k |d c_h / d y_k|, max_h sum_k |d log rho_h / d y_k|)`` with
    ``inv`` the inverse Jacobian ``d(a, c, rho) / dy`` at ``theta``: an error of
    at most ``e`` in every equation moves each residue and each score
    ``log rho_h`` by at most ``condition * e`` (to first order).
    """
    m = inv.ncols()  # the answers: 2n + 1, or more for a least-squares fit
    rows_c = [mpmath.fsum(abs_upper(inv[1 + h, k]) for k in range(m)) for h in range(n)]
    rows_l = [mpmath.fsum(abs_upper(inv[1 + n + h, k]) for k in range(m)) / abs(to_mpf(theta[1 + n + h]))
              for h in range(n)]
    return max(rows_c + rows_l)


def _result(K: list[arb], n: int, certified: bool = True) -> CertifiedCopyFunction:
    """Check the balls' signs. First-order balls (``certified=False``) are estimates,
    not enclosures: a non-positive ``rho`` among them is uncertified (redrawn), not a contradiction."""
    a, cs, rhos = K[0], K[1 : n + 1], K[n + 1 :]
    for rho in rhos:
        if not certified and not rho > 0:
            raise Uncertified("an estimated pole has rho <= 0 (first-order estimates certify nothing)")
        if rho < 0 or rho == 0:
            raise ReconstructionError(
                f"a certified pole -1/rho has rho = {rho} <= 0, "
                f"so it is not a pole of an attention copy function"
            )
        if not rho > 0:
            raise Uncertified("a pole cannot be told from k = -oo (rho contains 0)")
    for c in cs:
        if not (c > 0 or c < 0):
            raise Uncertified("a residue cannot be told from zero (the head may vanish here)")
    terms = sorted(zip(rhos, cs), key=lambda t: to_mpf(t[0]))
    return CertifiedCopyFunction(a, tuple(terms))
