"""Asking a few configurations of a finished run again: the chain of a repair.

A recovery whose error estimate is carried by one or two configurations (a
residue that barely shows, two poles close together: condition 1e11 where the
rest have 1e7 to 1e9) need not be learned again from scratch. Its repair is a
second run at the same query scale whose chain is the first run's, configuration
for configuration, except that the vectors the blamed configurations created are
chosen again -- by a :class:`~exactlearn.approx.guide.chooser.GuidedChooser`
guided by the first run's heads, like a redraw. A vector configuration ``j``
creates is shared by configuration ``j + 1``: each blamed configuration costs two
measurements and the links around them; every other query is one the first run
asked, answered again from memory by the caller (:func:`~exactlearn.approx.learn_approx`).

The second run decides everything from its own answers, as any run does
(labels from its links, never from the guide): the guide only chooses tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from functools import partial

import numpy as np

from ...chain import ChainState, Slots, TokenChain
from ...exact import Token
from ...schedule import (
    Configuration,
    TokenSampler,
    affine_weight_row,
    bias_rows,
    link_kind,
    sub_tokens,
    value_row,
    weight_row,
)
from ...settings import DEFAULT_SETTINGS, GuideSettings
from ...states import LinkKind
from ..core.learner import Guidance, Plan, RunSetup
from ..core.recovery import ApproxRecovery
from .chooser import Guide, GuidedChooser, amplifications, guide_heads

__all__ = ["RepairChooser", "RepairChain", "predicted_spread", "repair_guidance"]


class RepairChooser:
    """A :data:`~exactlearn.chain.Chooser` that plans ``pairs`` (a first run's ``(x_j, z_j)``, chain order)
    vector for vector, and leaves redraws to ``guided``.

    >>> chooser = RepairChooser([((1, 0), (1, 1)), ((1, 0), (2, 1))], None)
    >>> chooser.kept(0, LinkKind.X), chooser.kept(0, LinkKind.A), chooser.kept(2, LinkKind.A)
    ((1, 0), (0, 1), None)
    """

    def __init__(self, pairs: Sequence[tuple[Token, Token]], guided: GuidedChooser | None):
        self.pairs = list(pairs)
        self.guided = guided

    def kept(self, j: int, kind: LinkKind) -> Token | None:
        """The first run's vector of kind ``kind`` configuration ``j`` created (``None`` beyond its chain)."""
        if j >= len(self.pairs):
            return None
        x, z = self.pairs[j]
        return x if kind is LinkKind.X else sub_tokens(z, x)

    def __call__(self, chain: TokenChain, slots: Slots, slot: int, planning: bool) -> Token:
        kept = self.kept(slots.owners[slot], slots.kind) if planning else None
        if kept is not None:
            return kept
        assert self.guided is not None
        return self.guided(chain, slots, slot, planning)


class RepairChain(TokenChain):
    """The first run's chain, with new vectors for the configurations ``blamed`` before the first query.

    A configuration uses two vectors: the one it created and the one it shares with its predecessor
    (created there, from configuration ``d`` on). Either can be what conditions it poorly (a residue
    ``v_h^T (x - z)`` near zero comes with its ``a``), so the one, the other and both are redrawn in
    turn, each as a redraw is (:meth:`~exactlearn.chain.TokenChain.redraw`: the guide's best of its
    candidates for every configuration and link using the vector), and of these and the first run's
    vectors, those whose whole plan the guide predicts best (``plan_cost``: :func:`predicted_spread`)
    are kept: a blamed configuration no redraw improves is not asked again."""

    def __init__(self, d: int, n_full: int, sampler: TokenSampler, *, chooser: RepairChooser,
                 blamed: Collection[int], plan_cost: Callable[[list[tuple[Token, Token]]], float],
                 tries: int = DEFAULT_SETTINGS.guide.repair_redraws, affine: bool = False):
        super().__init__(d, n_full, sampler, choose=chooser, plan_cost=plan_cost, affine=affine)
        self.blamed = sorted(blamed)
        self.tries = tries

    def draw(self, start: int = 0) -> None:
        super().draw(start)
        if start == 0:
            for j in self.blamed:
                self._redraw_best(j)

    def _redraw_best(self, j: int) -> None:
        assert self.plan_cost is not None
        owner = self._sharing_owner(j)
        options: list[list[int]] = [[], [j]] + ([] if owner is None else [[owner], [owner, j]])
        best: tuple[float, ChainState] | None = None
        for redrawn in options:
            kept = self.state()
            for i in redrawn:
                self.redraw(i)
            cost = self.plan_cost(self.pairs())
            if best is None or cost < best[0]:
                best = (cost, self.state())
            self.restore(kept)
        assert best is not None
        self.restore(best[1])

    def redraw(self, j: int) -> None:
        """:meth:`~exactlearn.chain.TokenChain.redraw` ``repair_redraws`` times, keeping the draw whose whole
        plan the guide predicts best: a redraw chooses by the configurations using its vectors, which
        leaves the weight design out, and one design nearly singular multiplies every error (before the
        first query and during the run alike)."""
        assert self.plan_cost is not None
        history, links, start = len(self.history), dict(self.links), self.state()
        best: tuple[float, ChainState, list[Configuration], dict[int, Configuration]] | None = None
        for _ in range(self.tries):
            super().redraw(j)
            cost = self.plan_cost(self.pairs())
            if best is None or cost < best[0]:
                best = (cost, self.state(), list(self.history), dict(self.links))
            self.restore(start)
            del self.history[history:]
            self.links = dict(links)
        assert best is not None
        self.restore(best[1])
        self.history, self.links = best[2], best[3]

    def _sharing_owner(self, j: int) -> int | None:
        """``j - 1`` when configuration ``j`` shares the vector ``j - 1`` created (else ``None``: the ``x``
        of configuration 0 is shared by the first ``d``, too many to ask again)."""
        if not 1 <= j < self.n_chained:
            return None
        slots = self.x if link_kind(j, self.d) is LinkKind.X else self.a
        owner = slots.owners[slots.of[j]]
        return owner if owner == j - 1 and owner > 0 else None


def predicted_spread(guide: Guide, scale: float, pairs: Sequence[tuple[Token, Token]],
                     settings: GuideSettings = DEFAULT_SETTINGS.guide, points: Sequence[int] = (),
                     affine: bool = False) -> float:
    """What the guide predicts the error estimate (:mod:`exactlearn.approx.bounds.estimate`) of the
    measurements ``pairs`` to be, per unit answer noise: the largest root of the sum over configurations
    of the squared terms :func:`~exactlearn.approx.guide.chooser.predicted_constant` adds up (the
    configurations' errors are independent; ``inf`` when one is singular)."""
    amps = [amplifications(guide, scale, x, z, settings, points) for x, z in pairs]
    if any(a is None for a in amps):
        return float("inf")
    d = len(pairs[0][0])
    rows = [affine_weight_row(x, z) for x, z in pairs] + bias_rows(d) if affine else [
        weight_row(x, z) for x, z in pairs]
    try:
        weights = np.linalg.inv(np.array(rows, dtype=float))[:, : len(pairs)] / (scale * scale)
        values = np.linalg.pinv(np.array([value_row(x, z) for x, z in pairs], dtype=float)) / scale
    except np.linalg.LinAlgError:
        return float("inf")
    scores = np.array([a[1] for a in amps if a is not None])  # (configurations, heads)
    residues = np.array([a[0] for a in amps if a is not None])
    return float(max(np.max(np.sqrt(weights**2 @ scores**2)), np.max(np.sqrt(values**2 @ residues**2))))


def _chain(d: int, n_full: int, sampler: TokenSampler, *, first: ApproxRecovery, blamed: Collection[int],
           scale: float, settings: GuideSettings, points: Sequence[int], affine: bool = False) -> TokenChain:
    guided = GuidedChooser(guide_heads(first), scale, (), settings, points, affine)
    chooser = RepairChooser([(c.x, c.z) for c in first.configurations], guided)
    cost = partial(predicted_spread, guided.guide, scale, settings=settings, points=points, affine=affine)
    return RepairChain(d, n_full, sampler, chooser=chooser, blamed=blamed, plan_cost=cost,
                       tries=settings.repair_redraws, affine=affine)


def repair_guidance(first: ApproxRecovery, blamed: Collection[int],
                    settings: GuideSettings = DEFAULT_SETTINGS.guide) -> Callable[[int], Guidance]:
    """The ``guidance`` of :func:`~exactlearn.approx.core.learner.learn_over_balls` for the repair of
    ``first``: its configurations again, the vectors those in ``blamed`` created chosen anew (to be run
    at ``first.scale``)."""

    def plan(setup: RunSetup) -> Plan:
        points = () if setup.points == tuple(range(2 * setup.heads + 1)) else setup.points
        return Plan(partial(_chain, first=first, blamed=blamed, scale=setup.scale, settings=settings,
                            points=points))

    return lambda heads: Guidance(plan=plan)
