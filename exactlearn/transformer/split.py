"""Step 3: the per-head split of every merged line (docs/transformer.md, section 5).

For a token ``x`` the sequence ``((-x)^a, x^b)`` gives every head the output
``o_h = tau_h x`` with ``tau_h = (b - a rho_h) / (b + a rho_h)`` and
``rho_h = exp(-2 x^T W_h x)``, known exactly after step 1. With the linear part
known::

    G_x(tau) = T - sum_h tau_h (l_h . x) = 1/2 sum_L kappa_L |c_L . tau|,
    c_L = (w_L1 . x, ..., w_LH . x),   sum_h c_Lh = J_L . x .

On a region of ``tau``-space ``G_x = gamma . tau`` with
``sum_h gamma_h = 1/2 sum_L kappa_L s_L J_L . x``: ``x`` is chosen (before any
query) so that these ``2^n`` sums are distinct, so every fitted region carries
its sign vector ``s``. Between two fitted regions whose sign vectors differ in
the single line ``L``, ``gamma_B - gamma_A = kappa_L s_B,L c_L``. The copy
ratio ``k = a/b`` runs over a closed loop in projective ``tau``-space
(``tau(oo) = -tau(0)``, and ``G_x`` is even), so every line is crossed; gaps
with several flipped lines are bisected in ``log k``. ``d`` independent ``x``
per line give every ``w_Lh``. ``x`` is chosen with the ``log rho_h``
moderate and well spread, so the kinks sit at moderate ``k`` (short queries).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from flint import fmpq

from ..exact import dot
from .errors import Condition, TransformerConditionError
from .pieces import fit_gradient, rank, solve

__all__ = ["SplitStats", "learn_split"]

Vector = tuple[fmpq, ...]
WINDOWS = 5  # window widths tried at one place: 1, 1/4, ..., 1/256 (relative)
MAX_FITS_PER_TOKEN = 40
MAX_LINES = 12  # regions are named by 2^n sums: more lines are refused before any query
FIRST_CAP = 1000  # the first pass over the tokens keeps queries this short


def _log(r: fmpq) -> float:
    """``log r`` for a positive rational of any size (``float(r)`` under- or overflows)."""
    return math.log(int(r.p)) - math.log(int(r.q))


class SplitStats:
    """What step 3 did: tokens swept, region fits, fits refused."""

    def __init__(self) -> None:
        self.tokens = 0
        self.fits = 0
        self.refused = 0


class _Family:
    """The copy-ratio family ``((-x)^a, x^b)`` of one token ``x``."""

    def __init__(self, ask, x, exp_Ws, ells, lines, max_length: int, residual: Vector | None = None,
                 c: int = 1):
        self.kappas = [k for _, k in lines]
        self.residual = residual is not None  # then G_x = gamma . tau + gamma_res (one more unknown)
        self.lres = dot(residual, x) if residual is not None else fmpq(0)
        self.ask = ask
        self.x = x
        self.c = c  # the other token is -c x: tau runs from 1 to -c
        self.neg = tuple(-c * t for t in x)
        self.H = len(exp_Ws)
        self.n = self.H + self.residual
        self.rho = []
        for E in exp_Ws:
            r = fmpq(1)
            for i, xi in enumerate(x):
                for j, xj in enumerate(x):
                    if xi * xj:
                        r *= E[i][j] ** (-(1 + c) * xi * xj)
            self.rho.append(r)
        self.lx = [dot(l_h, x) for l_h in ells]
        self.A = [kappa * dot(J, x) for J, kappa in lines]
        self.states: dict[fmpq, tuple[int, ...]] = {fmpq(0): ()}
        for a in self.A:  # the 2^n sums, built line by line; stop at the first coincidence
            half = a / 2
            grown = {total + si * half: s + (si,) for total, s in self.states.items() for si in (-1, 1)}
            if len(grown) < 2 * len(self.states):
                self.states = {}
                break
            self.states = grown
        self.max_length = max_length
        self.cache: dict[tuple[int, int], fmpq] = {}

    @property
    def usable(self) -> bool:
        """Distinct ``rho_h`` and distinct state sums: checked before any query."""
        return len(set(self.rho)) == self.H and len(self.states) == 2 ** len(self.A)

    def tau(self, a: int, b: int) -> Vector:
        """``(tau_1, ..., tau_H)``, then ``1`` (the residual's ``x_N = x``) with a residual."""
        c = self.c
        return tuple((b - c * a * r) / (b + a * r) for r in self.rho) + ((fmpq(1),) if self.residual else ())

    def value(self, a: int, b: int) -> fmpq:
        if (a, b) not in self.cache:
            t = self.ask([self.neg] * a + [self.x] * b)
            self.cache[(a, b)] = t - dot(self.tau(a, b), self.lx) - self.lres
        return self.cache[(a, b)]

    def window(self, logk: float, width: float) -> list[tuple[int, int]]:
        """``H + 1`` copy ratios ``a/b`` within relative ``width`` around ``k`` (small ``a + b``)."""
        k, H = math.exp(logk), self.n
        if k >= 1:
            b = max(1, math.ceil(H / (k * width)))
            a0 = max(1, round(k * b - H / 2))
            return [(a0 + i, b) for i in range(H + 1)]
        b0 = max(1, math.ceil(H / width))
        a = max(1, round(k * (b0 + H / 2)))
        b0 = max(1, round(a / k - H / 2))
        return [(a, b0 + i) for i in range(H + 1)]

    def fit(self, logk: float, stats: SplitStats, width: float = 0.25):
        """A region ``(log k, gamma, signs)`` near ``k``, or None within the length cap.

        A window that straddles a kink fits no single gradient (or one whose sum is no
        sign vector's): it is refused and a window a quarter as wide is tried.
        """
        if abs(logk) > math.log(self.max_length):  # k = a/b with a + b <= max_length cannot get there
            return None
        for _ in range(WINDOWS):
            pts = self.window(logk, width)
            width /= 4
            if max(a + b for a, b in pts) > self.max_length:
                return None
            stats.fits += 1
            taus = [self.tau(a, b) for a, b in pts]
            ys = [self.value(a, b) for a, b in pts]
            g = fit_gradient(taus[:self.n], ys[:self.n], taus[self.n:], ys[self.n:])
            s = None if g is None else self.states.get(sum(g[:self.H], fmpq(0)))
            if s is not None:
                return (math.log(sum(a for a, _ in pts) / sum(b for _, b in pts)), g, s)
            stats.refused += 1
        return None


def _sweep(fam: _Family, stats: SplitStats, mus: list[float]) -> dict[int, Vector]:
    """``c_L`` for every line found along the loop of ``fam``.

    The ends of the loop are known regions: ``k -> 0`` has signs ``s_0 = sign(J_L . x)``,
    ``k -> oo`` has ``-s_0`` and gradient ``-gamma_0`` (``G_x`` is even).
    """
    n = len(fam.A)
    s0 = tuple(1 if a * k > 0 else -1 for a, k in zip(fam.A, fam.kappas))  # sign(J_L . x)
    end = tuple(-s for s in s0)
    pieces = [p for p in (fam.fit(m, stats) for m in (min(mus) - 0.5, sum(mus) / len(mus), max(mus) + 0.5))
              if p is not None]
    found: dict[int, Vector] = {}
    dead: set = set()
    fits = 0
    while pieces and fits < MAX_FITS_PER_TOKEN and len(found) < n:
        pieces.sort(key=lambda p: p[0])
        todo = _gaps(fam, pieces, found, dead, s0, end, mus)
        if not todo:
            break
        A, B = todo[0]
        fits += 1
        if math.isinf(A[0]) or math.isinf(B[0]):
            at = B[0] - 1.5 if math.isinf(A[0]) else A[0] + 1.5
        elif B[0] - A[0] < 1e-3:
            dead.add((A[0], B[0]))
            continue
        else:
            at = (A[0] + B[0]) / 2
        new = fam.fit(at, stats, min(0.25, (B[0] - A[0]) / 3))
        lo, hi = A[0], B[0]
        if new is None or not lo < new[0] < hi or any(abs(new[0] - p[0]) < 1e-12 for p in pieces):
            dead.add((A[0], B[0]))
            continue
        pieces.append(new)
    return found


def _gaps(fam: _Family, pieces, found, dead, s0, end, mus) -> list:
    """Record every single-flip gap in ``found``; return the gaps still to be bisected (inner first).

    Without a residual the loop's ends are known regions (``s_0`` with gradient ``gamma_0``,
    ``-s_0`` with ``-gamma_0``). With a residual (``x_N = x`` stays put) the ends are
    unknown: the loop is extended outwards while lines are missing, up to ``log k`` 8 beyond
    the heads' switching points.
    """
    first: tuple[float, Any, Any]
    last: tuple[float, Any, Any]
    if fam.residual:
        first = (-math.inf, None, None)
        last = (math.inf, None, None)
    else:
        g0 = next((p[1] for p in pieces if p[2] == s0), None)
        if g0 is None:
            g0 = next((tuple(-x for x in p[1]) for p in pieces if p[2] == end), None)
        first = (-math.inf, g0, s0)
        last = (math.inf, None if g0 is None else tuple(-x for x in g0), end)
    todo = []
    for A, B in zip([first, *pieces], [*pieces, last]):
        if A[2] is None or B[2] is None:  # an unknown end (residual): extend while lines are missing
            edge = B if A[2] is None else A
            if (len(found) < len(fam.A) and (A[0], B[0]) not in dead
                    and abs(edge[0] - sum(mus) / len(mus)) < 8):
                todo.append((A, B))
            continue
        flipped = [L for L, (x, y) in enumerate(zip(A[2], B[2])) if x != y]
        if len(flipped) == 1 and A[1] is not None and B[1] is not None:
            L = flipped[0]
            c = tuple((y - x) / (fam.kappas[L] * B[2][L]) for x, y in zip(A[1], B[1]))
            if L in found and found[L] != c:
                raise TransformerConditionError(Condition.PER_HEAD_SPLIT,
                                                "a line was split in two different ways")
            found[L] = c
        elif flipped and any(L not in found for L in flipped) and (A[0], B[0]) not in dead:
            todo.append((A, B))
    todo.sort(key=lambda g: math.isinf(g[0][0]) or math.isinf(g[1][0]))  # inner gaps first
    return todo


def _candidates(d: int, rng: random.Random) -> list[tuple[int, ...]]:
    pool: Iterable[tuple[int, ...]]
    if d <= 4:
        r = {1: 1, 2: 6, 3: 3}.get(d, 2)
        pool = itertools.product(range(-r, r + 1), repeat=d)
    else:
        pool = (tuple(rng.randint(-2, 2) for _ in range(d)) for _ in range(600))
    out = []
    for x in pool:
        if any(x) and next(t for t in x if t) > 0 and math.gcd(*x) == 1 and x not in out:
            out.append(x)
    return out


def _cost(x, logWs) -> float:
    mus = sorted(2 * sum(x[i] * W[i][j] * x[j] for i in range(len(x)) for j in range(len(x))) for W in logWs)
    spread = sum(max(0.0, 1.5 - (b - a)) for a, b in itertools.pairwise(mus))
    return max(abs(m) for m in mus) + 3 * spread


def learn_split(ask: Callable[[list], fmpq], exp_Ws: Sequence, ells: Sequence[Vector],
                lines: Sequence[tuple[Vector, fmpq]], *, max_length: int, rng: random.Random,
                max_tokens: int | None = None, residual: Vector | None = None,
                ) -> tuple[list[tuple[Vector, ...]], SplitStats]:
    """Per line ``(J_L, kappa_L)`` the per-head parts ``(w_L1, ..., w_LH)`` (module docstring).

    With ``residual`` (the residual's linear part ``l_res``) each line also gets its
    residual part ``w_L,res`` as a last entry.
    """
    d, H, n = len(ells[0]), len(exp_Ws), len(lines)
    if n > MAX_LINES:
        raise TransformerConditionError(
            Condition.PER_HEAD_SPLIT,
            f"{n} lines on the uniform slice: the split names regions by 2^n sums and takes "
            f"at most {MAX_LINES} lines")
    stats = SplitStats()
    logWs = [[[_log(e) for e in row] for row in E] for E in exp_Ws]
    cands = sorted(_candidates(d, rng), key=lambda x: _cost(x, logWs))
    max_tokens = 3 * d + 6 if max_tokens is None else max_tokens
    found: list[list[tuple]] = [[] for _ in range(n)]
    solved: dict[int, tuple[Vector, ...]] = {}
    for cap in sorted({min(max_length, FIRST_CAP), max_length}):  # short queries first
        tokens_at_start = stats.tokens
        for x in cands:
            if len(solved) == n or stats.tokens - tokens_at_start >= max_tokens:
                break
            useful = [L for L in range(n)
                      if L not in solved and rank([y for y, _ in found[L]] + [x]) > len(found[L])]
            if not useful:
                continue
            # with a residual the loop is open: -3x reaches further
            for c in (1, 3) if residual is not None else (1,):
                if all(L in solved or any(y == x for y, _ in found[L]) for L in useful):
                    break
                fam = _Family(ask, x, exp_Ws, ells, lines, cap, residual, c)
                if not fam.usable:
                    continue
                stats.tokens += 1
                mus = [-_log(r) for r in fam.rho]
                for L, cL in _sweep(fam, stats, mus).items():
                    if L in solved or rank([y for y, _ in found[L]] + [x]) == len(found[L]):
                        continue
                    found[L].append((x, cL))
                    if len(found[L]) == d:
                        solved[L] = _solve_line(found[L], lines[L][0], H + (residual is not None), H)
    if len(solved) < n and stats.tokens == 0:
        raise TransformerConditionError(
            Condition.PER_HEAD_SPLIT,
            "no token x separates the sign patterns of the lines (some signed sum of the lines kappa_L J_L "
            "vanishes, so no G_x identifies its regions by their sums)")
    if len(solved) < n:
        missing = ", ".join(str(L) for L in range(n) if L not in solved)
        raise TransformerConditionError(
            Condition.PER_HEAD_SPLIT,
            f"line(s) {missing} of {n} not split per head after {stats.tokens} tokens x "
            f"(kinks beyond the length cap {max_length} or too close together, "
            f"or lines that the uniform slice "
            f"merges)")
    return [solved[L] for L in range(n)], stats


def _solve_line(pairs, J, n, H) -> tuple[Vector, ...]:
    """``w_Lh`` (and ``w_L,res`` when ``n = H + 1``) from ``c_L(x)`` at ``d`` independent ``x``."""
    xs = [x for x, _ in pairs]
    w = []
    for h in range(n):
        sol = solve(xs, [c[h] for _, c in pairs])
        if sol is None:  # pragma: no cover - the x are independent by construction
            raise TransformerConditionError(Condition.PER_HEAD_SPLIT, "dependent tokens")
        w.append(sol)
    if tuple(sum((w[h][i] for h in range(H)), fmpq(0)) for i in range(len(J))) != tuple(J):
        raise TransformerConditionError(Condition.PER_HEAD_SPLIT,
                                        "the per-head parts do not add up to the merged line")
    return tuple(w)
