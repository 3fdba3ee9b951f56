"""The Jacobian of the recovery map at the exact data, and the constant ``C``.

docs/approximate.md derives it: per measurement configuration the local
Jacobian ``J_j`` of its copy function (answers -> ``(a, c, rho)``), then the
weights ``vec(W_h) = s^-2 D^-1 (log rho_{j,h})_j`` and the values
``v_h = s^-1 (A^T A)^-1 A^T (c_{j,h})_j``. :class:`Jacobian` holds those pieces
for one set of configurations; ``C`` is the largest absolute row sum of
``DF`` over the answers of distinct queries.

The numbers are those of a field: :class:`~exactlearn.exactfield.ExactRationals`
(exp-parametrised model, integer scale: ``C`` is exact) or
:class:`~exactlearn.approx.core.field.RealBalls` with ``eps = 0`` (arb enclosures).
Every parameter of the heads is a :class:`Parameter`.

>>> weight, value = Parameter(ParameterKind.WEIGHT, 0, 1, 2), Parameter(ParameterKind.VALUE, 1, 0)
>>> weight.kind == "W", weight.column, value.kind == "v", value.column
(True, 2, True, None)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import mpmath
from flint import arb, arb_mat, fmpq, fmpq_mat

from ...exactfield import ExactRationals
from ...schedule import copies_query, measurement_points, value_row, weight_row
from ...states import StrEnum
from ..core.balls import abs_upper, as_fmpq, to_arb, to_mpf, working_precision
from ..core.field import RealBalls
from ..core.learner import ScaledQueries
from ..core.models import exact_tokens

__all__ = ["Jacobian", "ModelKind", "ParameterKind", "Parameter", "numbers", "matrix"]


class ModelKind(StrEnum):
    """How a model's heads are given."""

    EXP = "exp"  # (exp W, v): an exp-parametrised MultiHeadAttention, rational
    REAL = "real"  # (W, v): a RealMultiHeadAttention


class ParameterKind(StrEnum):
    """Which part of a head a parameter is an entry of."""

    WEIGHT = "W"
    VALUE = "v"


class Parameter(NamedTuple):
    """One parameter: ``W_h[row][column]`` or ``v_h[row]`` (``column`` is ``None``) of head ``head``."""

    kind: ParameterKind
    head: int
    row: int
    column: int | None = None


def numbers(exact: bool) -> ExactRationals | RealBalls:
    """The field the constant is computed in: exact rationals, or balls with no added error."""
    return ExactRationals() if exact else RealBalls(0)


def matrix(field: Any, rows: list[list]) -> Any:
    """``rows`` as an ``fmpq_mat`` (exact field) or ``arb_mat`` (balls)."""
    r, c = len(rows), len(rows[0])
    entries = [field.element(x) for row in rows for x in row]
    return fmpq_mat(r, c, entries) if isinstance(field, ExactRationals) else arb_mat(r, c, entries)


class Jacobian:
    """The local Jacobians of the measurement configurations and ``DF`` of the recovery map.

    ``kind`` says how ``heads`` are given (:class:`ModelKind`).
    """

    def __init__(self, kind: ModelKind | str, heads: Sequence, d: int, s: fmpq, measurements: Sequence):
        self.kind, self.heads, self.d, self.s = ModelKind(kind), heads, d, s
        self.H = len(heads)
        self.field = numbers(self.kind is ModelKind.EXP and s.q == 1)
        self.exact = isinstance(self.field, ExactRationals)
        self.one = self.num(fmpq(1))
        self.measurements = list(measurements)
        self.points = measurement_points(self.H)
        self.data = [self.head_data(x, z) for x, z in self.measurements]
        self.jac = [self.local(cs, rhos, self.points, False) for _, cs, rhos in self.data]
        n, m, H = len(self.measurements), len(self.points), self.H
        self.S_c = [[self.rowsum(J, 1 + h, range(m)) for h in range(H)] for J in self.jac]
        self.S_rho = [[self.rowsum(J, 1 + H + h, range(m)) for h in range(H)] for J in self.jac]
        self.D = fmpq_mat(n, d * d, [e for x, z in self.measurements for e in weight_row(x, z)])
        self.Dinv_q = self.D.inv()
        self.A = fmpq_mat(n, d, [e for x, z in self.measurements for e in value_row(x, z)])
        self.P_q = (self.A.transpose() * self.A).inv() * self.A.transpose()
        self.Dinv = [[self.num(self.Dinv_q[i, j]) for j in range(n)] for i in range(d * d)]
        self.P = [[self.num(self.P_q[i, j]) for j in range(n)] for i in range(d)]
        # the answers of *distinct* queries are DF's columns: a query asked twice (e.g. the same
        # token x in two configurations at k = 0) has one answer error
        scaled = _scaled(s)
        self.keys = [[exact_tokens(scaled(copies_query(x, z, k)), d) for k in self.points]
                     for x, z in self.measurements]

    def num(self, x: Any) -> Any:
        return self.field.element(x)

    def head_data(self, x, z) -> tuple[Any, list, list]:
        """``(R(oo), [c_h], [rho_h])`` at the scaled tokens ``s x``, ``s z``, in the field."""
        d, s = self.d, self.s
        diff = [zb - xb for zb, xb in zip(z, x)]
        cs, rhos = [], []
        u = [fmpq(0)] * d
        for W, v in self.heads:
            cs.append(self.num(s * sum((v[a] * (x[a] - z[a]) for a in range(d)), fmpq(0))))
            u = [ua + va for ua, va in zip(u, v)]
            rhos.append(self._rho(W, diff, x))
        a_inf = self.num(s * sum((u[a] * z[a] for a in range(d)), fmpq(0)))
        return a_inf, cs, rhos

    def _rho(self, W, diff, x) -> Any:
        d, s2 = self.d, self.s * self.s
        if self.kind is ModelKind.REAL:
            score = s2 * sum((diff[a] * W[a][b] * x[b] for a in range(d) for b in range(d)), fmpq(0))
            return to_arb(score).exp()
        if self.exact:
            rho = fmpq(1)
            for a in range(d):
                for b in range(d):
                    e = int((s2 * diff[a] * x[b]).p)  # an integer: s is an integer here
                    if e:
                        rho *= W[a][b] ** e
            return rho
        total = arb(0)
        for a in range(d):
            for b in range(d):
                if diff[a] * x[b]:
                    total += (s2 * diff[a] * x[b]) * arb(W[a][b]).log()
        return total.exp()

    def local(self, cs, rhos, points, known_a: bool) -> Any:
        """Inverse of ``d R(k_i) / d(params)``; params ``(a, c, rho)``,
        or ``(c, rho)`` when ``a`` is known."""
        one = self.one
        rows = []
        for k in points:
            line = [] if known_a else [one]
            dens = [one + k * r for r in rhos]
            line += [one / den for den in dens]
            line += [-(c * k) / (den * den) for c, den in zip(cs, dens)]
            rows.append(line)
        return matrix(self.field, rows).inv()

    def rowsum(self, J, i, cols) -> Any:
        total = self.num(fmpq(0))
        for k in cols:
            total += abs(J[i, k])
        return total

    def second_order(self, J, cs, rhos, points, weights, offset) -> mpmath.mpf:
        """The eps at which second-order terms reach half the first-order error, componentwise.

        First order: ``|d theta_i| <= S_i eps`` with ``S = |J| w`` (``w`` = the
        data errors in units of eps). The second-order residual of row ``k`` is
        at most ``Q_k eps^2`` with ``Q_k = S^T |R_k''| S``; it moves ``theta_i`` by
        ``sum_k |J[i, k]| Q_k eps^2``. Returns ``min_i S_i / (2 sum_k |J[i, k]| Q_k)``.
        ``offset`` is 1 when ``theta`` starts with ``a``, 0 when ``a`` is known.
        """
        size = len(points)
        S = [sum((abs_upper(J[i, k]) * weights[k] for k in range(size)), mpmath.mpf(0)) for i in range(size)]
        Q = []
        for k in points:
            total = mpmath.mpf(0)
            for h, (c, r) in enumerate(zip(cs, rhos)):
                den = abs(1 + k * to_mpf(r))
                sc, sr = S[offset + h], S[offset + len(cs) + h]
                total += 2 * sc * sr * abs(k) / den**2 + 2 * abs(to_mpf(c)) * k * k * sr**2 / den**3
            Q.append(total)
        out = mpmath.inf
        for i in range(size):
            push = sum((abs_upper(J[i, k]) * Q[k] for k in range(size)), mpmath.mpf(0))
            if push > 0:
                out = min(out, S[i] / (2 * push))
        return out

    # -- DF and C ---------------------------------------------------------------------
    def labels(self) -> list[Parameter]:
        """Every parameter: the entries of each ``W_h``, then of each ``v_h``."""
        H, d = self.H, self.d
        entries = [(h, a) for h in range(H) for a in range(d)]
        weights = [Parameter(ParameterKind.WEIGHT, h, a, b) for h, a in entries for b in range(d)]
        return weights + [Parameter(ParameterKind.VALUE, h, a) for h, a in entries]

    def df_row(self, label: Parameter) -> dict:
        """The row of ``DF`` for one parameter, keyed by the distinct queries."""
        H, d, m = self.H, self.d, len(self.points)
        inv_s2, inv_s = self.num(1 / (self.s * self.s)), self.num(1 / self.s)
        h, a, b = label.head, label.row, label.column
        row: dict = {}
        for j in range(len(self.measurements)):
            if b is not None:  # an entry of W_h
                factor = self.Dinv[a * d + b][j] / self.data[j][2][h] * inv_s2
                line = 1 + H + h
            else:
                factor = self.P[a][j] * inv_s
                line = 1 + h
            for k_index in range(m):
                key = self.keys[j][k_index]
                row[key] = row.get(key, self.num(fmpq(0))) + factor * self.jac[j][line, k_index]
        return row

    def constant(self) -> tuple[Parameter, dict]:
        """``(worst parameter, {parameter: its absolute row sum})``: ``C`` is the worst row sum."""
        labels = self.labels()
        rows = {}
        for label in labels:
            total = self.num(fmpq(0))
            for coeff in self.df_row(label).values():
                total += abs(coeff)
            rows[label] = total
        return max(labels, key=lambda lab: abs_upper(rows[lab])), rows

    def worst_pattern(self, label: Parameter) -> dict:
        """The answer-error signs that attain ``C`` (to first order) in parameter ``label``."""
        def sign(x) -> int:
            v = to_mpf(x)
            return (v > 0) - (v < 0)

        return {key: fmpq(sign(coeff)) for key, coeff in self.df_row(label).items()}

    def predictor(self) -> Callable:
        """``predict(noise)``: first-order deviations ``DF . n`` per head, ``(dW, dv)``."""
        prec = mpmath.mp.prec
        return lambda noise: self._predict(noise, prec)

    def _predict(self, noise, prec: int) -> list:
        H, d, s, m = self.H, self.d, self.s, len(self.points)
        n_meas = len(self.measurements)
        with working_precision(prec):
            deltas = []
            for j, (x, z) in enumerate(self.measurements):
                scaled = _scaled(s)
                n = [self.num(as_fmpq(noise(scaled(copies_query(x, z, k))), "noise")) for k in self.points]
                J = self.jac[j]
                deltas.append([sum((J[i, k] * n[k] for k in range(m)), self.num(fmpq(0))) for i in range(m)])
            out = []
            for h in range(H):
                dW = [[None] * d for _ in range(d)]
                for idx in range(d * d):
                    total = self.num(fmpq(0))
                    for j in range(n_meas):
                        total += self.Dinv[idx][j] * deltas[j][1 + H + h] / self.data[j][2][h]
                    dW[idx // d][idx % d] = to_mpf(total / self.num(s * s))
                dv = []
                for a in range(d):
                    total = self.num(fmpq(0))
                    for j in range(n_meas):
                        total += self.P[a][j] * deltas[j][1 + h]
                    dv.append(to_mpf(total / self.num(s)))
                out.append((dW, dv))
            return out


def _scaled(s: fmpq) -> ScaledQueries:
    """The tokens as a scaled oracle sends them (the identity oracle)."""
    return ScaledQueries(lambda tokens: tokens, s)
