"""A sketch: rough heads from few answers, the default guide of :func:`~exactlearn.approx.learn_approx`.

A guide (:mod:`.chooser`) chooses well-conditioned configurations before they are
queried, but it has to come from the answers: a full pilot run costs at least
the schedule's ``4Hd^2 - 2H + 1`` queries (for ``H >= 3`` many more, in
redraws). A sketch is cheaper because it only has to be *rough*:

1. ``d`` configurations sharing one ``x`` (the chain's first ``d``), each asked
   at ``k = 0..2H`` and fitted through its answers
   (:func:`~exactlearn.approx.core.copyfun.certify_copy_function` on the answers
   as exact points). The first ``a`` is random; each later one is the candidate
   (of ``sketch_candidates``) whose configuration and link have the smallest
   condition predicted from the least-norm ``v_h`` and ``W_h`` of the
   configurations so far (rough: only their span is known). The heads of a new
   configuration are paired with the labelled ones by asking the matching
   configuration with the last one at ``link_points`` (``k = 1, 3, 2, ...``) only
   until one pairing predicts those answers ``link_margin`` times better than
   every other; if none does, the matching configuration with an earlier one is
   asked the same way before the configuration is drawn again. Then ``v_h``
   from the residues.
2. ``u`` (``f([t]) = u^T t``) from the answers to ``d - 1`` further single
   tokens, so ``R(0) = u^T x`` and ``R(oo) = u^T z`` are float64-exact below.
3. Up to ``d^2 - d`` further configurations in the schedule's chain order: configuration
   ``j`` shares ``x`` or ``a`` with ``j - 1`` as :func:`~exactlearn.schedule.link_kind`
   says, its other vector chosen before querying by the condition (of it and of
   its link's matching configuration) predicted from ``v_h`` and the least-norm
   ``W_h`` of the rows so far (from ``sketch_rank_prior_heads`` heads on, a
   rank-``ceil(d/H)`` ``W_h`` near them: :func:`.lowrank.rank_guess`); while the
   rows' ``x`` do not span the tokens, one that adds to their span is preferred.
   Each is asked at ``k = 1..2H-1`` with the known ``R(0)``, ``R(oo)`` (the lean
   schedule's count), fitted, and its heads
   labelled by the predicted residues ``v_h^T (x - z)``; a fit whose residues
   disagree with the prediction by more than ``residue_agreement`` is drawn
   again (after ``chain_tries`` failures freely, not sharing a vector). Before
   each, the sketch tries whether a low-rank ``W_h`` explains every row so far
   (:mod:`.lowrank`: rank ``r < d``, more rows than its ``r(2d - r)``
   parameters); if one does, step 3 ends there. The configurations are the
   sketch's ``plan``: the guided run is offered them (``reuse=``), and those it
   keeps cost it only ``k = 0`` and ``k = 2H``.
4. ``W_h`` from the low-rank fit, or solved from the ``d^2`` scores ``log rho``.

The settings named here are fields of :class:`~exactlearn.settings.GuideSettings`.
The sketch asks through the run's :class:`~exactlearn.counter.QueryCounter`,
which sends each distinct query once (the repeated ``[x]`` of step 1, for one)
and counts what it sends. It *chooses* (the best pairing, the nearest labels)
where the learner would demand uniqueness: a guide may guess, since it never
enters a returned value -- the schedule run it guides decides everything from
its own balls. A failed fit, an ill-conditioned first configuration (condition
above ``sketch_max_condition``) or an unclear pairing is drawn again; its
queries are counted like every other. Without draws and without a low-rank fit
the sketch asks between :func:`sketch_query_count` queries and
``(d-1)(2H-2)`` more. Floats (numpy) are used here by design; the fits are
python-flint's (``arb``), the pairings the library's perfect matchings
(:func:`~exactlearn.matching.perfect_matchings`, every pairing ranked).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from math import factorial
from typing import Any, NamedTuple

import numpy as np
from flint import arb

from ...counter import QueryCounter
from ...errors import InvalidArgumentError, ReconstructionError, RecoveryError
from ...exact import Token
from ...matching import perfect_matchings
from ...schedule import (
    TokenSampler,
    add_tokens,
    full_rank,
    link_kind,
    linked_tokens,
    sub_tokens,
    value_row,
    weight_row,
)
from ...settings import DEFAULT_SETTINGS, GuideSettings
from ...states import LinkKind
from ..core.balls import to_arb, to_mpf
from ..core.copyfun import Uncertified, certify_copy_function
from ..core.counts import ratio_query
from .chooser import Guide, amplifications, predicted_conditions
from .lowrank import LowRank, low_rank_weights, rank_guess
from .span import ModularSpan

__all__ = ["Sketch", "sketch_heads", "sketch_query_count"]


def sketch_query_count(d: int, heads: int) -> int:
    """The fewest queries of a sketch of all ``d^2`` configurations (no draws, every pairing clear
    after one answer, no low-rank fit): ``d(2H+1) + (d - 1) + (d^2-d)(2H-1)``."""
    return d * (2 * heads + 1) + (d - 1) + (d * d - d) * (2 * heads - 1)


@dataclass
class Sketch:
    """Rough heads ``[(W_h, v_h)]`` (float arrays, in the units of the scaled tokens) and what they cost."""

    heads: list[tuple[np.ndarray, np.ndarray]]
    queries: int  # the queries the counter answered while sketching (what it remembered costs none)
    draws: int  # configurations drawn again because their fit failed
    #: ``(x_j, z_j)`` of its configurations in the schedule's chain order (answered; what a guided chain,
    #: :func:`~exactlearn.approx.guide.chooser.guided_chain`, may reuse: ``reuse=``)
    plan: tuple[tuple[Token, Token], ...] = ()
    #: the rank of the low-rank fit the ``W_h`` come from (:mod:`.lowrank`; the plan then has fewer than
    #: ``d^2`` configurations), or ``None``: solved from ``d^2`` rows
    rank: int | None = None

    def guide(self, scale: float) -> Guide:
        """The heads in real units (``W / s^2``, ``v / s``) for tokens sent as ``s * t``."""
        return [(W / (scale * scale), v / scale) for W, v in self.heads]


class Rescale(Exception):
    """Step 1 keeps failing at this query scale: try a smaller one (``shrink``) or a larger one."""

    def __init__(self, shrink: bool):
        super().__init__("rescale")
        self.shrink = shrink


class Term(NamedTuple):
    """A head's ``rho`` (its pole is ``-1/rho``) and residue ``c`` in a fitted copy function."""

    rho: float
    c: float


class Fit(NamedTuple):
    """A copy function fitted through a configuration's answers: ``R(oo)`` and its terms by ``rho``."""

    at_infinity: arb
    terms: list[Term]


class FirstRow(NamedTuple):
    """A configuration of step 1: its tokens, its terms (heads labelled alike) and its fitted ``R(oo)``."""

    x: Token
    z: Token
    terms: list[Term]
    at_infinity: Any  # an arb midpoint, or a float

    @property
    def pair(self) -> tuple[Token, Token]:
        return self.x, self.z


class Row(NamedTuple):
    """A configuration of the plan: its tokens and the scores ``log rho_h`` of the labelled heads."""

    x: Token
    z: Token
    scores: np.ndarray


class Candidate(NamedTuple):
    """A configuration drawn for step 3, and its link's matching configuration (``None`` if drawn freely)."""

    x: Token
    z: Token
    link: tuple[Token, Token] | None


@cache
def _pairings(heads: int) -> np.ndarray:
    """``(H!, H)``: every pairing ``sigma`` of ``heads`` heads with ``heads`` terms, one per row in
    lexicographic order: the perfect matchings of the complete bipartite graph."""
    every = [[(t, t) for t in range(heads)] for _ in range(heads)]
    out = np.array([sigma for sigma, _ in perfect_matchings(every, limit=factorial(heads))], dtype=np.intp)
    out.flags.writeable = False  # cached: shared by every call
    return out


class _Sketcher:
    """Asks the sketch's queries through the run's counter and fits what they answer."""

    def __init__(self, counter: QueryCounter, d: int, heads: int, rng: random.Random, token_bound: int,
                 settings: GuideSettings = DEFAULT_SETTINGS.guide, points: Sequence[int] = ()):
        self.counter, self.d, self.H, self.settings = counter, d, heads, settings
        #: the copy counts of a measurement (``0..2H`` by default) and of a configuration whose ``R(0)``,
        #: ``R(oo)`` are known (``1..2H-1``; with other counts: all but ``0``)
        self.points = tuple(points) or tuple(range(2 * heads + 1))
        self.matched = tuple(range(1, 2 * heads)) if not points else tuple(points[1:])
        self.sampler = TokenSampler(d, token_bound, rng)
        self.small = TokenSampler(d, settings.later_token_bound, rng)  # later configurations: smaller scores
        self.rng = rng
        self.draws = 0
        self.failed: set[tuple[Token, Token]] = set()  # later configurations whose fit failed
        self.u = np.zeros(d)  # f([x]) = u^T x, once known (:func:`_linear_part`)
        #: the fitted residues of step 3's configurations, in the labelled heads' order
        self.residues: dict[tuple[Token, Token], list[float]] = {}
        self._weights, self._spanned = ModularSpan(d * d), 0  # :meth:`weight_span`
        #: :meth:`least_norm_weights`: the float weight rows and scores of the rows so far
        self._design, self._scores, self._solved = np.zeros((d * d, d * d)), np.zeros((d * d, heads)), 0
        #: rank -> the rows at each identified fit that missed them (:mod:`.lowrank`)
        self.low_rank_failures: dict[int, list[int]] = {}
        self.first_failures = 0  # step-1 configurations drawn again
        self.scores: list[float] = []  # |log rho| of the step-1 fits
        self.may_rescale = False  # whether step-1 failures may change the query scale (Rescale)
        #: the rank predictions assume (``sketch_rank_prior_heads``), or ``None``: the least-norm ``W_h``
        self.prior_rank = -(-d // heads) if heads >= settings.sketch_rank_prior_heads and heads > 1 else None

    def token(self, small: bool = False) -> Token:
        while True:
            t = (self.small if small else self.sampler).token()
            if any(t):
                return t

    def answer(self, tokens: Sequence[Token], convert: Callable[[Any], Any] = float) -> Any:
        """The answer to the query ``tokens``, converted (inside the counter's guard)."""
        return self.counter.ask(list(tokens), convert)

    def first_failed(self, what: str) -> None:
        """A step-1 configuration is drawn again; after ``sketch_rescale_after`` of them a sketch that may
        change the query scale does (:class:`Rescale`): larger when the scores fitted so far are small
        (median ``|log rho|`` below ``sketch_small_score``: crowded poles), smaller otherwise (the fits
        that failed are mostly those with large scores, so the median of those that did not says little
        about them)."""
        self.redrawn(what)
        self.first_failures += 1
        if self.may_rescale and self.first_failures >= self.settings.sketch_rescale_after:
            small = bool(self.scores) and float(np.median(self.scores)) < self.settings.sketch_small_score
            raise Rescale(shrink=not small)

    def redrawn(self, what: str) -> None:
        self.draws += 1
        limit = max(self.settings.max_sketch_draws,
                    int(self.settings.sketch_draws_per_configuration * self.d**2))
        if self.draws > limit:
            raise RecoveryError(f"the sketch drew more than {limit} configurations "
                                f"again (last: {what}); pass guide=None to learn without one")

    def fit(self, x: Token, z: Token, points: Sequence[int], at_zero: Any = None,
            at_infinity: Any = None) -> Fit | None:
        """The copy function through the answers as exact points; ``None`` if no fit."""
        values = [self.answer(ratio_query(x, z, k), to_arb) for k in points]
        limit = self.settings.sketch_max_condition if at_zero is None else None
        try:
            cert = certify_copy_function(points, values, self.H, at_zero=at_zero, at_infinity=at_infinity,
                                         rigorous=False, max_condition=limit)
        except (Uncertified, ReconstructionError, ZeroDivisionError):
            return None
        terms = [Term(float(to_mpf(rho)), float(to_mpf(c))) for rho, c in cert.terms]
        return Fit(cert.at_infinity.mid(), terms)

    @property
    def _predicted_points(self) -> tuple[int, ...]:
        """The copy counts conditions are predicted at: ``()`` (the default ``0..2H``) or the others."""
        return () if self.points == tuple(range(2 * self.H + 1)) else self.points

    def link_order(self) -> list[int]:
        """The copy counts a step-1 link is asked at, in order: ``link_points`` that are matching counts,
        then the other matching counts."""
        first = [k for k in self.settings.link_points if k in self.matched]
        return first + [k for k in self.matched if k not in first]

    def weight_span(self, rows: Sequence[Row]) -> ModularSpan:
        """The span of the weight rows ``vec(a x^T)`` of ``rows`` (the plan so far: it only grows, so the
        span is brought up to date, not rebuilt)."""
        for row in rows[self._spanned:]:
            self._weights.add(weight_row(row.x, row.z))
        self._spanned = max(self._spanned, len(rows))
        return self._weights

    def least_norm_weights(self, rows: Sequence[Row]) -> np.ndarray:
        """``(d^2, heads)``: the least-norm ``vec(W_h)`` the scores of ``rows`` fit (the plan so far, or
        its first rows: their float rows are kept, like :meth:`weight_span`, not rebuilt)."""
        for i, row in enumerate(rows[self._solved:], start=self._solved):
            self._design[i] = np.outer(sub_tokens(row.z, row.x), row.x).ravel()
            self._scores[i] = row.scores
        self._solved = max(self._solved, len(rows))
        n = len(rows)
        return np.linalg.lstsq(self._design[:n], self._scores[:n], rcond=None)[0]

    def conditions(self, guide: Guide, pairs: Sequence[tuple[Token, Token]]) -> list[float]:
        """:func:`~exactlearn.approx.guide.chooser.predicted_condition` of every pair under ``guide``
        (computed together: the same floats as one by one)."""
        return predicted_conditions(guide, 1.0, pairs, self.settings, self._predicted_points)


def _pairing(sketcher: _Sketcher, prev: list[Term], cur: list[Term], at_infinity: float, xc: Token,
             zc: Token) -> list[int] | None:
    """``sigma``: head ``h`` of ``prev`` is term ``sigma[h]`` of ``cur``: the pairing whose predicted
    answers ``R_C(k) = R_C(oo) + sum_h (c_h + c'_h) / (1 + k rho_h rho'_h)`` (shared ``x``) are nearest,
    once they are ``link_margin`` times nearer than every other pairing's; ``None`` if none is."""
    H = len(prev)
    pairings = _pairings(H)
    if len(pairings) == 1:
        return [0]  # one head: nothing to tell apart
    # the terms of every pairing at once: (pairings, H) arrays of rho_h rho'_sigma(h) and c_h + c'_sigma(h)
    rho = np.array([t.rho for t in prev]) * np.array([t.rho for t in cur])[pairings]
    c = np.array([t.c for t in prev]) + np.array([t.c for t in cur])[pairings]
    misfit = np.zeros(len(pairings))
    for k in sketcher.link_order():
        y = sketcher.answer(ratio_query(xc, zc, k))
        predicted = at_infinity + (c / (1 + float(k) * rho)).sum(axis=1)
        misfit = np.maximum(misfit, np.abs(predicted - y))
        best, second = np.partition(misfit, 1)[:2]
        if second > sketcher.settings.link_margin * best:
            return [int(t) for t in pairings[int(np.argmin(misfit))]]  # (the first of the smallest)
    return None  # no pairing stands out: draw again


def _first_configurations(sketcher: _Sketcher) -> list[FirstRow]:
    """Step 1: ``d`` configurations sharing ``x``, their heads paired through the links' answers."""
    d = sketcher.d
    rows: list[FirstRow] = []
    x = sketcher.token()
    while len(rows) < d:
        if not rows:
            x = sketcher.token()
            z = add_tokens(x, sketcher.token())
        else:
            z = _first_choice(sketcher, rows)
        design = [value_row(row.x, row.z) for row in rows] + [value_row(x, z)]
        if not full_rank(design, len(design)):
            continue  # known before querying
        if rows:
            xc, zc = linked_tokens(LinkKind.X, rows[-1].pair, (x, z))
            if not any(xc) or xc == zc:
                continue
        fitted = sketcher.fit(x, z, sketcher.points)
        if fitted is None:
            sketcher.first_failed(f"configuration {len(rows)}")
            continue
        terms = fitted.terms
        sketcher.scores.extend(abs(float(np.log(t.rho))) for t in terms)
        if rows:
            sigma = _paired(sketcher, rows, x, z, terms, fitted.at_infinity)
            if sigma is None:
                sketcher.first_failed(f"the link of configuration {len(rows)}")
                continue
            terms = [terms[s] for s in sigma]
        rows.append(FirstRow(x, z, terms, fitted.at_infinity))
    return rows


def _paired(sketcher: _Sketcher, rows: list[FirstRow], x: Token, z: Token, terms: list[Term],
            at_infinity: Any) -> list[int] | None:
    """The pairing of a new step-1 configuration with the labelled ones: through its link with the
    last (the chain's), else through the matching configuration with an earlier one (a few more
    answers instead of drawing the configuration again); ``None`` if no pairing stands out."""
    at_zero = sketcher.answer((x,))
    for row in reversed(rows):
        xc, zc = linked_tokens(LinkKind.X, row.pair, (x, z))
        if not any(xc) or xc == zc:
            continue
        sigma = _pairing(sketcher, row.terms, terms, float(row.at_infinity + at_infinity) - at_zero, xc, zc)
        if sigma is not None:
            return sigma
    return None


def _first_choice(sketcher: _Sketcher, rows: list[FirstRow]) -> Token:
    """``z`` of the next step-1 configuration (its ``x`` shared): of ``sketch_candidates`` random ``a``,
    the one whose configuration and link have the smallest condition predicted from the least-norm
    ``v_h`` and ``W_h`` of the configurations so far (rough: only their span is known)."""
    x = rows[0].x
    value_rows, residues, scored = _labelled(rows)
    values = np.linalg.lstsq(np.array(value_rows, dtype=float), residues, rcond=None)[0].T
    partial = _partial_guide(sketcher, scored, values)
    drawn: list[tuple[Token, tuple[Token, Token]]] = []  # (z, its link's matching configuration)
    for _ in range(sketcher.settings.sketch_candidates):
        z = add_tokens(x, sketcher.token())
        if z == x or not full_rank(value_rows + [value_row(x, z)], len(rows) + 1):
            continue
        xc, zc = linked_tokens(LinkKind.X, rows[-1].pair, (x, z))
        if any(xc) and xc != zc:
            drawn.append((z, (xc, zc)))
    if not drawn:
        return add_tokens(x, sketcher.token())
    costs = sketcher.conditions(partial, [(x, z) for z, _ in drawn] + [link for _, link in drawn])
    merits = np.maximum(costs[: len(drawn)], costs[len(drawn):])
    return drawn[int(np.argmin(merits))][0]  # (the first of the smallest)


def _labelled(rows: list[FirstRow]) -> tuple[list[Token], np.ndarray, list[Row]]:
    """Of step-1 rows with their heads labelled alike: the value rows ``x - z``, the residues
    ``(configurations, heads)`` and the rows with their scores ``log rho`` (the plan's first)."""
    value_rows = [value_row(row.x, row.z) for row in rows]
    residues = np.array([[term.c for term in row.terms] for row in rows])
    scored = [Row(row.x, row.z, np.log([term.rho for term in row.terms])) for row in rows]
    return value_rows, residues, scored


def _linear_part(sketcher: _Sketcher, x: Token) -> np.ndarray:
    """``u`` with ``f([t]) = u^T t``: the answers to ``[x]`` and ``d - 1`` further single tokens, solved
    (float64-exact ``R(0)``, ``R(oo)`` for the later configurations, ``d - 1`` queries)."""
    tokens = [x]
    while len(tokens) < sketcher.d:
        t = sketcher.token(True)
        if full_rank(tokens + [t], len(tokens) + 1):
            tokens.append(t)
    answers = [sketcher.answer((t,)) for t in tokens]
    return np.linalg.solve(np.array(tokens, dtype=float), np.array(answers))


def _partial_guide(sketcher: _Sketcher, rows: list[Row], values: np.ndarray) -> Guide:
    """The guide of ``v_h`` with the least-norm ``W_h`` the rows' scores fit, or, from
    ``sketch_rank_prior_heads`` heads on, a rank-``ceil(d/H)`` ``W_h`` near them
    (:func:`~exactlearn.approx.guide.lowrank.rank_guess`)."""
    d, H = sketcher.d, sketcher.H
    known_W = sketcher.least_norm_weights(rows)
    weights = [known_W[:, h].reshape(d, d) for h in range(H)]
    if sketcher.prior_rank is not None and sketcher.prior_rank < d:
        X = np.array([row.x for row in rows], dtype=float)
        A = np.array([sub_tokens(row.z, row.x) for row in rows], dtype=float)
        scores = np.array([row.scores for row in rows])
        weights = [rank_guess(X, A, scores[:, h], weights[h], sketcher.prior_rank, sketcher.settings)
                   for h in range(H)]
    return [(weights[h], values[h]) for h in range(H)]


def _candidate(sketcher: _Sketcher, j: int, prev: tuple[Token, Token], chained: bool, small: bool
               ) -> Candidate | None:
    """A random configuration ``j``: sharing a vector with ``prev`` as the chain's link ``j`` does
    (:func:`~exactlearn.schedule.link_kind`), with that link's matching configuration; or free."""
    if not chained:
        x = sketcher.token(small)
        return Candidate(x, add_tokens(x, sketcher.token(small)), None)
    kind = link_kind(j, sketcher.d)
    if kind is LinkKind.A:
        x = sketcher.token(small)
        z = add_tokens(x, sub_tokens(prev[1], prev[0]))
    else:
        x = prev[0]
        z = add_tokens(x, sketcher.token(small))
    xc, zc = linked_tokens(kind, prev, (x, z))
    if not any(xc) or xc == zc:
        return None
    return Candidate(x, z, (xc, zc))


def _choose(sketcher: _Sketcher, j: int, rows: list[Row], values: np.ndarray, chained: bool,
            small: bool = True) -> tuple[Token, Token] | None:
    """Configuration ``j``'s tokens: of ``sketch_candidates``, the one whose configuration (and link's
    matching configuration, if ``chained``) has the smallest condition predicted from ``v_h`` and
    the least-norm ``W_h`` of ``rows``; its weight row independent of theirs. While the rows' ``x``
    do not span the tokens, a candidate whose ``x`` adds to their span is preferred (a low-rank fit,
    :mod:`.lowrank`, needs them). New vectors have entries in ``[-1, 1]`` (``small``), or, if none
    of those gives an independent row, in the sampler's bound. (Independence is tested in the order
    of preference, until a candidate passes: one test, nearly always.)"""
    partial = _partial_guide(sketcher, rows, values)
    basis = _spanning(rows, sketcher.d)
    last = (rows[-1].x, rows[-1].z)
    drawn = [(i, found) for i, found in enumerate(_candidate(sketcher, j, last, chained, small)
                                                  for _ in range(sketcher.settings.sketch_candidates))
             if found is not None and (found.x, found.z) not in sketcher.failed]
    # residues as predicted, poles as far as known; every candidate's (and link's) in one batch
    costs = sketcher.conditions(partial, [(found.x, found.z) for _, found in drawn]
                                + [found.link for _, found in drawn if found.link is not None])
    links = iter(costs[len(drawn):])
    ranked = []
    for (i, found), cost in zip(drawn, costs):
        if found.link is not None:
            cost = max(cost, next(links))
        spans = basis.rank == sketcher.d or basis.independent(found.x)
        ranked.append(((not spans, cost, i), (found.x, found.z)))
    design = sketcher.weight_span(rows)
    for _, (x, z) in sorted(ranked, key=lambda item: item[0]):
        if design.independent(weight_row(x, z)):
            return x, z
    return None if not small else _choose(sketcher, j, rows, values, chained, False)


def _spanning(rows: list[Row], d: int) -> ModularSpan:
    """The span of the rows' ``x``, taken in order until they span the ``d`` token dimensions."""
    basis = ModularSpan(d)
    for row in rows:
        if basis.rank == d:
            break
        basis.add(row.x)
    return basis


def _later_configuration(sketcher: _Sketcher, j: int, rows: list[Row], values: np.ndarray, chained: bool
                         ) -> Row | None:
    """Step 3: configuration ``j`` at ``k = 1..2H-1``, ``R(0)``, ``R(oo)`` and its residues predicted
    from the rough ``v_h``; heads labelled by the predicted residues (``None``: the fit failed)."""
    H = sketcher.H
    chosen = _choose(sketcher, j, rows, values, chained)
    if chosen is None:
        return None
    x, z = chosen
    c = values @ np.array(value_row(x, z), dtype=float)
    u = sketcher.u
    known = [to_arb(float(u @ np.array(t, dtype=float))) for t in (x, z)]
    fitted = sketcher.fit(x, z, sketcher.matched, at_zero=known[0], at_infinity=known[1])
    sketcher.failed.add((x, z))  # (only a failed one is looked at again: a kept one is not a candidate)
    if fitted is None:
        return None
    terms = fitted.terms
    pairings = _pairings(H)
    fitted_c = np.array([t.c for t in terms])
    order = pairings[int(np.argmin(np.abs(fitted_c[pairings] - c).sum(axis=1)))]  # (the first of the nearest)
    agreement = sketcher.settings.residue_agreement * float(np.abs(c).max())
    if max(abs(terms[order[h]].c - c[h]) for h in range(H)) > agreement:
        return None  # the fitted residues are not the predicted ones: a poor fit, draw again
    sketcher.residues[(x, z)] = [terms[t].c for t in order]
    return Row(x, z, np.log([terms[t].rho for t in order]))


def _later_configurations(sketcher: _Sketcher, rows: list[Row], values: np.ndarray) -> LowRank | None:
    """Step 3 for configurations ``d..d^2-1``, appended to ``rows`` in chain order, until a low-rank
    fit explains the rows (:func:`~exactlearn.approx.guide.lowrank.low_rank_weights`: then it is
    returned) or all ``d^2`` are there (``None``). Each shares a vector with its predecessor as the
    schedule's chain does; after ``chain_tries`` failed fits configuration ``j`` is drawn freely (the
    run then asks it anew, its successor chains on)."""
    failed, tried = 0, -1
    while len(rows) < sketcher.d * sketcher.d:
        if tried < len(rows):  # (a failed draw leaves the rows, and so the fit, as they were)
            tried = len(rows)
            low_rank = low_rank_weights([(row.x, sub_tokens(row.z, row.x), row.scores) for row in rows],
                                        sketcher.d, sketcher.settings, sketcher.low_rank_failures)
            if low_rank is not None:
                return low_rank
        chained = failed < sketcher.settings.chain_tries
        found = _later_configuration(sketcher, len(rows), rows, values, chained=chained)
        if found is None:
            failed += 1
            sketcher.redrawn(f"configuration {len(rows)}")
            continue
        rows.append(found)
        failed = 0
    return None


def _weighted_values(sketcher: _Sketcher, rows: list[Row], residues: np.ndarray, rough: Guide) -> np.ndarray:
    """``v_h`` (heads, d) by least squares over the residues of every configuration (step 1's
    ``residues`` and step 3's), each weighted by ``1 /`` its amplification
    (:func:`~exactlearn.approx.guide.chooser.amplifications`) under the sketch's own ``rough`` heads: a
    head that barely shows in one configuration is read from those where it shows well."""
    value_rows = np.array([value_row(row.x, row.z) for row in rows], dtype=float)
    later = [np.array(sketcher.residues[(row.x, row.z)]) for row in rows[sketcher.d:]]
    observed = np.vstack([residues] + later)
    amps = [amplifications(rough, 1.0, row.x, row.z, sketcher.settings, sketcher._predicted_points)
            for row in rows]
    out = []
    for h in range(sketcher.H):
        w = np.array([0.0 if amp is None else 1.0 / amp[0][h] for amp in amps])
        if np.linalg.matrix_rank(value_rows[w > 0]) < sketcher.d:
            out.append(rough[h][1])  # too few configurations show the head: keep step 1's v_h
            continue
        out.append(np.linalg.lstsq(value_rows * w[:, None], observed[:, h] * w, rcond=None)[0])
    return np.array(out)


def sketch_heads(counter: QueryCounter | Callable[[list[Token]], Any], d: int, heads: int, *, seed: Any = 0,
                 token_bound: int = 2, settings: GuideSettings = DEFAULT_SETTINGS.guide,
                 points: Sequence[int] = (), rescale: Callable[[bool], bool] | None = None) -> Sketch:
    """Rough heads of the oracle behind ``counter`` (integer tokens in, real answers out), from few queries.

    ``counter`` is the run's :class:`~exactlearn.counter.QueryCounter` (``remember=True``: each distinct
    query is sent once); a plain callable gets one. Its oracle is the oracle as the schedule sees it (e.g.
    :class:`~exactlearn.approx.core.learner.ScaledQueries`); the heads are in its units. Raises
    :class:`~exactlearn.RecoveryError` after ``max_sketch_draws`` failed fits (or
    ``sketch_draws_per_configuration`` of the ``d^2`` configurations, if more),
    :class:`~exactlearn.InvalidArgumentError` for more than ``sketch_max_heads`` heads.

    ``rescale(shrink)``, if given, changes the query scale of the oracle behind ``counter`` (halves it
    if ``shrink``, else doubles it; ``False`` when it will not) and forgets its answers: after
    ``sketch_rescale_after`` failed step-1 configurations the sketch asks for it and starts again
    (at most ``sketch_rescales`` times), so that a layer with much larger (or smaller) scores than
    default initialisation gets a scale where its copy functions resolve.
    """
    if heads > settings.sketch_max_heads:
        raise InvalidArgumentError(f"a sketch tries every pairing of the heads, so it takes at most "
                                   f"{settings.sketch_max_heads} heads, got {heads}; pass guide=None")
    if not isinstance(counter, QueryCounter):
        counter = QueryCounter(counter, remember=True)
    asked, draws = counter.queries, 0
    for attempt in range(settings.sketch_rescales + 1):
        rng = random.Random(f"exactlearn.approx.sketch:{seed}" + (f":{attempt}" if attempt else ""))
        sketcher = _Sketcher(counter, d, heads, rng, token_bound, settings, points)
        sketcher.may_rescale = rescale is not None and attempt < settings.sketch_rescales
        try:
            first = _first_configurations(sketcher)
            break
        except Rescale as exc:
            draws += sketcher.draws
            if rescale is None or not rescale(exc.shrink):
                raise RecoveryError("the sketch's first configurations do not resolve at any query scale "
                                    "it may take; pass guide=None or scale=") from None
    else:  # pragma: no cover - the last attempt may not rescale, so it breaks or raises
        raise AssertionError("unreachable")
    value_rows, residues, rows = _labelled(first)
    values = np.linalg.solve(np.array(value_rows, dtype=float), residues).T  # (heads, d)
    sketcher.u = _linear_part(sketcher, first[0].x)
    low_rank = _later_configurations(sketcher, rows, values)
    if low_rank is None:
        D = np.array([weight_row(row.x, row.z) for row in rows], dtype=float)
        W = np.linalg.solve(D, np.array([row.scores for row in rows]))  # (d^2, heads)
        weights = [W[:, h].reshape(d, d) for h in range(heads)]
    else:
        weights = low_rank.weights
    values = _weighted_values(sketcher, rows, residues, [(weights[h], values[h]) for h in range(heads)])
    out = [(weights[h], values[h]) for h in range(heads)]
    return Sketch(out, counter.queries - asked, draws + sketcher.draws, tuple((row.x, row.z) for row in rows),
                  rank=None if low_rank is None else low_rank.rank)
