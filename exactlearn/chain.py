"""The chain of configurations and the token slots they share (docs/algorithm.md sections 3, 6).

Configuration ``j`` shares either its query token ``x`` or its difference
``a = z - x`` with configuration ``j - 1`` (:func:`~exactlearn.schedule.link_kind`).
Token vectors therefore live in *slots* (:class:`Slots`, one value for the
``x`` vectors and one for the ``a`` vectors): configuration ``j`` uses one
slot of each and creates a new slot for the vector it does not share.
Redrawing a configuration draws its own slots again; every configuration using
those slots is then measured again. A :class:`TokenChain` also keeps what was
answered and then dropped (``history``), for the learner's final checks.

Which vector a new or redrawn slot gets is a *chooser*'s decision
(:data:`Chooser`): :func:`random_vector` by default, a guide's prediction on
the approximate path (:mod:`exactlearn.approx.guide`).

A chain of affine attention (``affine=True``, docs/algorithm.md section 9) has
``d(d + 1)`` configurations, and its links sharing ``a`` reflect ``x``
(:attr:`~exactlearn.states.LinkKind.REFLECT`).

>>> import random
>>> from exactlearn.schedule import TokenSampler
>>> chain = TokenChain(2, 2, TokenSampler(2, 2, random.Random(0)))
>>> chain.draw()
>>> len(chain.configs), chain.configs[0].x == chain.configs[1].x   # link 1 shares x
(4, True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from flint import fmpq_mat

from .design_rank import DesignRank
from .errors import RecoveryError
from .exact import Token
from .schedule import (
    Configuration,
    TokenSampler,
    add_tokens,
    affine_weight_row,
    bias_rows,
    configuration_count,
    full_rank,
    link_kind,
    linked_tokens,
    matching_kind,
    value_row,
    weight_row,
)
from .settings import DEFAULT_SETTINGS
from .states import ConfigKind, LinkKind, Status

__all__ = ["TokenChain", "Slots", "ChainState", "Chooser", "random_vector", "MAX_PRE_QUERY_DRAWS"]

#: Draws of token vectors tried before giving up on the pre-query conditions (:mod:`exactlearn.settings`).
MAX_PRE_QUERY_DRAWS = DEFAULT_SETTINGS.schedule.pre_query_draws


@dataclass
class Slots:
    """The token vectors of one kind (``x``, or ``a = z - x``) and the configurations using them.

    ``vectors[s]`` is slot ``s``'s vector, created by configuration ``owners[s]``;
    ``of[j]`` is the slot configuration ``j`` uses.
    """

    kind: LinkKind
    vectors: list[Token] = field(default_factory=list)
    owners: list[int] = field(default_factory=list)
    of: list[int] = field(default_factory=list)

    def copy(self) -> Slots:
        return Slots(self.kind, list(self.vectors), list(self.owners), list(self.of))

    def vector_of(self, j: int) -> Token:
        """The vector configuration ``j`` uses."""
        return self.vectors[self.of[j]]

    def users(self, slot: int) -> list[int]:
        """The configurations using ``slot``."""
        return [j for j, s in enumerate(self.of) if s == slot]

    def owned_by(self, j: int) -> list[int]:
        """The slot configuration ``j`` created (``[]`` if it shares its vector with ``j - 1``)."""
        s = self.of[j]
        return [s] if self.owners[s] == j else []

    def forget_from(self, start: int) -> None:
        """Forget the slots of configurations ``start..`` (slots are created in configuration order)."""
        del self.of[start:]
        keep = max(self.of, default=-1) + 1
        del self.vectors[keep:], self.owners[keep:]


#: ``chooser(chain, slots, slot, planning)`` returns the vector of ``slots.vectors[slot]``: a slot just
#: created by configuration ``slots.owners[slot]`` (``planning``), or one being redrawn.
Chooser = Callable[["TokenChain", Slots, int, bool], Token]


def random_vector(chain: TokenChain, slots: Slots, slot: int, planning: bool) -> Token:
    """The default chooser: a random nonzero token from the chain's sampler."""
    return chain.random_token()


@dataclass
class ChainState:
    """Everything a draw sets: the slots, the configurations and the weight design their check kept."""

    x: Slots
    a: Slots
    configs: list[Configuration]
    weight_design: fmpq_mat | None


class TokenChain:
    """The ``d^2`` configurations of a run, their slots, links and dropped configurations.

    Configurations ``0..n_chained-1`` form the matched chain; ``0..n_full-1`` are
    queried at ``k = 0..2H`` and determine the value vectors. ``choose`` picks
    new and redrawn vectors (:data:`Chooser`); with ``plans > 1`` and a
    ``plan_cost``, the first draw tries ``plans`` whole plans and keeps the one
    of smallest cost (of its ``(x_j, z_j)`` pairs). ``affine``: the ``d(d + 1)``
    configurations of affine attention (module docstring).
    """

    def __init__(self, d: int, n_full: int, sampler: TokenSampler, *, choose: Chooser = random_vector,
                 plans: int = 1, plan_cost: Callable[[list[tuple[Token, Token]]], float] | None = None,
                 affine: bool = False):
        self.d = d
        self.sampler = sampler
        self.choose = choose
        self.plans, self.plan_cost = plans, plan_cost
        self.affine = affine
        self.n_configs = configuration_count(d, affine=affine)
        self.n_full = n_full
        self.n_chained = n_full
        self.configs: list[Configuration] = []
        self.links: dict[int, Configuration] = {}  # j -> matching configuration of link (j-1, j)
        self.history: list[Configuration] = []  # everything answered and then dropped
        self.x = Slots(LinkKind.X)
        self.a = Slots(LinkKind.A)
        #: the weight design of the current configurations (set by the last passing pre-query check)
        self.weight_design: fmpq_mat | None = None
        self._designs = DesignRank()  # the weight designs' full-rank checks

    def random_token(self) -> Token:
        """A random nonzero token from the sampler."""
        while True:
            t = self.sampler.token()
            if any(t):
                return t

    def link_kind(self, j: int) -> LinkKind:
        """How link ``j`` forms its matching configuration (:func:`~exactlearn.schedule.matching_kind`)."""
        return matching_kind(link_kind(j, self.d), self.affine)

    def tokens_of(self, j: int) -> tuple[Token, Token]:
        """``(x_j, z_j)`` from configuration ``j``'s slots."""
        x = self.x.vector_of(j)
        return x, add_tokens(x, self.a.vector_of(j))

    def pairs(self) -> list[tuple[Token, Token]]:
        """``(x_j, z_j)`` of every configuration."""
        return [self.tokens_of(j) for j in range(self.n_configs)]

    def _plan(self, start: int) -> None:
        """Assign slots to configurations ``start..n-1`` (new slots get chosen vectors)."""
        self.x.forget_from(start)
        self.a.forget_from(start)
        for j in range(start, self.n_configs):
            kind = link_kind(j, self.d) if 1 <= j < self.n_chained else None
            for slots in (self.x, self.a):
                if kind is slots.kind:
                    slots.of.append(slots.of[j - 1])
                    continue
                slots.owners.append(j)
                slots.of.append(len(slots.vectors))
                slots.vectors.append(())  # a placeholder until the chooser has chosen
                slots.vectors[-1] = self.choose(self, slots, len(slots.vectors) - 1, True)

    def pre_query_ok(self) -> bool:
        """Conditions checked before any query (docs/algorithm.md sections 6 and 9)."""
        d = self.d
        pairs = self.pairs()
        for j in range(1, self.n_chained):
            xc, zc = linked_tokens(self.link_kind(j), pairs[j - 1], pairs[j])
            # a zero x gives every head the score 0 (the same w_h^T a for affine attention: w_h = 0 often)
            if not any(xc) or xc == zc:
                return False
        if not full_rank([value_row(x, z) for x, z in pairs[: self.n_full]], d):
            return False
        if self.affine:
            bias = bias_rows(d)
            keys: list[object] = [*pairs, *range(len(bias))]
            design = self._designs.full_rank(keys, lambda i: affine_weight_row(*pairs[i]) if i < len(pairs)
                                             else bias[i - len(pairs)])
        else:
            design = self._designs.full_rank(pairs, lambda i: weight_row(*pairs[i]))
        if design is None:
            return False
        self.weight_design = design
        return True

    def draw(self, start: int = 0) -> None:
        """Draw configurations ``start..n-1`` until the pre-query conditions hold (the first draw of a
        chain with ``plans > 1``: the best of ``plans`` such draws by ``plan_cost``)."""
        if start or self.plans <= 1 or self.plan_cost is None:
            self._draw(start)
            return
        best: ChainState | None = None
        best_cost = float("inf")
        for _ in range(self.plans):
            self._draw(0)
            cost = self.plan_cost(self.pairs())
            if best is None or cost < best_cost:
                best, best_cost = self.state(), cost
        assert best is not None
        self.restore(best)

    def _draw(self, start: int) -> None:
        for _ in range(MAX_PRE_QUERY_DRAWS):
            self._plan(start)
            if self.pre_query_ok():
                self.configs[start:] = [Configuration(ConfigKind.MEASUREMENT, *self.tokens_of(j))
                                        for j in range(start, self.n_configs)]
                return
        raise RecoveryError(
            f"could not draw {self.n_configs} configurations with full-rank designs from tokens in "
            f"[-{self.sampler.bound}, {self.sampler.bound}]^{self.d}"
            + "; increase token_bound"
        )

    def state(self) -> ChainState:
        """A copy of what a draw sets."""
        return ChainState(self.x.copy(), self.a.copy(), list(self.configs), self.weight_design)

    def restore(self, state: ChainState) -> None:
        self.x, self.a = state.x, state.a
        self.configs, self.weight_design = state.configs, state.weight_design

    def redraw(self, j: int) -> None:
        """New vectors for configuration ``j``'s own slots; every configuration using them is pending
        again."""
        own = [(slots, s) for slots in (self.x, self.a) for s in slots.owned_by(j)]
        users = {i for slots, s in own for i in slots.users(s)}
        for _ in range(MAX_PRE_QUERY_DRAWS):
            for slots, s in own:
                slots.vectors[s] = self.choose(self, slots, s, False)
            if self.pre_query_ok():
                self._sync(users)
                return
        raise RecoveryError(f"could not redraw configuration {j} with full-rank designs; "
                            "increase token_bound")

    def _sync(self, changed: set[int]) -> None:
        """Rebuild the configurations in ``changed`` from their slots (status pending)."""
        for j in sorted(changed):
            old = self.configs[j] if j < len(self.configs) else None
            if old is not None and old.values:
                self.drop(old)
            self.configs[j: j + 1] = [Configuration(ConfigKind.MEASUREMENT, *self.tokens_of(j))]
        for j in list(self.links):
            if j in changed or j - 1 in changed:
                self.drop(self.links.pop(j))

    def drop(self, cfg: Configuration) -> None:
        """Keep an answered configuration that is no longer used (degenerate)."""
        cfg.status = Status.DEGENERATE
        self.history.append(cfg)

    def drop_all(self) -> None:
        """Drop every answered configuration and link, and unchain the later configurations."""
        for c in self.configs + list(self.links.values()):
            if c.values:
                self.drop(c)
        self.links.clear()
        self.n_chained = self.n_full

    def answered(self) -> list[Configuration]:
        """Every configuration of the run so far: current, links, dropped."""
        return self.configs + list(self.links.values()) + self.history

