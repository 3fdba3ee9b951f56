"""Choosing configurations before querying: a guide model predicts their conditioning.

The constant ``C`` (:mod:`.sensitivity`) is dominated by the worst-conditioned
copy functions: with samples at ``k = 0..2H`` a configuration is well conditioned
only when its poles ``-1/rho_h`` are spread and its residues are away from zero,
and random integer tokens rarely give that for ``H >= 3``. A **guide** -- any
approximation of the heads: a known model in a simulation, or a pilot recovery
of the same black box -- predicts ``rho_h = exp(s^2 a^T W_h x)`` and
``c_h = -s v_h^T a`` of a candidate configuration ``(x, z = x + a)`` before any
query. :class:`GuidedTokenChain` draws, for every token vector a configuration
creates, a number of candidates and keeps the one whose configuration (and
whose link's matching configuration) has the smallest predicted condition.

The guide only chooses *which* tokens are asked. Every decision after that is
the learner's own, from the answers and their balls: a poor guide costs
conditioning (a larger ``C``, redraws), never correctness. Floats (numpy) are
used here by design; nothing computed here enters a returned value.

>>> import numpy as np
>>> rough = [(np.zeros((2, 2)), np.array([0.0, 1.0]))]
>>> predicted_condition(rough, 1, (1, 0), (1, 1)) < 100   # one head, rho = 1, c = -1
True
>>> predicted_condition(rough, 1, (1, 0), (2, 0))         # c = 0: the head does not show
inf
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..chain import TokenChain
from ..exact import Token
from ..schedule import (
    TokenSampler,
    add_tokens,
    link_kind,
    linked_tokens,
    sub_tokens,
    value_row,
    weight_row,
)

__all__ = ["GuidedTokenChain", "predicted_condition", "predicted_constant", "amplifications",
           "GUIDE_CANDIDATES", "GUIDE_PLANS", "REUSE_FACTOR", "Guide"]

#: Candidate token vectors drawn for every vector a configuration creates.
GUIDE_CANDIDATES = 48
#: Whole plans (every configuration's tokens) drawn before the first query; the one with the smallest
#: predicted constant C (:func:`predicted_constant`) is asked.
GUIDE_PLANS = 16
#: A vector offered for reuse (already answered, e.g. by a sketch) is kept when its predicted condition is
#: at most this factor above the best fresh candidate's: its answers cost no query.
REUSE_FACTOR = 10.0

Guide = Sequence[tuple[np.ndarray, np.ndarray]]


def amplifications(guide: Guide, scale: float, x: Token, z: Token) -> tuple[np.ndarray, np.ndarray] | None:
    """Per head, ``sum_k |d c_h / d y_k|`` and ``sum_k |d log rho_h / d y_k|`` as the guide predicts them
    for the measurement ``(x, z)`` (``k = 0..2H``); ``None`` when its copy function is singular there."""
    a = np.array(z, dtype=float) - np.array(x, dtype=float)
    xv = np.array(x, dtype=float)
    H = len(guide)
    scores = np.array([scale * scale * (a @ W @ xv) for W, _ in guide])
    if np.max(np.abs(scores)) > 40:
        return None
    rho = np.exp(scores)
    c = np.array([-scale * (v @ a) for _, v in guide])
    ks = np.arange(2 * H + 1, dtype=float)[:, None]
    den = 1 + ks * rho[None, :]
    J = np.hstack([np.ones((2 * H + 1, 1)), 1 / den, -(c[None, :] * ks) / den**2])
    try:
        L = np.linalg.inv(J)
    except np.linalg.LinAlgError:
        return None
    absL = np.abs(L).sum(axis=1)
    out = absL[1 : H + 1], absL[H + 1 :] / rho
    return out if np.all(np.isfinite(out[0])) and np.all(np.isfinite(out[1])) else None


def predicted_condition(guide: Guide, scale: float, x: Token, z: Token) -> float:
    """The condition (:func:`~exactlearn.approx.copyfun.condition`) the guide predicts for ``(x, z)``.

    ``inf`` when the guide's copy function is singular there (equal poles, a zero residue).
    """
    amp = amplifications(guide, scale, x, z)
    return float("inf") if amp is None else float(max(np.max(amp[0]), np.max(amp[1])))


def predicted_constant(guide: Guide, scale: float, pairs: Sequence[tuple[Token, Token]]) -> float:
    """An upper estimate of the constant ``C`` (:mod:`.sensitivity`) of the measurements ``pairs``.

    Each configuration's amplifications (:func:`amplifications`) pass through the
    weight design (``W_h = s^-2 D^-1 log rho_h``) and the value design (least
    squares); absolute values are summed over configurations (no merging of
    repeated queries), so this bounds the first-order ``C`` the guide predicts.
    """
    amps = [amplifications(guide, scale, x, z) for x, z in pairs]
    if any(a is None for a in amps):
        return float("inf")
    D = np.array([weight_row(x, z) for x, z in pairs], dtype=float)
    A = np.array([value_row(x, z) for x, z in pairs], dtype=float)
    try:
        weights = np.abs(np.linalg.inv(D)) / (scale * scale)
        values = np.abs(np.linalg.pinv(A)) / scale
    except np.linalg.LinAlgError:
        return float("inf")
    score_amp = np.array([a[1] for a in amps if a is not None])  # (configurations, heads)
    residue_amp = np.array([a[0] for a in amps if a is not None])
    return float(max(np.max(weights @ score_amp), np.max(values @ residue_amp)))


class GuidedTokenChain(TokenChain):
    """A :class:`~exactlearn.chain.TokenChain` whose new token vectors are chosen by a guide.

    For each vector configuration ``j`` creates, ``candidates`` random vectors are
    drawn (from the chain's own sampler) and the one minimising the larger of the
    predicted conditions of configuration ``j`` and of its link's matching
    configuration is kept. A redraw (after the answers showed a problem) chooses the
    new vector the same way, by the configurations using it and the links after them.

    ``reuse = [(x_0, z_0), (x_1, z_1), ...]``: configurations in chain order that
    were already answered (a sketch's): configuration 0 takes ``x_0``, and a
    configuration whose shared vector is the plan's takes the plan's other vector
    unless its predicted condition (and its link's) exceeds ``REUSE_FACTOR``
    times the best fresh candidate's.
    """

    def __init__(self, d: int, n_full: int, sampler: TokenSampler, guide: Guide, scale: float,
                 candidates: int = GUIDE_CANDIDATES, reuse: Sequence[tuple[Token, Token]] = (),
                 plans: int | None = None):
        super().__init__(d, n_full, sampler)
        self.plans = GUIDE_PLANS if plans is None else plans
        self.guide = list(guide)
        self.scale = scale
        self.candidates = candidates
        self.reuse = list(reuse)
        self._conditions: dict[tuple[Token, Token], float] = {}

    def draw(self, start: int = 0) -> None:
        """The first draw: ``plans`` guided plans, the one with the smallest :func:`predicted_constant`."""
        if start or self.plans <= 1:
            super().draw(start)
            return
        best, best_cost = None, float("inf")
        for _ in range(self.plans):
            super().draw(0)
            pairs = [self.tokens_of(j) for j in range(self.n_configs)]
            cost = predicted_constant(self.guide, self.scale, pairs)
            if best is None or cost < best_cost:
                best, best_cost = self._state(), cost
        assert best is not None
        (self.xs, self.as_, self.slot_x, self.slot_a, self.owner_x, self.owner_a, self.configs,
         self.weight_design) = best

    def _state(self) -> tuple:
        """Everything a draw sets, the weight design its pre-query check kept included."""
        return (list(self.xs), list(self.as_), list(self.slot_x), list(self.slot_a), list(self.owner_x),
                list(self.owner_a), list(self.configs), self.weight_design)

    def _condition(self, x: Token, z: Token) -> float:
        """:func:`predicted_condition` of ``(x, z)``, computed once per pair (plans redraw the same pairs)."""
        known = self._conditions.get((x, z))
        if known is None:
            known = self._conditions[(x, z)] = predicted_condition(self.guide, self.scale, x, z)
        return known

    def _cost(self, j: int, x: Token, a: Token) -> float:
        z = add_tokens(x, a)
        cost = self._condition(x, z)
        if 1 <= j < self.n_chained:
            px = self.xs[self.slot_x[j - 1]]
            prev = (px, add_tokens(px, self.as_[self.slot_a[j - 1]]))
            xc, zc = linked_tokens(link_kind(j, self.d), prev, (x, z))
            if not any(xc) or xc == zc:
                return float("inf")
            cost = max(cost, self._condition(xc, zc))
        return cost

    def _redrawn_vector(self, slot: int, slots: list[int]) -> Token:
        """Of ``candidates`` random vectors, the one minimising the largest :meth:`_cost` of the
        configurations using ``slot`` and of the links after them (a redraw chosen like a first draw)."""
        vectors = self.xs if slots is self.slot_x else self.as_
        users = [i for i in range(self.n_configs) if slots[i] == slot]
        affected = sorted(set(users) | {i + 1 for i in users if i + 1 < self.n_configs})
        kept = vectors[slot]

        def cost(t: Token) -> float:
            vectors[slot] = t
            try:
                return max(self._cost(i, self.xs[self.slot_x[i]], self.as_[self.slot_a[i]]) for i in affected)
            finally:
                vectors[slot] = kept

        return min((self._token() for _ in range(self.candidates)), key=cost)

    def _assign(self, j: int, slots: list[int], vectors: list[Token], owners: list[int],
                shared: bool) -> None:
        choosing_x = slots is self.slot_x
        if shared or (choosing_x and j == 0 and not self.reuse):  # configuration 0's x: chosen with its a
            super()._assign(j, slots, vectors, owners, shared)
            return
        if choosing_x and j == 0:
            pick = self.reuse[0][0]
        elif choosing_x:  # the shared vector is a = z - x of configuration j - 1
            a = self.as_[self.slot_a[j - 1]]
            pick = self._pick(lambda t: self._cost(j, t, a), self._offered(j, True))
        else:
            x = self.xs[self.slot_x[j]]
            pick = self._pick(lambda t: self._cost(j, x, t), self._offered(j, False))
        vectors.append(pick)
        owners.append(j)
        slots.append(len(vectors) - 1)

    def _offered(self, j: int, choosing_x: bool) -> Token | None:
        """The ``reuse`` plan's vector for the slot configuration ``j`` creates (``x`` or ``a``).

        Offered even when the vector ``j`` shares is not the plan's: configuration ``j + 1`` shares
        the vector created here, so taking it keeps the plan's configurations from ``j + 1`` on."""
        if j >= len(self.reuse):
            return None
        px, pz = self.reuse[j]
        return px if choosing_x else sub_tokens(pz, px)

    def _pick(self, cost: Callable[[Token], float], offered: Token | None) -> Token:
        """The best of ``candidates`` fresh vectors, or ``offered`` if within ``REUSE_FACTOR`` of it."""
        pick = min((self._token() for _ in range(self.candidates)), key=cost)
        if offered is not None and cost(offered) <= REUSE_FACTOR * cost(pick):
            return offered
        return pick
