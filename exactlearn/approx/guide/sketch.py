"""A sketch: rough heads from few answers, the default guide of :func:`~exactlearn.approx.learn_approx`.

A guide (:mod:`.guide`) chooses well-conditioned configurations before they are
queried, but it has to come from the answers: a full pilot run costs at least
the schedule's ``4Hd^2 - 2H + 1`` queries (for ``H >= 3`` many more, in
redraws). A sketch is cheaper because it only has to be *rough*:

1. ``d`` configurations sharing one ``x`` (the chain's first ``d``), each asked
   at ``k = 0..2H`` (the repeated query ``[x]`` once) and fitted through its
   answers (:func:`~exactlearn.approx.copyfun.certify_copy_function` on the
   answers as exact points). The first ``a`` is random; each later one is the
   candidate (of ``_CANDIDATES``) whose configuration and link have the
   smallest condition predicted from the least-norm ``v_h`` and ``W_h`` of the
   configurations so far (rough: only their span is known). The heads of a new
   configuration are paired with the labelled ones by asking the matching
   configuration with the last one at ``k = 1, 3, 2, ...`` only until one
   pairing predicts those answers ``LINK_MARGIN`` times better than every
   other; if none does, the matching configuration with an earlier one is
   asked the same way before the configuration is drawn again. Then ``v_h``
   from the residues.
2. ``u`` (``f([t]) = u^T t``) from the answers to ``d - 1`` further single
   tokens, so ``R(0) = u^T x`` and ``R(oo) = u^T z`` are float64-exact below.
3. Up to ``d^2 - d`` further configurations in the schedule's chain order: configuration
   ``j`` shares ``x`` or ``a`` with ``j - 1`` as :func:`~exactlearn.schedule.link_kind`
   says, its other vector chosen before querying by the condition (of it and of
   its link's matching configuration) predicted from ``v_h`` and the least-norm
   ``W_h`` of the rows so far (while the rows' ``x`` do not span the tokens, one
   that adds to their span is preferred). Each is asked at ``k = 1..2H-1`` with the
   known ``R(0)``, ``R(oo)`` (the lean schedule's count), fitted, and its heads
   labelled by the predicted residues ``v_h^T (x - z)``; a fit whose residues
   disagree with the prediction by more than ``RESIDUE_AGREEMENT`` is drawn
   again (after ``CHAIN_TRIES`` failures freely, not sharing a vector). Before
   each, the sketch tries whether a low-rank ``W_h`` explains every row so far
   (:mod:`.lowrank`: rank ``r < d``, more rows than its ``r(2d - r)``
   parameters); if one does, step 3 ends there (torch layers with ``d = H``:
   rank one, 9 of the 16 configurations at ``d = 4``). The configurations are the
   sketch's ``plan``: the guided run is offered them (``reuse=``), and those it
   keeps cost it only ``k = 0`` and ``k = 2H``.
4. ``W_h`` from the low-rank fit, or solved from the ``d^2`` scores ``log rho``.

The sketch *chooses* (the best pairing, the nearest labels) where the learner
would demand uniqueness: a guide may guess, since it never enters a returned
value -- the schedule run it guides decides everything from its own balls. A
failed fit, an ill-conditioned first configuration (condition above
``SKETCH_MAX_CONDITION``) or an unclear pairing is drawn again; its queries are
counted by the oracle like every other. Without draws and without a low-rank
fit the sketch asks between ``d(2H+1) + (d - 1) + (d^2-d)(2H-1)`` (``d = H = 4``:
123) and ``(d-1)(2H-2)`` more queries; a rank-one fit at ``d = H = 4`` ends it
after 74. Floats (numpy) are used here by design.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import permutations
from typing import Any

import numpy as np

from ...errors import InvalidArgumentError, ReconstructionError, RecoveryError
from ...exact import Token
from ...schedule import (
    TokenSampler,
    add_tokens,
    copies_query,
    full_rank,
    link_kind,
    linked_tokens,
    sub_tokens,
    value_row,
    weight_row,
)
from ...states import LinkKind
from ..core.balls import to_arb, to_mpf
from ..core.copyfun import Uncertified, certify_copy_function
from .chooser import Guide, amplifications, predicted_condition
from .lowrank import low_rank_weights

__all__ = ["Sketch", "sketch_heads", "sketch_query_count", "SKETCH_MIN_HEADS", "SKETCH_MAX_HEADS",
           "SKETCH_SCALE", "MAX_SKETCH_DRAWS"]

#: ``learn_approx(..., guide="auto")`` (the default) sketches first from this many heads on; with fewer,
#: random configurations are mostly well conditioned and a sketch would cost more than it saves.
SKETCH_MIN_HEADS = 3
#: ... and up to this many: the sketch pairs and labels heads by trying every permutation (``H!`` of
#: them, 720 here), so it is bounded; with more heads the default learns without a sketch.
SKETCH_MAX_HEADS = 6
#: The query scale of a run that sketches, unless ``scale=`` is given (measured on torch layers with
#: default initialisation, d = 4, H = 4: scale 1 leaves the sketch's first configurations too crowded).
SKETCH_SCALE = 2
#: The sketch draws again every configuration whose condition (:func:`~exactlearn.approx.copyfun.condition`)
#: exceeds this: with float64 answers its scores would be off by more than about 1e-4.
SKETCH_MAX_CONDITION = 10**13
#: A later configuration is kept when its fitted residues agree with the predicted ones to this fraction
#: of the largest (the residues are fitted freely; a fit that misses them has misplaced its poles too).
RESIDUE_AGREEMENT = 1e-2
#: Configurations the sketch may draw again (failed fits) before it gives up.
MAX_SKETCH_DRAWS = 40
#: Candidate token vectors per later configuration (the one with the smallest predicted condition is asked).
_CANDIDATES = 64
#: Failed fits of a later configuration sharing a vector with its predecessor before it is drawn freely.
CHAIN_TRIES = 2
#: Token entries of the later configurations lie in ``[-1, 1]``: smaller scores, fewer poles out of sight
#: of ``k = 1..2H-1``.
LATER_TOKEN_BOUND = 1


def sketch_query_count(d: int, heads: int) -> int:
    """The fewest queries of a sketch of all ``d^2`` configurations (no draws, every pairing clear
    after one answer, no low-rank fit): ``d(2H+1) + (d - 1) + (d^2-d)(2H-1)``."""
    return d * (2 * heads + 1) + (d - 1) + (d * d - d) * (2 * heads - 1)


@dataclass
class Sketch:
    """Rough heads ``[(W_h, v_h)]`` (float arrays, in the units of the scaled tokens) and what they cost."""

    heads: list[tuple[np.ndarray, np.ndarray]]
    queries: int  # distinct queries the sketch asked
    draws: int  # configurations drawn again because their fit failed
    #: ``(x_j, z_j)`` of its ``d^2`` configurations in the schedule's chain order (answered; what a
    #: :class:`~exactlearn.approx.guide.GuidedTokenChain` may reuse, ``reuse=``)
    plan: tuple[tuple[Token, Token], ...] = ()
    #: the rank of the low-rank fit the ``W_h`` come from (:mod:`.lowrank`; the plan then has fewer than
    #: ``d^2`` configurations), or ``None``: solved from ``d^2`` rows
    rank: int | None = None

    def guide(self, scale: float) -> Guide:
        """The heads in real units (``W / s^2``, ``v / s``) for tokens sent as ``s * t``."""
        return [(W / (scale * scale), v / scale) for W, v in self.heads]


class _Sketcher:
    """Asks the sketch's queries (each distinct query once) and fits what they answer."""

    def __init__(self, ask: Callable[[list[Token]], Any], d: int, heads: int, rng: random.Random,
                 token_bound: int):
        self.ask, self.d, self.H = ask, d, heads
        self.sampler = TokenSampler(d, token_bound, rng)
        self.small = TokenSampler(d, LATER_TOKEN_BOUND, rng)  # later configurations: smaller scores
        self.rng = rng
        self.answers: dict[tuple[Token, ...], float] = {}
        self.draws = 0
        self.failed: set[tuple[Token, Token]] = set()  # later configurations whose fit failed
        self.u = np.zeros(d)  # f([x]) = u^T x, once known (:func:`_linear_part`)
        #: the fitted residues of step 3's configurations, in the labelled heads' order
        self.residues: dict[tuple[Token, Token], list[float]] = {}

    def token(self, small: bool = False) -> Token:
        while True:
            t = (self.small if small else self.sampler).token()
            if any(t):
                return t

    def answer(self, tokens: tuple[Token, ...]) -> Any:
        if tokens not in self.answers:
            self.answers[tokens] = self.ask(list(tokens))
        return self.answers[tokens]

    def redrawn(self, what: str) -> None:
        self.draws += 1
        if self.draws > MAX_SKETCH_DRAWS:
            raise RecoveryError(f"the sketch drew more than {MAX_SKETCH_DRAWS} configurations again "
                                f"(last: {what}); pass guide=None to learn without one")

    def fit(self, x: Token, z: Token, points: Sequence[int], at_zero: Any = None,
            at_infinity: Any = None) -> tuple[Any, list[tuple[float, float]]] | None:
        """``(R(oo), [(rho_h, c_h)])`` fitted through the answers as exact points; ``None`` if no fit."""
        values = [to_arb(self.answer(copies_query(x, z, k))) for k in points]
        try:
            cert = certify_copy_function(points, values, self.H, at_zero=at_zero, at_infinity=at_infinity,
                                         rigorous=False,
                                         max_condition=SKETCH_MAX_CONDITION if at_zero is None else None)
        except (Uncertified, ReconstructionError, ZeroDivisionError):
            return None
        terms = [(float(to_mpf(rho)), float(to_mpf(c))) for rho, c in cert.terms]
        return cert.at_infinity.mid(), terms


#: Copy numbers at which a link's matching configuration is asked in the sketch, in this order, until
#: one pairing of the heads predicts its answers ``LINK_MARGIN`` times better than every other (no fit).
LINK_POINTS = (1, 3, 2, 5, 4, 6, 7)
LINK_MARGIN = 100.0


def _pairing(sk: _Sketcher, prev: list, cur: list, at_infinity: float, xc: Token, zc: Token
             ) -> list[int] | None:
    """``sigma``: head ``h`` of ``prev`` is term ``sigma[h]`` of ``cur``: the pairing whose predicted
    answers ``R_C(k) = R_C(oo) + sum_h (c_h + c'_h) / (1 + k rho_h rho'_h)`` (shared ``x``) are nearest."""
    H = len(prev)
    link: dict[int, float] = {}

    def misfit(sigma: tuple[int, ...]) -> float:
        pairs = [(prev[h][0] * cur[sigma[h]][0], prev[h][1] + cur[sigma[h]][1]) for h in range(H)]
        return max(abs(at_infinity + sum(c / (1 + k * rho) for rho, c in pairs) - y) for k, y in link.items())

    for k in [k for k in LINK_POINTS if k < 2 * H]:
        link[k] = float(sk.answer(copies_query(xc, zc, k)))
        ranked = sorted(permutations(range(H)), key=misfit)
        if misfit(ranked[1]) > LINK_MARGIN * misfit(ranked[0]):
            return list(ranked[0])
    return None  # no pairing stands out: draw again


def _first_configurations(sk: _Sketcher) -> list[tuple[Token, Token, list, Any]]:
    """Step 1: ``d`` configurations sharing ``x``, their heads paired through the links' answers."""
    d, H = sk.d, sk.H
    rows: list[tuple[Token, Token, list, Any]] = []
    x = sk.token()
    while len(rows) < d:
        if not rows:
            x = sk.token()
            z = add_tokens(x, sk.token())
        else:
            z = _first_choice(sk, rows)
        design = [value_row(px, pz) for px, pz, _, _ in rows] + [value_row(x, z)]
        if not full_rank(design, len(design)):
            continue  # known before querying
        if rows:
            xc, zc = linked_tokens(LinkKind.X, rows[-1][:2], (x, z))
            if not any(xc) or xc == zc:
                continue
        fitted = sk.fit(x, z, range(2 * H + 1))
        if fitted is None:
            sk.redrawn(f"configuration {len(rows)}")
            continue
        infinity, terms = fitted
        if rows:
            sigma = _paired(sk, rows, x, z, terms, infinity)
            if sigma is None:
                sk.redrawn(f"the link of configuration {len(rows)}")
                continue
            terms = [terms[s] for s in sigma]
        rows.append((x, z, terms, infinity))
    return rows


def _paired(sk: _Sketcher, rows: list, x: Token, z: Token, terms: list, infinity: Any) -> list[int] | None:
    """The pairing of a new step-1 configuration with the labelled ones: through its link with the
    last (the chain's), else through the matching configuration with an earlier one (a few more
    answers instead of drawing the configuration again); ``None`` if no pairing stands out."""
    y0 = float(sk.answer((x,)))
    for px, pz, pterms, pinf in reversed(rows):
        xc, zc = linked_tokens(LinkKind.X, (px, pz), (x, z))
        if not any(xc) or xc == zc:
            continue
        sigma = _pairing(sk, pterms, terms, float(pinf + infinity) - y0, xc, zc)
        if sigma is not None:
            return sigma
    return None


def _first_choice(sk: _Sketcher, rows: list) -> Token:
    """``z`` of the next step-1 configuration (its ``x`` shared): of ``_CANDIDATES`` random ``a``, the
    one whose configuration and link have the smallest condition predicted from the least-norm
    ``v_h`` and ``W_h`` of the configurations so far (rough: only their span is known)."""
    x = rows[0][0]
    value_rows, residues, logs = _labelled(rows)
    values = np.linalg.lstsq(np.array(value_rows, dtype=float), residues, rcond=None)[0].T
    design, partial = _partial_guide(sk, logs, values)
    best, merit = None, np.inf
    for _ in range(_CANDIDATES):
        z = add_tokens(x, sk.token())
        if z == x or not full_rank(value_rows + [value_row(x, z)], len(rows) + 1):
            continue
        xc, zc = linked_tokens(LinkKind.X, rows[-1][:2], (x, z))
        if not any(xc) or xc == zc:
            continue
        cost = max(predicted_condition(partial, 1.0, x, z), predicted_condition(partial, 1.0, xc, zc))
        if best is None or cost < merit:
            best, merit = z, cost
    return best if best is not None else add_tokens(x, sk.token())


def _labelled(rows: list) -> tuple[list, np.ndarray, list]:
    """Of step-1 rows ``(x, z, terms, R(oo))`` with their heads labelled alike: the value rows
    ``x - z``, the residues ``(configurations, heads)`` and the rows ``(x, z, log rho)`` of step 3."""
    value_rows = [value_row(x, z) for x, z, _, _ in rows]
    residues = np.array([[c for _, c in terms] for _, _, terms, _ in rows])
    logs = [(x, z, np.log([rho for rho, _ in terms])) for x, z, terms, _ in rows]
    return value_rows, residues, logs


def _linear_part(sk: _Sketcher, x: Token) -> np.ndarray:
    """``u`` with ``f([t]) = u^T t``: the answers to ``[x]`` and ``d - 1`` further single tokens, solved
    (float64-exact ``R(0)``, ``R(oo)`` for the later configurations, ``d - 1`` queries)."""
    tokens = [x]
    while len(tokens) < sk.d:
        t = sk.token(True)
        if full_rank(tokens + [t], len(tokens) + 1):
            tokens.append(t)
    answers = [float(sk.answer((t,))) for t in tokens]
    return np.linalg.solve(np.array(tokens, dtype=float), np.array(answers))


def _partial_guide(sk: _Sketcher, rows: list, values: np.ndarray) -> tuple[list, list]:
    """The weight design of ``rows`` and the guide ``v_h`` with the least-norm ``W_h`` they fit."""
    d, H = sk.d, sk.H
    design = [weight_row(x, z) for x, z, _ in rows]
    logs = np.array([s for _, _, s in rows])  # (configurations, heads)
    known_W = np.linalg.lstsq(np.array(design, dtype=float), logs, rcond=None)[0]
    return design, [(known_W[:, h].reshape(d, d), values[h]) for h in range(H)]


def _candidate(sk: _Sketcher, j: int, prev: tuple[Token, Token], chained: bool, small: bool
               ) -> tuple[Token, Token, tuple[Token, Token] | None] | None:
    """A random configuration ``j``: sharing a vector with ``prev`` as the chain's link ``j`` does
    (:func:`~exactlearn.schedule.link_kind`), with that link's matching configuration; or free."""
    if not chained:
        x = sk.token(small)
        return x, add_tokens(x, sk.token(small)), None
    kind = link_kind(j, sk.d)
    if kind is LinkKind.A:
        x = sk.token(small)
        z = add_tokens(x, sub_tokens(prev[1], prev[0]))
    else:
        x = prev[0]
        z = add_tokens(x, sk.token(small))
    xc, zc = linked_tokens(kind, prev, (x, z))
    if not any(xc) or xc == zc:
        return None
    return x, z, (xc, zc)


def _choose(sk: _Sketcher, j: int, rows: list, values: np.ndarray, chained: bool, small: bool = True
            ) -> tuple[Token, Token] | None:
    """Configuration ``j``'s tokens: of ``_CANDIDATES``, the one whose configuration (and link's
    matching configuration, if ``chained``) has the smallest condition predicted from ``v_h`` and
    the least-norm ``W_h`` of ``rows``; its weight row independent of theirs. While the rows' ``x``
    do not span the tokens, a candidate whose ``x`` adds to their span is preferred (a low-rank fit,
    :mod:`.lowrank`, needs them). New vectors have entries in ``[-1, 1]`` (``small``), or, if none
    of those gives an independent row, in the sampler's bound."""
    design, partial = _partial_guide(sk, rows, values)
    basis = _spanning(rows, sk.d)
    best, merit = None, (True, np.inf)
    for _ in range(_CANDIDATES):
        found = _candidate(sk, j, rows[-1][:2], chained, small)
        if found is None:
            continue
        x, z, link = found
        if (x, z) in sk.failed or not full_rank(design + [weight_row(x, z)], len(design) + 1):
            continue
        cost = predicted_condition(partial, 1.0, x, z)  # residues as predicted, poles as far as known
        if link is not None:
            cost = max(cost, predicted_condition(partial, 1.0, *link))
        spans = len(basis) == sk.d or full_rank(basis + [x], len(basis) + 1)
        if best is None or (not spans, cost) < merit:
            best, merit = (x, z), (not spans, cost)
    return best if best is not None or not small else _choose(sk, j, rows, values, chained, False)


def _spanning(rows: list, d: int) -> list[Token]:
    """Independent ``x`` of ``rows``, in order, until they span the ``d`` token dimensions."""
    basis: list[Token] = []
    for x, _, _ in rows:
        if len(basis) == d:
            break
        if full_rank(basis + [x], len(basis) + 1):
            basis.append(x)
    return basis


def _later_configuration(sk: _Sketcher, j: int, rows: list, values: np.ndarray, chained: bool
                         ) -> tuple[Token, Token, np.ndarray] | None:
    """Step 3: configuration ``j`` at ``k = 1..2H-1``, ``R(0)``, ``R(oo)`` and its residues predicted
    from the rough ``v_h``; heads labelled by the predicted residues (``None``: the fit failed)."""
    H = sk.H
    chosen = _choose(sk, j, rows, values, chained)
    if chosen is None:
        return None
    x, z = chosen
    c = values @ np.array(value_row(x, z), dtype=float)
    u = sk.u
    known = [to_arb(float(u @ np.array(t, dtype=float))) for t in (x, z)]
    fitted = sk.fit(x, z, range(1, 2 * H), at_zero=known[0], at_infinity=known[1])
    sk.failed.add((x, z))  # (only a failed one is looked at again: a kept one is not a candidate)
    if fitted is None:
        return None
    terms = fitted[1]
    order = min(permutations(range(H)), key=lambda p: sum(abs(terms[p[h]][1] - c[h]) for h in range(H)))
    if max(abs(terms[order[h]][1] - c[h]) for h in range(H)) > RESIDUE_AGREEMENT * float(np.abs(c).max()):
        return None  # the fitted residues are not the predicted ones: a poor fit, draw again
    sk.residues[(x, z)] = [terms[t][1] for t in order]
    return x, z, np.log([terms[t][0] for t in order])


def _later_configurations(sk: _Sketcher, rows: list, values: np.ndarray) -> tuple[int, list] | None:
    """Step 3 for configurations ``d..d^2-1``, appended to ``rows`` in chain order, until a low-rank
    fit explains the rows (:func:`~exactlearn.approx.lowrank.low_rank_weights`: then its rank and
    ``W_h`` are returned) or all ``d^2`` are there (``None``). Each shares a vector with its
    predecessor as the schedule's chain does; after ``CHAIN_TRIES`` failed fits configuration ``j``
    is drawn freely (the run then asks it anew, its successor chains on)."""
    failed, tried = 0, -1
    while len(rows) < sk.d * sk.d:
        if tried < len(rows):  # (a failed draw leaves the rows, and so the fit, as they were)
            tried = len(rows)
            low_rank = low_rank_weights([(x, sub_tokens(z, x), s) for x, z, s in rows], sk.d)
            if low_rank is not None:
                return low_rank
        found = _later_configuration(sk, len(rows), rows, values, chained=failed < CHAIN_TRIES)
        if found is None:
            failed += 1
            sk.redrawn(f"configuration {len(rows)}")
            continue
        rows.append(found)
        failed = 0
    return None


def _weighted_values(sk: _Sketcher, rows: list, residues: np.ndarray, rough: Guide) -> np.ndarray:
    """``v_h`` (heads, d) by least squares over the residues of every configuration (step 1's
    ``residues`` and step 3's), each weighted by ``1 /`` its amplification
    (:func:`~exactlearn.approx.guide.amplifications`) under the sketch's own ``rough`` heads: a
    head that barely shows in one configuration is read from those where it shows well."""
    value_rows = np.array([value_row(x, z) for x, z, _ in rows], dtype=float)
    observed = np.vstack([residues] + [np.array(sk.residues[(x, z)]) for x, z, _ in rows[sk.d:]])
    amps = [amplifications(rough, 1.0, x, z) for x, z, _ in rows]
    out = []
    for h in range(sk.H):
        w = np.array([0.0 if amp is None else 1.0 / amp[0][h] for amp in amps])
        if np.linalg.matrix_rank(value_rows[w > 0]) < sk.d:
            out.append(rough[h][1])  # too few configurations show the head: keep step 1's v_h
            continue
        out.append(np.linalg.lstsq(value_rows * w[:, None], observed[:, h] * w, rcond=None)[0])
    return np.array(out)


def sketch_heads(ask: Callable[[list[Token]], Any], d: int, heads: int, *, seed: Any = 0,
                 token_bound: int = 2) -> Sketch:
    """Rough heads of the oracle ``ask`` (integer tokens in, real answers out), from few queries.

    ``ask`` is the oracle as the schedule sees it (e.g. :class:`~exactlearn.approx.learn.ScaledQueries`);
    the heads are in its units. Raises :class:`~exactlearn.RecoveryError` after ``MAX_SKETCH_DRAWS``
    failed fits, :class:`~exactlearn.InvalidArgumentError` for more than ``SKETCH_MAX_HEADS`` heads.
    """
    if heads > SKETCH_MAX_HEADS:
        raise InvalidArgumentError(f"a sketch tries every pairing of the heads, so it takes at most "
                                   f"{SKETCH_MAX_HEADS} heads, got {heads}; pass guide=None")
    rng = random.Random(f"exactlearn.approx.sketch:{seed}")
    sk = _Sketcher(ask, d, heads, rng, token_bound)
    first = _first_configurations(sk)
    value_rows, residues, rows = _labelled(first)
    values = np.linalg.solve(np.array(value_rows, dtype=float), residues).T  # (heads, d)
    sk.u = _linear_part(sk, first[0][0])
    low_rank = _later_configurations(sk, rows, values)
    if low_rank is None:
        D = np.array([weight_row(x, z) for x, z, _ in rows], dtype=float)
        W = np.linalg.solve(D, np.array([s for _, _, s in rows]))  # (d^2, heads)
        weights = [W[:, h].reshape(d, d) for h in range(heads)]
    else:
        weights = low_rank[1]
    values = _weighted_values(sk, rows, residues, [(weights[h], values[h]) for h in range(heads)])
    out = [(weights[h], values[h]) for h in range(heads)]
    return Sketch(out, len(sk.answers), sk.draws, tuple((x, z) for x, z, _ in rows),
                  rank=None if low_rank is None else low_rank[0])
