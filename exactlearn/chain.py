"""The chain of configurations and the token slots they share (docs/algorithm.md sections 3, 6).

Configuration ``j`` shares either its query token ``x`` or its difference
``a = z - x`` with configuration ``j - 1`` (:func:`~exactlearn.schedule.link_kind`).
Token vectors therefore live in *slots*: configuration ``j`` uses one ``x`` slot
and one ``a`` slot, and creates a new slot for the vector it does not share.
Redrawing a configuration draws its own slots again; every configuration using
those slots is then measured again. A :class:`TokenChain` also keeps what was
answered and then dropped (``history``), for the learner's final checks.

>>> import random
>>> from exactlearn.schedule import TokenSampler
>>> chain = TokenChain(2, 2, TokenSampler(2, 2, random.Random(0)))
>>> chain.draw()
>>> len(chain.configs), chain.configs[0].x == chain.configs[1].x   # link 1 shares x
(4, True)
"""

from __future__ import annotations

from flint import fmpq_mat

from .errors import RecoveryError
from .exact import Token
from .schedule import (
    Configuration,
    TokenSampler,
    add_tokens,
    full_rank,
    integer_matrix,
    link_kind,
    linked_tokens,
    value_row,
    weight_row,
)
from .states import ConfigKind, LinkKind, Status

__all__ = ["TokenChain", "MAX_PRE_QUERY_DRAWS"]

#: Draws of token vectors tried before giving up on the pre-query conditions.
MAX_PRE_QUERY_DRAWS = 10_000


class TokenChain:
    """The ``d^2`` configurations of a run, their slots, links and dropped configurations.

    Configurations ``0..n_chained-1`` form the matched chain; ``0..n_full-1`` are
    queried at ``k = 0..2H`` and determine the value vectors.
    """

    def __init__(self, d: int, n_full: int, sampler: TokenSampler):
        self.d = d
        self.sampler = sampler
        self.n_configs = d * d
        self.n_full = n_full
        self.n_chained = n_full
        self.configs: list[Configuration] = []
        self.links: dict[int, Configuration] = {}  # j -> matching configuration of link (j-1, j)
        self.history: list[Configuration] = []  # everything answered and then dropped
        self.xs: list[Token] = []
        self.as_: list[Token] = []
        self.slot_x: list[int] = []
        self.slot_a: list[int] = []
        self.owner_x: list[int] = []  # configuration that created each slot
        self.owner_a: list[int] = []
        #: the weight design of the current configurations (set by the last passing pre-query check)
        self.weight_design: fmpq_mat | None = None

    def _token(self) -> Token:
        while True:
            t = self.sampler.token()
            if any(t):
                return t

    def tokens_of(self, j: int) -> tuple[Token, Token]:
        """``(x_j, z_j)`` from configuration ``j``'s slots."""
        x = self.xs[self.slot_x[j]]
        return x, add_tokens(x, self.as_[self.slot_a[j]])

    def _plan(self, start: int) -> None:
        """Assign slots to configurations ``start..n-1`` (new slots get fresh tokens)."""
        del self.slot_x[start:], self.slot_a[start:]
        # forget the slots of an earlier attempt (slots are created in configuration order)
        keep_x = max(self.slot_x, default=-1) + 1
        keep_a = max(self.slot_a, default=-1) + 1
        del self.xs[keep_x:], self.owner_x[keep_x:], self.as_[keep_a:], self.owner_a[keep_a:]
        for j in range(start, self.n_configs):
            chained = 1 <= j < self.n_chained
            kind = link_kind(j, self.d) if chained else None
            self._assign(j, self.slot_x, self.xs, self.owner_x, kind is LinkKind.X)
            self._assign(j, self.slot_a, self.as_, self.owner_a, kind is LinkKind.A)

    def _assign(self, j: int, slots: list[int], vectors: list[Token], owners: list[int],
                shared: bool) -> None:
        if shared:
            slots.append(slots[j - 1])
        else:
            vectors.append(self._token())
            owners.append(j)
            slots.append(len(vectors) - 1)

    def _own_slots(self, j: int) -> tuple[list[int], list[int]]:
        """The slots configuration ``j`` created (not those it shares with ``j - 1``)."""
        sx, sa = self.slot_x[j], self.slot_a[j]
        return ([sx] if self.owner_x[sx] == j else []), ([sa] if self.owner_a[sa] == j else [])

    def pre_query_ok(self) -> bool:
        """Conditions checked before any query (docs/algorithm.md section 6)."""
        d = self.d
        pairs = [self.tokens_of(j) for j in range(self.n_configs)]
        for j in range(1, self.n_chained):
            xc, zc = linked_tokens(link_kind(j, d), pairs[j - 1], pairs[j])
            if not any(xc) or xc == zc:
                return False
        design = integer_matrix([weight_row(x, z) for x, z in pairs])
        if design.rank() != d * d or not full_rank([value_row(x, z) for x, z in pairs[: self.n_full]], d):
            return False
        self.weight_design = design
        return True

    def draw(self, start: int = 0) -> None:
        """Draw configurations ``start..n-1`` until the pre-query conditions hold."""
        for _ in range(MAX_PRE_QUERY_DRAWS):
            self._plan(start)
            if self.pre_query_ok():
                self.configs[start:] = [Configuration(ConfigKind.MEASUREMENT, *self.tokens_of(j))
                                        for j in range(start, self.n_configs)]
                return
        raise RecoveryError(
            f"could not draw {self.n_configs} configurations with full-rank designs from tokens in "
            f"[-{self.sampler.bound}, {self.sampler.bound}]^{self.d}; increase token_bound"
        )

    def redraw(self, j: int) -> None:
        """New tokens for configuration ``j``'s own slots; every configuration using them is pending again."""
        own_x, own_a = self._own_slots(j)
        users = {i for i in range(self.n_configs)
                 if self.slot_x[i] in own_x or self.slot_a[i] in own_a}
        for _ in range(MAX_PRE_QUERY_DRAWS):
            for s in own_x:
                self.xs[s] = self._redrawn_vector(s, self.slot_x)
            for s in own_a:
                self.as_[s] = self._redrawn_vector(s, self.slot_a)
            if self.pre_query_ok():
                self._sync(users)
                return
        raise RecoveryError(f"could not redraw configuration {j} with full-rank designs; "
                            "increase token_bound")

    def _redrawn_vector(self, slot: int, slots: list[int]) -> Token:
        """The new vector of a redrawn ``slot`` (of ``slot_x`` or ``slot_a``): a random one (a guided chain
        chooses it)."""
        return self._token()

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
