"""Step 3: the per-head split of every merged line (docs/transformer.md, section 5).

For a token ``x`` the sequence ``((-x)^a, x^b)`` gives every head the output
``o_h = tau_h x`` with ``tau_h = (b - a rho_h) / (b + a rho_h)`` and
``rho_h = exp(-2 x^T W_h x)``, known exactly after step 1. With the heads'
linear parts ``l_h`` known::

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
per line give every ``w_Lh``. ``x`` is chosen with the switch points
``mu_h = -log rho_h`` moderate and well spread, so the kinks sit at moderate
``k`` (short queries).

>>> from exactlearn.transformer import Transformer
>>> from exactlearn.transformer.canonical import normalise_line
>>> truth = Transformer.random(d=2, heads=2, width=1, seed=0)
>>> form = truth.canonical()
>>> (w, kappa), = form.lines
>>> J, c = normalise_line([x + y for x, y in zip(*w)])
>>> parts, stats = learn_split(truth, form.heads, form.linear, [MergedLine(J, kappa * abs(c))],
...                            max_length=1000, rng=random.Random(0))
>>> parts == [tuple(tuple(x / c for x in v) for v in w)]
True
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from flint import fmpq

from ..exact import dot
from ..settings import DEFAULT_SETTINGS, HeadSplitSettings
from .canonical import Matrix, Vector
from .errors import Condition, TransformerConditionError
from .pieces import fit_gradient, rank, solve
from .slice import MergedLine

__all__ = ["SplitStats", "learn_split"]

Token = tuple[int, ...]
Signs = tuple[int, ...]  # one sign s_L = +-1 per line


def _log(r: fmpq) -> float:
    """``log r`` for a positive rational of any size (``float(r)`` under- or overflows)."""
    return math.log(int(r.p)) - math.log(int(r.q))


def _negated(v: Vector) -> Vector:
    return tuple(-x for x in v)


@dataclass
class SplitStats:
    """What step 3 did: tokens swept, region fits, fits refused."""

    tokens: int = 0
    fits: int = 0
    refused: int = 0


class _Region(NamedTuple):
    """A region of ``G_x`` on a family's loop: its place ``log k``, its gradient ``gamma`` and its
    sign vector ``s``. The loop's ends sit at ``log k = -oo, oo``; an end whose region is
    unknown (with a residual) has neither gradient nor signs."""

    log_k: float
    gradient: Vector | None
    signs: Signs | None


class _LineAtToken(NamedTuple):
    """``c_L = (w_L1 . x, ..., w_LH . x)`` (then ``w_L,res . x`` with a residual) at the token ``x``."""

    x: Token
    c: Vector


def _signs_by_sum(line_terms: Sequence[fmpq]) -> dict[fmpq, Signs]:
    """The sign vector ``s`` of each sum ``1/2 sum_L s_L A_L`` (``A_L = kappa_L J_L . x``),
    or ``{}`` if two of the ``2^n`` sums coincide (then regions cannot be named)."""
    signs: dict[fmpq, Signs] = {fmpq(0): ()}
    for term in line_terms:  # built line by line; stop at the first coincidence
        half = term / 2
        grown = {total + s * half: before + (s,) for total, before in signs.items() for s in (-1, 1)}
        if len(grown) < 2 * len(signs):
            return {}
        signs = grown
    return signs


def _rho(exp_W: Matrix, x: Token, scale: int) -> fmpq:
    """``rho_h = exp(-(1 + c) x^T W_h x)`` exactly from ``exp(W_h)`` (``c = scale``)."""
    r = fmpq(1)
    for i, xi in enumerate(x):
        for j, xj in enumerate(x):
            if xi * xj:
                r *= exp_W[i][j] ** (-(1 + scale) * xi * xj)
    return r


class _CopyRatioFamily:
    """``G_x`` along the copy-ratio family ``((-c x)^a, x^b)`` of one token ``x`` (``c = scale``):
    every head outputs ``tau_h x`` with ``tau_h = (b - c a rho_h) / (b + a rho_h)``, running from 1
    to ``-c`` as ``k = a/b`` grows."""

    def __init__(self, ask: Callable[[list], fmpq], x: Token, exp_Ws: Sequence[Matrix],
                 head_linear: Sequence[Vector], lines: Sequence[MergedLine], max_length: int,
                 residual_linear: Vector | None, scale: int, settings: HeadSplitSettings):
        self.ask = ask
        self.x = x
        self.scale = scale
        self.opposite = tuple(-scale * t for t in x)
        self.max_length = max_length
        self.settings = settings
        self.H = len(exp_Ws)
        self.residual = residual_linear is not None  # then G_x = gamma . tau + gamma_res
        self.unknowns = self.H + self.residual
        self.rho = [_rho(E, x, scale) for E in exp_Ws]
        self.head_terms = [dot(l_h, x) for l_h in head_linear]  # l_h . x
        self.residual_term = dot(residual_linear, x) if residual_linear is not None else fmpq(0)  # l_res . x
        self.kappas = [line.kappa for line in lines]
        self.line_terms = [line.kappa * dot(line.J, x) for line in lines]  # A_L = kappa_L J_L . x
        self.signs_by_sum = _signs_by_sum(self.line_terms)
        self.values: dict[tuple[int, int], fmpq] = {}

    @property
    def usable(self) -> bool:
        """Distinct ``rho_h`` and distinct sums ``sum_h gamma_h``: checked before any query."""
        return len(set(self.rho)) == self.H and len(self.signs_by_sum) == 2 ** len(self.line_terms)

    def tau(self, a: int, b: int) -> Vector:
        """``(tau_1, ..., tau_H)``, then ``1`` (the residual's ``x_N = x``) with a residual."""
        c = self.scale
        return tuple((b - c * a * r) / (b + a * r) for r in self.rho) + ((fmpq(1),) if self.residual else ())

    def value(self, a: int, b: int) -> fmpq:
        """``G_x`` at the copy ratio ``a/b``: one query, asked once."""
        if (a, b) not in self.values:
            answer = self.ask([self.opposite] * a + [self.x] * b)
            self.values[(a, b)] = answer - dot(self.tau(a, b), self.head_terms) - self.residual_term
        return self.values[(a, b)]

    def window(self, log_k: float, width: float) -> list[tuple[int, int]]:
        """``n + 1`` copy ratios ``a/b`` (``n`` unknowns to fit, one check) within relative ``width``
        around ``k``, with small ``a + b``."""
        k, n = math.exp(log_k), self.unknowns
        if k >= 1:
            b = max(1, math.ceil(n / (k * width)))
            a0 = max(1, round(k * b - n / 2))
            return [(a0 + i, b) for i in range(n + 1)]
        a = max(1, round(k * (max(1, math.ceil(n / width)) + n / 2)))
        b0 = max(1, round(a / k - n / 2))
        return [(a, b0 + i) for i in range(n + 1)]

    def fit(self, log_k: float, stats: SplitStats, width: float) -> _Region | None:
        """A region near ``k``, or None within the length cap.

        A window that straddles a kink fits no single gradient (or one whose sum is no
        sign vector's): it is refused and a narrower one is tried.
        """
        if abs(log_k) > math.log(self.max_length):  # k = a/b with a + b <= max_length cannot get there
            return None
        n = self.unknowns
        for _ in range(self.settings.windows):
            ratios = self.window(log_k, width)
            width /= self.settings.window_shrink
            if max(a + b for a, b in ratios) > self.max_length:
                return None
            stats.fits += 1
            taus = [self.tau(a, b) for a, b in ratios]
            values = [self.value(a, b) for a, b in ratios]
            gradient = fit_gradient(taus[:n], values[:n], taus[n:], values[n:])
            signs = None if gradient is None else self.signs_by_sum.get(sum(gradient[:self.H], fmpq(0)))
            if signs is not None:
                log_ratio = math.log(sum(a for a, _ in ratios) / sum(b for _, b in ratios))
                return _Region(log_ratio, gradient, signs)
            stats.refused += 1
        return None


class _Sweep:
    """One family's sweep along its loop: the fitted regions, the lines found by single flips
    (``c_L`` by line), the gaps given up."""

    def __init__(self, family: _CopyRatioFamily, stats: SplitStats, settings: HeadSplitSettings):
        self.family = family
        self.stats = stats
        self.settings = settings
        self.switch_points = [-_log(r) for r in family.rho]  # tau_h switches near log k = -log rho_h
        self.mean_switch = sum(self.switch_points) / len(self.switch_points)
        # the region at k -> 0 has the signs of J_L . x, the one at k -> oo the opposite ones
        self.start_signs = tuple(1 if a * k > 0 else -1 for a, k in zip(family.line_terms, family.kappas))
        self.end_signs = tuple(-s for s in self.start_signs)
        self.found: dict[int, Vector] = {}
        self.dead: set[tuple[float, float]] = set()

    def run(self) -> dict[int, Vector]:
        """``c_L`` of every line found along the loop, by line."""
        s = self.settings
        firsts = (min(self.switch_points) - s.start_margin, self.mean_switch,
                  max(self.switch_points) + s.start_margin)
        fitted = (self.family.fit(at, self.stats, s.window_width) for at in firsts)
        regions = [r for r in fitted if r is not None]
        fits = 0
        while regions and fits < s.max_fits_per_token and len(self.found) < len(self.family.line_terms):
            regions.sort(key=lambda r: r.log_k)
            todo = self._gaps(regions)
            if not todo:
                break
            a, b = todo[0]
            fits += 1
            new = self._fit_between(a, b)
            if (new is None or not a.log_k < new.log_k < b.log_k
                    or any(abs(new.log_k - r.log_k) < s.same_place for r in regions)):
                self.dead.add((a.log_k, b.log_k))
                continue
            regions.append(new)
        return self.found

    def _fit_between(self, a: _Region, b: _Region) -> _Region | None:
        """A region inside the gap ``(a, b)`` (one step outwards from an end), or None."""
        s = self.settings
        if math.isinf(a.log_k) or math.isinf(b.log_k):
            at = b.log_k - s.extend_step if math.isinf(a.log_k) else a.log_k + s.extend_step
        elif b.log_k - a.log_k < s.min_gap:
            return None
        else:
            at = (a.log_k + b.log_k) / 2
        return self.family.fit(at, self.stats, min(s.window_width, (b.log_k - a.log_k) / s.windows_per_gap))

    def _ends(self, regions: list[_Region]) -> tuple[_Region, _Region]:
        """The loop's ends. Without a residual they are known regions (``s_0`` with ``gamma_0`` at
        ``k -> 0``, ``-s_0`` with ``-gamma_0`` at ``k -> oo``; ``gamma_0`` once a region of either is
        fitted). With a residual (``x_N = x`` stays put) they are unknown."""
        if self.family.residual:
            return _Region(-math.inf, None, None), _Region(math.inf, None, None)
        start = next((r.gradient for r in regions if r.signs == self.start_signs), None)
        if start is None:
            start = next((_negated(r.gradient) for r in regions
                          if r.signs == self.end_signs and r.gradient is not None), None)
        end = None if start is None else _negated(start)
        return _Region(-math.inf, start, self.start_signs), _Region(math.inf, end, self.end_signs)

    def _gaps(self, regions: list[_Region]) -> list[tuple[_Region, _Region]]:
        """Record the line of every single-flip gap in ``found``; return the gaps still to be
        bisected, inner gaps first. An unknown end (residual) is extended while lines are
        missing, up to ``open_reach`` from the mean switch point."""
        first, last = self._ends(regions)
        todo = []
        for a, b in zip([first, *regions], [*regions, last]):
            if a.signs is None or b.signs is None:
                edge = b if a.signs is None else a
                if (len(self.found) < len(self.family.line_terms) and (a.log_k, b.log_k) not in self.dead
                        and abs(edge.log_k - self.mean_switch) < self.settings.open_reach):
                    todo.append((a, b))
                continue
            flipped = [L for L, (x, y) in enumerate(zip(a.signs, b.signs)) if x != y]
            if len(flipped) == 1 and a.gradient is not None and b.gradient is not None:
                self._record_flip(flipped[0], a.gradient, b.gradient, b.signs)
            elif (flipped and any(L not in self.found for L in flipped)
                  and (a.log_k, b.log_k) not in self.dead):
                todo.append((a, b))
        todo.sort(key=lambda gap: math.isinf(gap[0].log_k) or math.isinf(gap[1].log_k))
        return todo

    def _record_flip(self, L: int, before: Vector, after: Vector, signs_after: Signs) -> None:
        """Line ``L`` alone flips: ``gamma_B - gamma_A = kappa_L s_B,L c_L``."""
        c = tuple((y - x) / (self.family.kappas[L] * signs_after[L]) for x, y in zip(before, after))
        if L in self.found and self.found[L] != c:
            raise TransformerConditionError(Condition.PER_HEAD_SPLIT,
                                            "a line was split in two different ways")
        self.found[L] = c


def _candidates(d: int, rng: random.Random, settings: HeadSplitSettings) -> list[Token]:
    """Candidate tokens ``x``: nonzero, primitive, first nonzero entry positive."""
    pool: Iterable[Token]
    if d <= len(settings.candidate_bounds):
        r = settings.candidate_bounds[d - 1]
        pool = itertools.product(range(-r, r + 1), repeat=d)
    else:
        r = settings.random_candidate_bound
        pool = (tuple(rng.randint(-r, r) for _ in range(d)) for _ in range(settings.random_candidates))
    out = []
    for x in pool:
        if any(x) and next(t for t in x if t) > 0 and math.gcd(*x) == 1 and x not in out:
            out.append(x)
    return out


def _cost(x: Token, log_Ws: Sequence[Sequence[Sequence[float]]], settings: HeadSplitSettings) -> float:
    """How far out and how crowded the switch points ``mu_h = 2 x^T W_h x`` of ``x`` are (lower first)."""
    n = len(x)
    switch_points = sorted(2 * sum(x[i] * W[i][j] * x[j] for i in range(n) for j in range(n)) for W in log_Ws)
    crowding = sum(max(0.0, settings.crowding_gap - (b - a)) for a, b in itertools.pairwise(switch_points))
    return max(abs(m) for m in switch_points) + settings.crowding_weight * crowding


class _Split:
    """Step 3 over the candidate tokens: the ``c_L`` found so far per line, and the lines solved."""

    def __init__(self, ask: Callable[[list], fmpq], exp_Ws: Sequence[Matrix], head_linear: Sequence[Vector],
                 lines: Sequence[MergedLine], residual_linear: Vector | None, rng: random.Random,
                 settings: HeadSplitSettings):
        self.ask = ask
        self.exp_Ws = exp_Ws
        self.head_linear = head_linear
        self.lines = lines
        self.residual_linear = residual_linear
        self.settings = settings
        self.d = len(head_linear[0])
        self.stats = SplitStats()
        log_Ws = [[[_log(e) for e in row] for row in E] for E in exp_Ws]
        self.candidates = sorted(_candidates(self.d, rng, settings), key=lambda x: _cost(x, log_Ws, settings))
        self.found: list[list[_LineAtToken]] = [[] for _ in lines]
        self.solved: dict[int, tuple[Vector, ...]] = {}

    def sweep_tokens(self, cap: int, max_tokens: int) -> None:
        """One pass over the candidates, queries at most ``cap`` long, at most ``max_tokens`` tokens swept."""
        n = len(self.lines)
        tokens_at_start = self.stats.tokens
        # with a residual the loop is open: the family of -3x reaches further
        scales = self.settings.residual_scales if self.residual_linear is not None else (1,)
        for x in self.candidates:
            if len(self.solved) == n or self.stats.tokens - tokens_at_start >= max_tokens:
                return
            useful = [L for L in range(n) if L not in self.solved and self._independent(L, x)]
            if not useful:
                continue
            for scale in scales:
                if all(L in self.solved or any(part.x == x for part in self.found[L]) for L in useful):
                    break
                self._sweep_family(x, scale, cap)

    def _independent(self, L: int, x: Token) -> bool:
        """Whether ``x`` is independent of the tokens line ``L`` has been seen at."""
        return rank([part.x for part in self.found[L]] + [x]) > len(self.found[L])

    def _sweep_family(self, x: Token, scale: int, cap: int) -> None:
        family = _CopyRatioFamily(self.ask, x, self.exp_Ws, self.head_linear, self.lines, cap,
                                  self.residual_linear, scale, self.settings)
        if not family.usable:
            return
        self.stats.tokens += 1
        H = len(self.exp_Ws)
        for L, c in _Sweep(family, self.stats, self.settings).run().items():
            if L in self.solved or not self._independent(L, x):
                continue
            self.found[L].append(_LineAtToken(x, c))
            if len(self.found[L]) == self.d:
                self.solved[L] = _solve_line(self.found[L], self.lines[L].J, family.unknowns, H)

    def refuse_unsolved(self, max_length: int) -> None:
        """Raise :class:`TransformerConditionError` (``PER_HEAD_SPLIT``) if a line is not split."""
        n = len(self.lines)
        if len(self.solved) == n:
            return
        if self.stats.tokens == 0:
            raise TransformerConditionError(
                Condition.PER_HEAD_SPLIT,
                "no token x separates the sign patterns of the lines (some signed sum of the lines "
                "kappa_L J_L vanishes, so no G_x identifies its regions by their sums)")
        missing = ", ".join(str(L) for L in range(n) if L not in self.solved)
        raise TransformerConditionError(
            Condition.PER_HEAD_SPLIT,
            f"line(s) {missing} of {n} not split per head after {self.stats.tokens} tokens x "
            f"(kinks beyond the length cap {max_length} or too close together, "
            f"or lines that the uniform slice "
            f"merges)")


def learn_split(ask: Callable[[list], fmpq], exp_Ws: Sequence[Matrix], head_linear: Sequence[Vector],
                lines: Sequence[MergedLine], *, max_length: int, rng: random.Random,
                max_tokens: int | None = None, residual_linear: Vector | None = None,
                settings: HeadSplitSettings = DEFAULT_SETTINGS.transformer.head_split,
                ) -> tuple[list[tuple[Vector, ...]], SplitStats]:
    """Per line ``(J_L, kappa_L)`` the per-head parts ``(w_L1, ..., w_LH)`` (module docstring).

    ``head_linear`` are the heads' linear parts ``l_h``. With ``residual_linear`` (the
    residual's linear part ``l_res``) each line also gets its residual part ``w_L,res``
    as a last entry.
    """
    n = len(lines)
    if n > settings.max_lines:
        raise TransformerConditionError(
            Condition.PER_HEAD_SPLIT,
            f"{n} lines on the uniform slice: the split names regions by 2^n sums and takes "
            f"at most {settings.max_lines} lines")
    split = _Split(ask, exp_Ws, head_linear, lines, residual_linear, rng, settings)
    if max_tokens is None:
        max_tokens = settings.tokens_per_dimension * split.d + settings.extra_tokens
    for cap in sorted({min(max_length, settings.first_cap), max_length}):  # short queries first
        split.sweep_tokens(cap, max_tokens)
    split.refuse_unsolved(max_length)
    return [split.solved[L] for L in range(n)], split.stats


def _solve_line(parts: Sequence[_LineAtToken], J: Vector, blocks: int, H: int) -> tuple[Vector, ...]:
    """``w_Lh`` (and ``w_L,res`` when ``blocks = H + 1``) from ``c_L(x)`` at ``d`` independent ``x``,
    checked against ``sum_h w_Lh = J_L``."""
    xs = [part.x for part in parts]
    w = []
    for h in range(blocks):
        solution = solve(xs, [part.c[h] for part in parts])
        if solution is None:  # pragma: no cover - the x are independent by construction
            raise TransformerConditionError(Condition.PER_HEAD_SPLIT, "dependent tokens")
        w.append(solution)
    if tuple(sum((w[h][i] for h in range(H)), fmpq(0)) for i in range(len(J))) != tuple(J):
        raise TransformerConditionError(Condition.PER_HEAD_SPLIT,
                                        "the per-head parts do not add up to the merged line")
    return tuple(w)
