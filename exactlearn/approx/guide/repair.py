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

from ...chain import Slots, TokenChain
from ...exact import Token
from ...schedule import TokenSampler, sub_tokens
from ...settings import DEFAULT_SETTINGS, GuideSettings
from ...states import LinkKind
from ..core.learner import Guidance, Plan, RunSetup
from ..core.recovery import ApproxRecovery
from .chooser import GuidedChooser, guide_heads

__all__ = ["RepairChooser", "repair_guidance"]


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
    """The first run's chain, the vectors the configurations ``blamed`` created drawn again before the
    first query, each as a redraw is (:meth:`~exactlearn.chain.TokenChain.redraw`: the guide's best of
    its candidates for every configuration and link using the vector)."""

    def __init__(self, d: int, n_full: int, sampler: TokenSampler, *, chooser: RepairChooser,
                 blamed: Collection[int], affine: bool = False):
        super().__init__(d, n_full, sampler, choose=chooser, affine=affine)
        self.blamed = sorted(blamed)

    def draw(self, start: int = 0) -> None:
        super().draw(start)
        if start == 0:
            for j in self.blamed:
                self.redraw(j)


def _chain(d: int, n_full: int, sampler: TokenSampler, *, first: ApproxRecovery, blamed: Collection[int],
           scale: float, settings: GuideSettings, points: Sequence[int], affine: bool = False) -> TokenChain:
    guided = GuidedChooser(guide_heads(first), scale, (), settings, points, affine)
    chooser = RepairChooser([(c.x, c.z) for c in first.configurations], guided)
    return RepairChain(d, n_full, sampler, chooser=chooser, blamed=blamed, affine=affine)


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
