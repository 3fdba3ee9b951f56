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

from collections.abc import Sequence

import numpy as np

from ..chain import TokenChain
from ..exact import Token
from ..schedule import TokenSampler, add_tokens, link_kind, linked_tokens

__all__ = ["GuidedTokenChain", "predicted_condition", "GUIDE_CANDIDATES", "Guide"]

#: Candidate token vectors drawn for every vector a configuration creates.
GUIDE_CANDIDATES = 48

Guide = Sequence[tuple[np.ndarray, np.ndarray]]


def predicted_condition(guide: Guide, scale: float, x: Token, z: Token) -> float:
    """The condition (:func:`~exactlearn.approx.copyfun.condition`) the guide predicts for ``(x, z)``.

    ``inf`` when the guide's copy function is singular there (equal poles, a zero residue).
    """
    a = np.array(z, dtype=float) - np.array(x, dtype=float)
    xv = np.array(x, dtype=float)
    H = len(guide)
    scores = np.array([scale * scale * (a @ W @ xv) for W, _ in guide])
    if np.max(np.abs(scores)) > 40:
        return float("inf")
    rho = np.exp(scores)
    c = np.array([-scale * (v @ a) for _, v in guide])
    ks = np.arange(2 * H + 1, dtype=float)[:, None]
    den = 1 + ks * rho[None, :]
    J = np.hstack([np.ones((2 * H + 1, 1)), 1 / den, -(c[None, :] * ks) / den**2])
    try:
        L = np.linalg.inv(J)
    except np.linalg.LinAlgError:
        return float("inf")
    absL = np.abs(L).sum(axis=1)
    out = max(np.max(absL[1 : H + 1]), np.max(absL[H + 1 :] / rho))
    return float(out) if np.isfinite(out) else float("inf")


class GuidedTokenChain(TokenChain):
    """A :class:`~exactlearn.chain.TokenChain` whose new token vectors are chosen by a guide.

    For each vector configuration ``j`` creates, ``candidates`` random vectors are
    drawn (from the chain's own sampler) and the one minimising the larger of the
    predicted conditions of configuration ``j`` and of its link's matching
    configuration is kept. Redraws (after the answers showed a problem) draw at
    random, as in the base chain.
    """

    def __init__(self, d: int, n_full: int, sampler: TokenSampler, guide: Guide, scale: float,
                 candidates: int = GUIDE_CANDIDATES):
        super().__init__(d, n_full, sampler)
        self.guide = list(guide)
        self.scale = scale
        self.candidates = candidates

    def _cost(self, j: int, x: Token, a: Token) -> float:
        z = add_tokens(x, a)
        cost = predicted_condition(self.guide, self.scale, x, z)
        if 1 <= j < self.n_chained:
            px = self.xs[self.slot_x[j - 1]]
            prev = (px, add_tokens(px, self.as_[self.slot_a[j - 1]]))
            xc, zc = linked_tokens(link_kind(j, self.d), prev, (x, z))
            if not any(xc) or xc == zc:
                return float("inf")
            cost = max(cost, predicted_condition(self.guide, self.scale, xc, zc))
        return cost

    def _assign(self, j: int, slots: list[int], vectors: list[Token], owners: list[int],
                shared: bool) -> None:
        choosing_x = slots is self.slot_x
        if shared or (choosing_x and j == 0):  # configuration 0's x: chosen with its a
            super()._assign(j, slots, vectors, owners, shared)
            return
        if choosing_x:  # the shared vector is a = z - x of configuration j - 1
            a = self.as_[self.slot_a[j - 1]]
            pick = min((self._token() for _ in range(self.candidates)), key=lambda t: self._cost(j, t, a))
        else:
            x = self.xs[self.slot_x[j]]
            pick = min((self._token() for _ in range(self.candidates)), key=lambda t: self._cost(j, x, t))
        vectors.append(pick)
        owners.append(j)
        slots.append(len(vectors) - 1)
