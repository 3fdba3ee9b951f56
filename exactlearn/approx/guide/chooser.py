"""Choosing configurations before querying: a guide model predicts their conditioning.

The constant ``C`` (:mod:`exactlearn.approx.bounds`) is dominated by the worst-conditioned
copy functions: with samples at ``k = 0..2H`` a configuration is well conditioned
only when its poles ``-1/rho_h`` are spread and its residues are away from zero,
and random integer tokens rarely give that for ``H >= 3``. A **guide** -- any
approximation of the heads: a known model in a simulation, or a pilot recovery
of the same black box -- predicts ``rho_h = exp(s^2 a^T W_h x)`` and
``c_h = -s v_h^T a`` of a candidate configuration ``(x, z = x + a)`` before any
query. :class:`GuidedChooser` draws, for every token vector a configuration
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
from typing import Any

import numpy as np

from ...chain import Slots, TokenChain
from ...exact import Token
from ...schedule import (
    TokenSampler,
    add_tokens,
    affine_weight_row,
    bias_rows,
    linked_tokens,
    sub_tokens,
    value_row,
    weight_row,
)
from ...settings import DEFAULT_SETTINGS, GuideSettings
from ...states import LinkKind
from ..core.counts import pseudo_inverse
from ..core.recovery import ApproxRecovery, truth_offsets, truth_parameters

__all__ = ["GuidedChooser", "guided_chain", "guide_heads", "predicted_condition", "predicted_constant",
           "amplifications", "Guide"]

#: ``[(W_h, v_h)]`` or, for affine attention, ``[(W_h, v_h, w_h)]`` (float arrays).
Guide = Sequence[tuple[np.ndarray, ...]]


def guide_heads(model: Any) -> list[tuple[np.ndarray, ...]]:
    """``[(W_h, v_h)]`` as float arrays (a guide): a model, a recovery, ``(W, v)`` pairs; with the score
    vectors ``w_h`` as a third entry when the recovery or model is affine."""
    ws: Any = None
    if isinstance(model, ApproxRecovery):
        pairs: Any = [(h.W, h.v) for h in model.heads]
        ws = [h.w for h in model.heads] if model.affine else None
    else:
        pairs = truth_parameters(model, 64)
        if getattr(model, "is_affine", False):
            ws = truth_offsets(model, 64)[0]
    heads = [(np.array([[float(e) for e in row] for row in W]), np.array([float(e) for e in v]))
             for W, v in pairs]
    if ws is None:
        return list(heads)
    return [(W, v, np.array([float(e) for e in w])) for (W, v), w in zip(heads, ws)]


def _score_vector(head: tuple[np.ndarray, ...]) -> np.ndarray | None:
    return head[2] if len(head) > 2 else None


def amplifications(guide: Guide, scale: float, x: Token, z: Token,
                   settings: GuideSettings = DEFAULT_SETTINGS.guide, points: Sequence[int] = ()
                   ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per head, ``sum_k |d c_h / d y_k|`` and ``sum_k |d log rho_h / d y_k|`` as the guide predicts them
    for the measurement ``(x, z)`` asked at the copy counts ``points`` (default ``k = 0..2H``); ``None``
    when its copy function is singular there (or a score exceeds ``settings.max_score``)."""
    return _amplified(guide, scale, [(x, z)], settings, points)[0]


def _amplified(guide: Guide, scale: float, pairs: Sequence[tuple[Token, Token]],
               settings: GuideSettings, points: Sequence[int] = ()
               ) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """:func:`amplifications` of many pairs at once (one batched inverse; singular ones one by one)."""
    if not pairs:
        return []
    H = len(guide)
    X = np.array([x for x, _ in pairs], dtype=float)
    A = np.array([z for _, z in pairs], dtype=float) - X
    # (pair by pair, as one pair's scores are computed: the same floats whatever the batch)
    scores = np.array([[scale * scale * (a @ head[0] @ x) for head in guide] for a, x in zip(A, X)])
    ws = [_score_vector(head) for head in guide]
    if any(w is not None for w in ws):  # affine attention: + s a^T w_h
        scores = scores + scale * A @ np.array([np.zeros(A.shape[1]) if w is None else w for w in ws]).T
    c = np.array([[-scale * (head[1] @ a) for head in guide] for a in A])
    fine = np.max(np.abs(scores), axis=1) <= settings.max_score
    rho = np.exp(np.where(fine[:, None], scores, 0.0))
    ks = (np.arange(2 * H + 1, dtype=float) if not points else np.array(points, dtype=float))[None, :, None]
    den = 1 + ks * rho[:, None, :]
    J = np.concatenate([np.ones((len(pairs), ks.shape[1], 1)), 1 / den, -(c[:, None, :] * ks) / den**2],
                       axis=2)
    if ks.shape[1] == 2 * H + 1:
        try:
            L = np.linalg.inv(J)
        except np.linalg.LinAlgError:
            L = np.array([_inverse(M) for M in J])
    else:  # more answers than parameters: the least-squares map
        L = np.array([_pseudo_inverse(M) for M in J])
    absL = np.abs(L).sum(axis=2)
    residues, scored = absL[:, 1 : H + 1], absL[:, H + 1 :] / rho
    good = fine & np.isfinite(residues).all(axis=1) & np.isfinite(scored).all(axis=1)
    return [(residues[i], scored[i]) if good[i] else None for i in range(len(pairs))]


def _pseudo_inverse(M: np.ndarray) -> np.ndarray:
    """The least-squares map of ``M`` (columns scaled to unit size first: a column of 1e-12, a pole far
    beyond the sampled counts, is not cut off as if it were noise); ``inf`` when singular."""
    return pseudo_inverse(M)


def _inverse(M: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.inv(M)
    except np.linalg.LinAlgError:
        return np.full_like(M, np.inf)


def predicted_condition(guide: Guide, scale: float, x: Token, z: Token,
                        settings: GuideSettings = DEFAULT_SETTINGS.guide,
                        points: Sequence[int] = ()) -> float:
    """The condition (:func:`~exactlearn.approx.copyfun.condition`) the guide predicts for ``(x, z)``.

    ``inf`` when the guide's copy function is singular there (equal poles, a zero residue).
    """
    return predicted_conditions(guide, scale, [(x, z)], settings, points)[0]


def predicted_conditions(guide: Guide, scale: float, pairs: Sequence[tuple[Token, Token]],
                         settings: GuideSettings = DEFAULT_SETTINGS.guide, points: Sequence[int] = ()
                         ) -> list[float]:
    """:func:`predicted_condition` of every pair (computed together)."""
    return [float("inf") if amp is None else float(max(np.max(amp[0]), np.max(amp[1])))
            for amp in _amplified(guide, scale, pairs, settings, points)]


def predicted_constant(guide: Guide, scale: float, pairs: Sequence[tuple[Token, Token]],
                       settings: GuideSettings = DEFAULT_SETTINGS.guide, points: Sequence[int] = (),
                       affine: bool = False) -> float:
    """An upper estimate of the constant ``C`` (:mod:`exactlearn.approx.bounds`) of the measurements
    ``pairs``.

    Each configuration's amplifications (:func:`amplifications`) pass through the
    weight design (``W_h = s^-2 D^-1 log rho_h``) and the value design (least
    squares); absolute values are summed over configurations (no merging of
    repeated queries), so this bounds the first-order ``C`` the guide predicts. ``affine``: the
    ``d(d + 1)`` configurations of affine attention, through its augmented weight design.
    """
    amps = _amplified(guide, scale, pairs, settings, points)
    if any(a is None for a in amps):
        return float("inf")
    d = len(pairs[0][0])
    rows = [affine_weight_row(x, z) for x, z in pairs] + bias_rows(d) if affine else [
        weight_row(x, z) for x, z in pairs]
    D = np.array(rows, dtype=float)
    A = np.array([value_row(x, z) for x, z in pairs], dtype=float)
    try:
        weights = np.abs(np.linalg.inv(D))[:, : len(pairs)] / (scale * scale)
        values = np.abs(np.linalg.pinv(A)) / scale
    except np.linalg.LinAlgError:
        return float("inf")
    score_amp = np.array([a[1] for a in amps if a is not None])  # (configurations, heads)
    residue_amp = np.array([a[0] for a in amps if a is not None])
    return float(max(np.max(weights @ score_amp), np.max(values @ residue_amp)))


class GuidedChooser:
    """A :data:`~exactlearn.chain.Chooser` that picks token vectors by the conditioning a guide predicts.

    For each vector configuration ``j`` creates, ``settings.candidates`` random vectors are
    drawn (from the chain's own sampler) and the one minimising the larger of the
    predicted conditions of configuration ``j`` and of its link's matching
    configuration is kept. A redraw (after the answers showed a problem) chooses the
    new vector the same way, by the configurations using it and the links after them.

    ``reuse = [(x_0, z_0), (x_1, z_1), ...]``: configurations in chain order that
    were already answered (a sketch's): configuration 0 takes ``x_0``, and a
    configuration whose shared vector is the plan's takes the plan's other vector
    unless its predicted condition (and its link's) exceeds ``settings.reuse_factor``
    times the best fresh candidate's.
    """

    def __init__(self, guide: Guide, scale: float, reuse: Sequence[tuple[Token, Token]] = (),
                 settings: GuideSettings = DEFAULT_SETTINGS.guide, points: Sequence[int] = (),
                 affine: bool = False):
        self.guide = list(guide)
        self.points = tuple(points)  # the measurements' copy counts (default 0..2H)
        self.scale = scale
        self.settings = settings
        self.reuse = list(reuse)
        self._conditions: dict[tuple[Token, Token], float] = {}
        self.affine = affine

    def plan_cost(self, pairs: list[tuple[Token, Token]]) -> float:
        """:func:`predicted_constant` of a whole plan (the chain keeps the plan of smallest cost)."""
        return predicted_constant(self.guide, self.scale, pairs, self.settings, self.points, self.affine)

    def __call__(self, chain: TokenChain, slots: Slots, slot: int, planning: bool) -> Token:
        if not planning:
            return self._redrawn(chain, slots, slot)
        j = slots.owners[slot]
        if slots.kind is LinkKind.X and j == 0:  # configuration 0's x: the plan's, or chosen with its a
            return self.reuse[0][0] if self.reuse else chain.random_token()
        if slots.kind is LinkKind.X:  # the shared vector is a = z - x of configuration j - 1
            a = chain.a.vector_of(j - 1)
            return self._pick(chain, lambda t: self._cost(chain, j, t, a), self._offered(j, slots.kind),
                              lambda t: self._pairs(chain, j, t, a))
        x = chain.x.vector_of(j)
        return self._pick(chain, lambda t: self._cost(chain, j, x, t), self._offered(j, slots.kind),
                          lambda t: self._pairs(chain, j, x, t))

    def _condition(self, x: Token, z: Token) -> float:
        """:func:`predicted_condition` of ``(x, z)``, computed once per pair (plans redraw the same pairs)."""
        known = self._conditions.get((x, z))
        if known is None:
            known = predicted_condition(self.guide, self.scale, x, z, self.settings, self.points)
            self._conditions[(x, z)] = known
        return known

    def _pairs(self, chain: TokenChain, j: int, x: Token, a: Token) -> list[tuple[Token, Token]]:
        """The pairs :meth:`_cost` looks up: configuration ``j`` and its link's matching configuration."""
        z = add_tokens(x, a)
        if not 1 <= j < chain.n_chained:
            return [(x, z)]
        px = chain.x.vector_of(j - 1)
        prev = (px, add_tokens(px, chain.a.vector_of(j - 1)))
        return [(x, z), linked_tokens(chain.link_kind(j), prev, (x, z))]

    def _prefetch(self, pairs: Sequence[tuple[Token, Token]]) -> None:
        """Compute the conditions of the pairs not known yet, together (:func:`predicted_conditions`)."""
        new = list(dict.fromkeys(p for p in pairs if p not in self._conditions))
        known_all = predicted_conditions(self.guide, self.scale, new, self.settings, self.points)
        for pair, known in zip(new, known_all):
            self._conditions[pair] = known

    def _cost(self, chain: TokenChain, j: int, x: Token, a: Token) -> float:
        z = add_tokens(x, a)
        cost = self._condition(x, z)
        if 1 <= j < chain.n_chained:
            px = chain.x.vector_of(j - 1)
            prev = (px, add_tokens(px, chain.a.vector_of(j - 1)))
            xc, zc = linked_tokens(chain.link_kind(j), prev, (x, z))
            if not any(xc) or xc == zc:
                return float("inf")
            cost = max(cost, self._condition(xc, zc))
        return cost

    def _redrawn(self, chain: TokenChain, slots: Slots, slot: int) -> Token:
        """Of ``settings.candidates`` random vectors, the one minimising the largest :meth:`_cost` of the
        configurations using ``slot`` and of the links after them (a redraw chosen like a first draw)."""
        users = [i for i in range(chain.n_configs) if slots.of[i] == slot]
        affected = sorted(set(users) | {i + 1 for i in users if i + 1 < chain.n_configs})
        kept = slots.vectors[slot]

        def cost(t: Token) -> float:
            slots.vectors[slot] = t
            try:
                return max(self._cost(chain, i, chain.x.vector_of(i), chain.a.vector_of(i)) for i in affected)
            finally:
                slots.vectors[slot] = kept

        return min((chain.random_token() for _ in range(self.settings.candidates)), key=cost)

    def _offered(self, j: int, kind: LinkKind) -> Token | None:
        """The ``reuse`` plan's vector for the slot configuration ``j`` creates (``x`` or ``a``).

        Offered even when the vector ``j`` shares is not the plan's: configuration ``j + 1`` shares
        the vector created here, so taking it keeps the plan's configurations from ``j + 1`` on."""
        if j >= len(self.reuse):
            return None
        px, pz = self.reuse[j]
        return px if kind is LinkKind.X else sub_tokens(pz, px)

    def _pick(self, chain: TokenChain, cost: Callable[[Token], float], offered: Token | None,
              pairs: Callable[[Token], list[tuple[Token, Token]]]) -> Token:
        """The best of ``settings.candidates`` fresh vectors, or ``offered`` if its cost is within
        ``settings.reuse_factor`` of the best's (``pairs(t)``: the pairs ``cost(t)`` looks up)."""
        fresh = [chain.random_token() for _ in range(self.settings.candidates)]
        self._prefetch([p for t in fresh + ([] if offered is None else [offered]) for p in pairs(t)])
        pick = min(fresh, key=cost)
        if offered is not None and cost(offered) <= self.settings.reuse_factor * cost(pick):
            return offered
        return pick


def guided_chain(d: int, n_full: int, sampler: TokenSampler, guide: Guide, scale: float, *,
                 reuse: Sequence[tuple[Token, Token]] = (), settings: GuideSettings = DEFAULT_SETTINGS.guide,
                 points: Sequence[int] = (), affine: bool = False) -> TokenChain:
    """A :class:`~exactlearn.chain.TokenChain` whose vectors a :class:`GuidedChooser` picks; its first
    draw keeps the best of ``settings.plans`` plans by :func:`predicted_constant` (fewer from
    ``d^2 > plan_configurations / plans`` on: ``plan_configurations / d^2``, at least one)."""
    chooser = GuidedChooser(guide, scale, reuse, settings, points, affine)
    plans = max(1, min(settings.plans, settings.plan_configurations // (d * d)))
    return TokenChain(d, n_full, sampler, choose=chooser, plans=plans, plan_cost=chooser.plan_cost,
                      affine=affine)
