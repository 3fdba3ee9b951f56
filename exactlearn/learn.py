"""The learner: runs a query schedule against a black box and recovers the heads.

ALGORITHM.md sections 3-6. :func:`learn` is the public entry point for exact
oracles; :func:`run_schedule` is the field-agnostic core that other fields
(approximate reals, symbolic weights) reuse through :class:`~exactlearn.field.Field`.

What is *proved* (docs/algorithm.md; the paper's theorem): for tokens drawn from
a continuous distribution the schedule recovers the canonical heads with
probability one. Here tokens are random *integers* in ``[-B, B]``, for which a
configuration is degenerate with probability ``O(1/B)``.

What is *checked* on every run, exactly: each copy function is reconstructed and
verified against every sample; every pole is rational, simple and negative;
each link between consecutive configurations pairs their heads by a unique
perfect matching of poles (``rho_C = rho rho'``) and residues; the value system
is consistent; ``u^T z_j`` equals every measured ``R_j(oo)``; and the learned
heads reproduce every answer of every configuration that was dropped along the
way (those used are reproduced by construction). Degenerate draws are redrawn
and counted; answers that fit no attention with at most ``H`` (``H0``) heads
raise :class:`~exactlearn.InconsistentAnswersError`. The returned model agrees
with every answer the oracle gave this call.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Sequence

from flint import fmpq_mat

from .errors import (
    ExactLearnError,
    InconsistentAnswersError,
    InvalidArgumentError,
    QueryBudgetExceeded,
    ReconstructionError,
    RecoveryError,
    RedrawBudgetExceeded,
    VerificationError,
)
from .exact import Token, as_tokens
from .field import ExactRationals, Field
from .guard import GuardedOracle, guarded_progress
from .limits import DEFAULT_LIMITS, Limits, check_learn
from .recovery import RecoveredHead, Recovery
from .schedule import (
    SCHEDULES,
    Configuration,
    TokenSampler,
    add_tokens,
    copies_query,
    full_rank,
    link_kind,
    linked_tokens,
    matching_points,
    max_query_length,
    measurement_points,
    query_count,
    sub_tokens,
    value_row,
    weight_row,
)

__all__ = ["learn", "run_schedule", "ScheduleRun", "DEFAULT_TOKEN_BOUND"]

#: Token entries are drawn uniformly from ``[-B, B]``. ``B = 2`` keeps the
#: exponents ``(z - x)_a x_b`` (at most ``2B^2 = 8`` in size) and hence the
#: numbers small. Degenerate draws happen with probability ``O(1/B)`` per
#: configuration for structured weights (a zero entry in ``v``, weights that are
#: all powers of one prime); they are redrawn and counted. Measured with
#: benchmarks/token_range.py (docs/performance.md): at B = 2 redraws are rare
#: beyond d = 3 (3 configurations in 80 runs at d = 4, none seen at d = 6, 8) and
#: cost at most 2H + 1 queries each, while B = 3 doubles the answers' size and
#: costs +35% time at d = 8, H = 4, +85% at d = 12, H = 6.
DEFAULT_TOKEN_BOUND = 2
#: Larger token ranges make every exact number grow like ``B^2``: refuse absurd
#: ones (the limit is ``Limits.token_bound``, exactlearn/limits.py).
MAX_TOKEN_BOUND = DEFAULT_LIMITS.token_bound

_MAX_PRE_QUERY_DRAWS = 10_000
#: Said in the report of every lean run.
LEAN_NOTE = ("lean schedule: no redundancy; a single wrong answer can give a different model that agrees "
             "with every answer. Check on fresh queries with verify=N (--verify N), or use the paper schedule")
#: Lean schedule: draws of one later configuration whose predicted residues
#: collide or vanish (no query spent) before the run falls back to matching queries.
_MAX_PREDICTION_DRAWS = 64


class _Restart(Exception):
    """Inconsistent answers while the head count may be underestimated (bound mode)."""


class _LeanFallback(Exception):
    """Lean schedule: residues cannot label the later configurations; match them by queries."""


def _positive_int(name: str, value: Any, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidArgumentError(f"{name} must be an integer >= {low}, got {value!r}")
    return value


class ScheduleRun:
    """One run of the schedule over a field. Use :func:`run_schedule`.

    The configurations form a chain: configuration ``j`` shares either its
    query token ``x`` or its difference ``a = z - x`` with configuration
    ``j - 1`` (:func:`~exactlearn.schedule.link_kind`), and the matching
    configuration of the link has matrix ``M_{j-1} + M_j``
    (:func:`~exactlearn.schedule.linked_tokens`). Token vectors live in *slots*
    shared by neighbouring configurations; redrawing a configuration draws its
    own slot again, and every configuration using that slot is measured again.
    """

    def __init__(
        self,
        oracle: Callable[[list[Token]], Any],
        d: int,
        heads: int,
        bound: bool,
        field: Field,
        rng: random.Random,
        *,
        schedule: str = "paper",
        token_bound: int = DEFAULT_TOKEN_BOUND,
        max_redraws: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ):
        self.oracle = oracle
        self.d = d
        self.H = heads  # the schedule's H (known H, or the bound H0)
        self.bound = bound
        self.field = field
        self.sampler = TokenSampler(d, token_bound, rng)
        self.schedule = schedule
        self.max_redraws = 2 * d * d + 10 if max_redraws is None else max_redraws
        self.progress = progress
        self.planned = query_count(d, heads, schedule)
        # measured by the learner as it asks
        self.queries = 0
        self.max_length = 0
        self.seconds_oracle = 0.0
        self.redraws = 0
        self.redraw_reasons: list[str] = []
        self.notes: list[str] = []  # what the report should say besides redraws (lean draws, fallback)
        # the schedule's state
        self.n_configs = d * d
        self.n_full = d * d if schedule == "paper" else d  # configurations queried at k = 0..2H
        self.n_chained = self.n_full  # configurations 0..n_chained-1 form the matched chain
        self.configs: list[Configuration] = []
        self.links: dict[int, Configuration] = {}  # j -> matching configuration of link (j-1, j)
        self.history: list[Configuration] = []  # everything answered and then dropped
        self.H_seen = heads if not bound else 0
        self.max_count_seen = 0
        self.u: list | None = None  # known once the values are learned (lean schedule)
        self.fallback = False  # lean schedule with equal value vectors: later links are matched too
        self.xs: list[Token] = []
        self.as_: list[Token] = []
        self.slot_x: list[int] = []
        self.slot_a: list[int] = []
        self.owner_x: list[int] = []  # configuration that created each slot
        self.owner_a: list[int] = []

    # -- asking ---------------------------------------------------------------
    def ask(self, tokens: Sequence[Token]) -> Any:
        start = time.perf_counter()
        raw = self.oracle(list(tokens))
        self.seconds_oracle += time.perf_counter() - start
        self.queries += 1
        self.max_length = max(self.max_length, len(tokens))
        return self.field.element(raw)

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(self.queries, self.planned)

    def _copy_terms(self, cfg: Configuration, where: str) -> None:
        try:
            cfg.terms = self.field.copy_terms(
                cfg.points, cfg.values, self.H, at_zero=cfg.at_zero, at_infinity=cfg.at_infinity
            ).terms
        except ReconstructionError as exc:
            # a genuine attention with at most H heads always gives a type-(H, H)
            # copy function with rational, simple, negative poles: this is never degeneracy
            raise InconsistentAnswersError(
                f"{where}: {exc}. No multi-head attention with at most {self.H} heads answers like this"
                + (" (is the bound H0 too small?)" if self.bound else " (is H too small?)")
            ) from None
        self.max_count_seen = max(self.max_count_seen, len(cfg.terms))

    def _query(self, cfg: Configuration, where: str) -> None:
        cfg.values = [self.ask(copies_query(cfg.x, cfg.z, k)) for k in cfg.points]
        self._copy_terms(cfg, where)
        self._report()

    def measure(self, j: int) -> None:
        """Query configuration ``j``: ``k = 0..2H``, or ``k = 1..2H-1`` once ``u`` is known."""
        cfg = self.configs[j]
        if self.u is None:
            cfg.points = measurement_points(self.H)
            cfg.at_zero, cfg.at_infinity = None, None
        else:
            cfg.points = matching_points(self.H)
            cfg.at_zero = self.field.dot(cfg.x, self.u)
            cfg.at_infinity = self.field.dot(cfg.z, self.u)
        self._query(cfg, f"configuration {j}")
        cfg.status = "measured"

    # -- drawing --------------------------------------------------------------
    def _token(self) -> Token:
        while True:
            t = self.sampler.token()
            if any(t):
                return t

    def _tokens_of(self, j: int) -> tuple[Token, Token]:
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
            if chained and link_kind(j, self.d) == "x":
                self.slot_x.append(self.slot_x[j - 1])
            else:
                self.xs.append(self._token())
                self.owner_x.append(j)
                self.slot_x.append(len(self.xs) - 1)
            if chained and link_kind(j, self.d) == "a":
                self.slot_a.append(self.slot_a[j - 1])
            else:
                self.as_.append(self._token())
                self.owner_a.append(j)
                self.slot_a.append(len(self.as_) - 1)

    def _own_slots(self, j: int) -> tuple[list[int], list[int]]:
        """The slots configuration ``j`` created (not those it shares with ``j - 1``)."""
        sx, sa = self.slot_x[j], self.slot_a[j]
        return ([sx] if self.owner_x[sx] == j else []), ([sa] if self.owner_a[sa] == j else [])

    def _pre_query_ok(self) -> bool:
        """Conditions checked before any query (ALGORITHM.md section 6)."""
        d = self.d
        pairs = [self._tokens_of(j) for j in range(self.n_configs)]
        for j in range(1, self.n_chained):
            xc, zc = linked_tokens(link_kind(j, d), pairs[j - 1], pairs[j])
            if not any(xc) or xc == zc:
                return False
        if not full_rank([weight_row(x, z) for x, z in pairs], d * d):
            return False
        return full_rank([value_row(x, z) for x, z in pairs[: self.n_full]], d)

    def _sync_configs(self, changed: set[int]) -> None:
        """Rebuild the configurations in ``changed`` from their slots (status pending)."""
        for j in sorted(changed):
            old = self.configs[j] if j < len(self.configs) else None
            if old is not None and old.values:
                old.status = "degenerate"
                self.history.append(old)
            self.configs[j: j + 1] = [Configuration("measurement", *self._tokens_of(j))]
        for j in list(self.links):
            if j in changed or j - 1 in changed:
                stale = self.links.pop(j)
                stale.status = "degenerate"
                self.history.append(stale)

    def draw(self, start: int = 0) -> None:
        """Draw configurations ``start..n-1`` until the pre-query conditions hold."""
        for _ in range(_MAX_PRE_QUERY_DRAWS):
            self._plan(start)
            if self._pre_query_ok():
                self.configs[start:] = [Configuration("measurement", *self._tokens_of(j))
                                        for j in range(start, self.n_configs)]
                return
        raise RecoveryError(
            f"could not draw {self.n_configs} configurations with full-rank designs from tokens in "
            f"[-{self.sampler.bound}, {self.sampler.bound}]^{self.d}; increase token_bound"
        )

    def _redraw_slots(self, j: int) -> set[int]:
        """New tokens for configuration ``j``'s own slots; returns the configurations using them."""
        own_x, own_a = self._own_slots(j)
        users = {i for i in range(self.n_configs)
                 if self.slot_x[i] in own_x or self.slot_a[i] in own_a}
        for _ in range(_MAX_PRE_QUERY_DRAWS):
            for s in own_x:
                self.xs[s] = self._token()
            for s in own_a:
                self.as_[s] = self._token()
            if self._pre_query_ok():
                return users
        raise RecoveryError(f"could not redraw configuration {j} with full-rank designs; increase token_bound")

    def redraw(self, j: int, reason: str) -> None:
        """Replace configuration ``j`` after a degenerate outcome (counted)."""
        self.redraws += 1
        self.redraw_reasons.append(f"configuration {j}: {reason}")
        if self.redraws > self.max_redraws:
            self._refuse_nonlinear(reason)
            hint = ""
            if not self.bound and self.max_count_seen < self.H:
                hint = (
                    f" No configuration showed more than {self.max_count_seen} of the H = {self.H} heads: "
                    f"the model may have fewer canonical heads (pass heads_bound={self.H} instead of heads)."
                )
            error = RedrawBudgetExceeded(
                f"more than {self.max_redraws} degenerate configurations were redrawn "
                f"({self.queries} queries spent); last: {reason}.{hint} Structured weights (e.g. entries that "
                f"are all powers of one prime) make integer draws degenerate often: try a larger token_bound"
                + ("" if not self.bound else f", or check that the bound H0 = {self.H} is not too small")
            )
            error.reasons = list(self.redraw_reasons)  # every redraw, for callers that explain the failure
            error.queries = self.queries
            raise error
        self._sync_configs(self._redraw_slots(j))

    # -- the phases -----------------------------------------------------------
    def link(self, j: int) -> tuple[str, str]:
        """Match the heads of configurations ``j - 1`` and ``j``: ``("ok"|"redraw"|"recount", reason)``."""
        prev, cur = self.configs[j - 1], self.configs[j]
        kind = link_kind(j, self.d)
        cfg = Configuration("matching", *linked_tokens(kind, (prev.x, prev.z), (cur.x, cur.z)), link=kind)
        # R_C(0) = u^T x_C and R_C(oo) = u^T z_C by linearity of u^T
        if kind == "x":
            cfg.at_zero = cur.value_at_zero
            cfg.at_infinity = prev.value_at_infinity + cur.value_at_infinity - cur.value_at_zero
        else:
            cfg.at_zero = prev.value_at_zero + cur.value_at_zero
            cfg.at_infinity = prev.value_at_infinity + cur.value_at_zero
        cfg.points = matching_points(self.H)
        self._query(cfg, f"matching configuration ({j - 1} ~ {j})")
        count = len(cfg.terms)
        if count > self.H_seen:
            # only possible with a bound: every measurement so far was degenerate alike
            self.H_seen = count
            self.history.append(cfg)
            return "recount", f"a matching configuration showed {count} poles"
        if count < self.H_seen:
            self.history.append(cfg)
            return "redraw", f"its matching configuration has {count} poles, fewer than {self.H_seen}"
        found = _perfect_matchings(self.field, kind, prev.terms, cur.terms, cfg.terms, limit=2)
        if not found:
            self.history.append(cfg)
            self._inconsistent(
                f"the heads of configurations {j - 1} and {j} cannot be paired: the poles of their matching "
                f"configuration are not the products rho * rho' with the residues "
                + ("c + c'" if kind == "x" else "c = c'")
            )
        if len(found) > 1:
            self.history.append(cfg)
            return "redraw", "the head matching by poles and residues is not unique"
        sigma, tau = found[0]
        cur.labels = [sigma[i] for i in prev.labels]
        cfg.labels = [tau[i] for i in prev.labels]
        cfg.status = "used"
        self.links[j] = cfg
        return "ok", ""

    def settle(self, members: range) -> None:
        """Measure ``members`` and match their links until nothing is degenerate."""
        while True:
            for j in members:
                if self.configs[j].status == "pending":
                    self.measure(j)
            counts = [len(self.configs[j].terms) for j in members]
            if self.bound:
                if self.u is not None and max(counts) > self.H_seen:
                    raise _Restart(f"a configuration shows {max(counts)} poles, but {self.H_seen} heads were learned")
                self.H_seen = max([self.H_seen] + counts)
            bad = [j for j in members if len(self.configs[j].terms) < self.H_seen]
            if bad:
                for j in bad:
                    if self.configs[j].status != "pending":
                        self.redraw(j, f"{len(self.configs[j].terms)} poles, fewer than the {self.H_seen} heads")
                continue
            if members.start == 0:
                self.configs[0].labels = list(range(len(self.configs[0].terms)))
            restart = False
            for j in members:
                if j == 0 or j >= self.n_chained or j in self.links:
                    continue
                outcome, reason = self.link(j)
                if outcome == "recount":
                    restart = True
                    break
                if outcome == "redraw":
                    self.redraw(j, reason)
                    restart = True
                    break
            if not restart:
                return

    def solve_values(self, upto: int) -> list[tuple]:
        if self.H_seen == 0:
            return []
        rows = [value_row(c.x, c.z) for c in self.configs[:upto]]
        residues = [[self.configs[j].terms[self.configs[j].labels[h]][1] for j in range(upto)]
                    for h in range(self.H_seen)]
        try:
            return self.field.solve_values(rows, residues)
        except ReconstructionError as exc:
            self._inconsistent(str(exc))
            raise  # pragma: no cover - _inconsistent always raises

    def predicted(self, values: list[tuple]) -> None:
        """Lean schedule: later configurations with known R(0), R(oo) and residues, no matching query."""
        zero = self.field.element(0)
        for j in range(self.n_full, self.n_configs):
            draws = 0
            while True:
                cfg = self.configs[j]
                row = value_row(cfg.x, cfg.z)
                expected = [self.field.dot(row, v) for v in values]
                if any(self.field.equal(c, zero) for c in expected) or not self._distinct(expected):
                    # known before querying: draw again (no query spent), counted and bounded
                    draws += 1
                    if draws > _MAX_PREDICTION_DRAWS:
                        raise _LeanFallback(f"configuration {j}: {_MAX_PREDICTION_DRAWS} draws in a row had "
                                            f"predicted residues v_h^T (x - z) that collide or vanish")
                    self._sync_configs(self._redraw_slots(j))
                    continue
                if draws:
                    self.notes.append(f"configuration {j}: drawn {draws} more time(s) before querying "
                                      f"(predicted residues collided or vanished; no query spent)")
                self.measure(j)
                count = len(cfg.terms)
                if count > self.H_seen:  # only with a bound: every measured configuration was degenerate
                    raise _Restart(f"configuration {j} shows {count} poles, but only {self.H_seen} heads were learned")
                if count < self.H_seen:
                    self.redraw(j, f"{count} poles, fewer than the {self.H_seen} heads")
                    continue
                labels = []
                for h in range(self.H_seen):
                    hits = [i for i, (_, c) in enumerate(cfg.terms) if self.field.equal(c, expected[h])]
                    if len(hits) != 1:
                        self._inconsistent(
                            f"configuration {j}: the residues found are not the residues v_h^T (x - z) "
                            f"predicted from the learned values"
                        )
                    labels.append(hits[0])
                cfg.labels = labels
                cfg.status = "used"
                break

    def _fall_back(self, reason: str) -> None:
        """Lean schedule: match configurations ``n_full..`` by queries, like the paper's (reported)."""
        self.notes.append(f"lean fallback to matching queries: {reason}")
        for c in self.configs[self.n_full:]:
            if c.values:
                c.status = "degenerate"
                self.history.append(c)
        self.fallback = True
        self.n_chained = self.n_configs
        self.planned = fallback_query_count(self.d, self.H)
        self.draw(self.n_full)
        self.settle(range(self.n_full, self.n_configs))

    def _distinct(self, values: Sequence[Any]) -> bool:
        return all(not self.field.equal(values[a], values[b]) for a in range(len(values)) for b in range(a))

    def solve_and_check(self, values: list[tuple]) -> list[tuple[Any, tuple]]:
        d, H = self.d, self.H_seen
        design = fmpq_mat(d * d, d * d, [x for c in self.configs for x in weight_row(c.x, c.z)])
        rhos = [[c.terms[c.labels[h]][0] for c in self.configs] for h in range(H)]
        weights = self.field.solve_weights(design, rhos) if H else []
        u = _vector_sum(self.field, values, d)
        # u^T z_j = R_j(oo) on every configuration whose R(oo) was read off its own samples
        for j, c in enumerate(self.configs):
            if c.at_infinity is None and not self.field.equal(self.field.dot(c.z, u), c.value_at_infinity):
                self._inconsistent(f"configuration {j}: R(oo) differs from u^T z with u = sum_h v_h")
        # the answers of configurations that were dropped must agree with the result too
        for c in self.history:
            if c.values and not self._predicts(weights, values, u, c):
                self._inconsistent(
                    f"the learned heads contradict the oracle's answers on the dropped configuration "
                    f"x = {c.x}, z = {c.z}"
                )
        return list(zip(weights, values))

    def _predicts(self, weights, values, u, cfg: Configuration) -> bool:
        """Do the learned heads reproduce every answer of ``cfg`` (``R(k)`` for its ``k``)?"""
        left = sub_tokens(cfg.z, cfg.x)
        terms = []
        for W, v in zip(weights, values):
            try:
                rho = self.field.rho(W, left, cfg.x)
            except ReconstructionError:
                return False  # the learned W predicts an answer outside the field
            terms.append((rho, self.field.dot(value_row(cfg.x, cfg.z), v)))
        at_inf = self.field.dot(cfg.z, u)
        for k, value in zip(cfg.points, cfg.values):
            predicted = at_inf
            for rho, c in terms:
                predicted = predicted + c / (rho * k + 1)
            if not self.field.equal(predicted, value):
                return False
        return True

    def _single_tokens_linear(self) -> bool:
        """Necessary for any attention: ``f([x]) = u^T x`` is linear in ``x``."""
        seen: dict[Token, Any] = {}
        for c in self.configs + list(self.links.values()) + self.history:
            if c.values and 0 in c.points:
                seen[c.x] = c.values[c.points.index(0)]
        rows = list(seen)
        if len(rows) <= self.d or not full_rank(rows, self.d):
            return True
        try:
            self.field.solve_values(rows, [[seen[r] for r in rows]])
        except ReconstructionError:
            return False
        return True

    def _refuse_nonlinear(self, reason: str) -> None:
        """Before blaming the draws: answers that fit no attention at all are inconsistent, not degenerate."""
        if not self._single_tokens_linear():
            raise InconsistentAnswersError(
                f"{reason}; the single-token answers f([x]) are not linear in x, which they are for every "
                f"multi-head attention: the oracle is not a multi-head attention"
            )

    def _inconsistent(self, message: str) -> None:
        """Report answers that fit no model with the configurations' head count.

        With a known ``H`` (or a bound reached, ``H_seen == H0``) every configuration
        used shows exactly that many poles, so its terms are the true heads and an
        inconsistency is genuine: raise. With a bound and ``H_seen < H0`` every
        measured configuration may have been degenerate alike (the count is only a
        lower bound on ``H``), so the run restarts from fresh draws (counted),
        unless the single-token answers already rule out every attention.
        """
        hint = " (is the bound H0 too small?)" if self.bound else " (is H too small?)"
        if self.bound and self.H_seen < self.H:
            if not self._single_tokens_linear():
                raise InconsistentAnswersError(
                    f"{message}; moreover the single-token answers f([x]) are not linear in x, which they are "
                    f"for every multi-head attention: the oracle is not a multi-head attention"
                )
            raise _Restart(message)
        raise InconsistentAnswersError(
            f"{message}. No multi-head attention with at most {self.H} heads answers like this{hint}"
        )

    def restart(self, reason: str) -> None:
        """Start again from fresh configurations (one counted redraw)."""
        self.redraws += 1
        self.redraw_reasons.append(f"restart: {reason}")
        for c in self.configs + list(self.links.values()):
            if c.values:
                c.status = "degenerate"
                self.history.append(c)
        self.links.clear()
        self.u, self.fallback, self.n_chained = None, False, self.n_full
        if self.redraws > self.max_redraws:
            self._refuse_nonlinear(reason)
            error = RedrawBudgetExceeded(
                f"more than {self.max_redraws} degenerate configurations were redrawn ({self.queries} queries "
                f"spent); last: {reason}. Either the draws keep being degenerate (try a larger token_bound) "
                f"or the bound H0 = {self.H} is too small"
            )
            error.reasons = list(self.redraw_reasons)
            error.queries = self.queries
            raise error
        self.draw()

    def run(self) -> list[tuple[Any, tuple]]:
        self.draw()
        while True:
            try:
                self.settle(range(self.n_full))
                values = self.solve_values(self.n_full)
                if self.n_full < self.n_configs:
                    self.u = _vector_sum(self.field, values, self.d)
                    try:
                        if not self._distinct_vectors(values):
                            # two heads with the same v: residues cannot tell them apart in any
                            # configuration, so the later configurations are matched like the paper's
                            raise _LeanFallback("two heads share v")
                        self.predicted(values)
                    except _LeanFallback as exc:
                        self._fall_back(str(exc))
                return self.solve_and_check(values)
            except _Restart as exc:
                self.restart(str(exc))

    def _distinct_vectors(self, values: list[tuple]) -> bool:
        return all(any(not self.field.equal(p, q) for p, q in zip(values[a], values[b]))
                   for a in range(len(values)) for b in range(a))


def fallback_query_count(d: int, heads: int) -> int:
    """Lean schedule when two heads share ``v``: every later configuration gets a matching query."""
    return d * (2 * heads + 1) + (d - 1) * (2 * heads - 1) + 2 * (d * d - d) * (2 * heads - 1)


def _vector_sum(field: Field, vectors: list[tuple], d: int) -> list:
    if not vectors:
        return [field.element(0) for _ in range(d)]
    out = list(vectors[0])
    for v in vectors[1:]:
        out = [a + b for a, b in zip(out, v)]
    return out


def _perfect_matchings(field: Field, kind: str, prev: Sequence, cur: Sequence, target: Sequence, limit: int = 2):
    """Pairings of the terms of two linked configurations through their matching configuration.

    A pairing is a bijection ``i -> sigma[i]`` (terms of ``prev`` to terms of
    ``cur``) with, for every ``i``, a distinct target term ``tau[i]`` such that
    ``rho_target = rho_prev * rho_cur`` and ``c_target = c_prev + c_cur`` (shared
    ``x``) or ``c_target = c_prev = c_cur`` (shared ``a``). Returns at most
    ``limit`` pairings; the learner requires exactly one.
    """
    n = len(prev)
    if len(cur) != n or len(target) != n:
        return []
    edges: list[list[tuple[int, int]]] = []
    for rp, cp in prev:
        row = []
        for i2, (rc, cc) in enumerate(cur):
            if kind == "x":
                c = cp + cc
            elif field.equal(cp, cc):
                c = cp
            else:
                continue
            rho = rp * rc
            row.extend((i2, t) for t, (rt, ct) in enumerate(target) if field.equal(rho, rt) and field.equal(c, ct))
        edges.append(row)
    found: list[tuple[list[int], list[int]]] = []
    sigma: list[int] = []
    tau: list[int] = []

    def extend(i: int) -> None:
        if len(found) >= limit:
            return
        if i == n:
            found.append((list(sigma), list(tau)))
            return
        for i2, t in edges[i]:
            if i2 in sigma or t in tau:
                continue
            sigma.append(i2)
            tau.append(t)
            extend(i + 1)
            sigma.pop()
            tau.pop()

    extend(0)
    return found


def run_schedule(
    oracle: Callable[[list[Token]], Any],
    d: int,
    heads: int,
    *,
    bound: bool = False,
    field: Field | None = None,
    seed: Any = 0,
    schedule: str = "paper",
    token_bound: int = DEFAULT_TOKEN_BOUND,
    max_redraws: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ScheduleRun:
    """Run the schedule over ``field`` and return the finished :class:`ScheduleRun`.

    ``run.result`` holds ``[(W_h, v_h)]`` in the field's representation.
    """
    run = ScheduleRun(
        oracle, d, heads, bound, field or ExactRationals(), random.Random(f"exactlearn.learn:{seed}"),
        schedule=schedule, token_bound=token_bound, max_redraws=max_redraws, progress=progress,
    )
    run.result = run.run()
    return run


def learn(
    oracle: Callable[[list[Token]], Any],
    d: int,
    *,
    heads: int | None = None,
    heads_bound: int | None = None,
    seed: Any = 0,
    schedule: str = "paper",
    verify: int = 0,
    token_bound: int = DEFAULT_TOKEN_BOUND,
    max_redraws: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    max_queries: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Recovery:
    """Learn a multi-head attention exactly from black-box queries.

    Parameters
    ----------
    oracle:
        Any callable that takes a list of integer tuples (each of length ``d``)
        and returns an exact rational (``flint.fmpq``, ``fractions.Fraction`` or
        ``int``). It is treated as a black box.
    d:
        Token width.
    heads, heads_bound:
        Exactly one: the number ``H`` of canonical heads, or an upper bound
        ``H0 >= H``. With a bound the true ``H`` is found and reported.
    seed:
        Seeds the learner's own random generator (tokens of the configurations).
    schedule:
        ``"paper"`` (``4Hd^2 - 2H + 1`` queries, the default) or ``"lean"``
        (``d(2H+1) + (d^2-1)(2H-1)`` queries, ALGORITHM.md section 5).
    verify:
        Number of extra random sequences on which the learned model is compared
        exactly with the oracle; reported as ``verification_queries``, not part
        of ``queries``. A mismatch raises :class:`~exactlearn.VerificationError`.
    token_bound:
        Token entries are drawn from ``[-token_bound, token_bound]``.
    max_redraws:
        Budget for degenerate configurations (default ``2 d^2 + 10``);
        exceeding it raises :class:`~exactlearn.RedrawBudgetExceeded`.
    progress:
        Optional ``progress(queries_so_far, planned_queries)`` callback.
    max_queries:
        If given, at most this many oracle calls (verification included); one
        more raises :class:`~exactlearn.QueryBudgetExceeded` carrying
        ``queries``, ``max_length`` and ``redraws`` so far. A budget below the
        schedule's planned count is refused before the first query.
    limits:
        Maxima on ``d``, the head count, ``token_bound`` and the planned query
        count, checked before the first query (:class:`~exactlearn.limits.Limits`;
        lift one with ``limits=Limits(d=48)``).

    Returns
    -------
    Recovery
        Canonical heads (exact), counts measured by the learner, redraws, time.

    Raises
    ------
    RecoveryError
        If the answers are inconsistent with at most ``H`` (``H0``) heads
        (:class:`~exactlearn.InconsistentAnswersError`), the redraw budget is
        spent (:class:`~exactlearn.RedrawBudgetExceeded`), or verification fails.
    OracleError
        If the oracle or the progress callback raised (the original is chained
        as ``__cause__``; ``queries``, ``max_length``, ``redraws`` so far).

    The lean schedule has no redundancy: a single wrong answer can yield a
    different model that agrees with every answer (the paper schedule refuses
    it). Against an oracle that may err, use the paper schedule or ``verify=N``.

    >>> from exactlearn import MultiHeadAttention, Oracle
    >>> oracle = Oracle(MultiHeadAttention.random(2, 2, seed=3))
    >>> rec = learn(oracle, 2, heads=2)
    >>> rec.model.equivalent(oracle.target), rec.queries, rec.formula, oracle.queries
    (True, 29, 29, 29)
    """
    if not callable(oracle):
        raise InvalidArgumentError(f"oracle must be callable (tokens -> exact rational), got {type(oracle).__name__}")
    d = _positive_int("d", d)
    if (heads is None) == (heads_bound is None):
        raise InvalidArgumentError("give exactly one of heads (the number H of heads) or heads_bound (an upper bound H0)")
    H = _positive_int("heads" if heads is not None else "heads_bound", heads if heads is not None else heads_bound)
    if schedule not in SCHEDULES:
        raise InvalidArgumentError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    verify = _positive_int("verify", verify, 0)
    token_bound = _positive_int("token_bound", token_bound)
    if max_redraws is not None:
        max_redraws = _positive_int("max_redraws", max_redraws, 0)
    planned = check_learn(d, H, token_bound, schedule, limits, verify=verify, max_redraws=max_redraws).queries
    if max_queries is not None:
        max_queries = _positive_int("max_queries", max_queries, 0)
        if max_queries < planned:
            raise QueryBudgetExceeded(f"max_queries = {max_queries} is below the {planned} queries the {schedule} "
                                      f"schedule asks at least (d = {d}, H = {H}); raise max_queries")
    oracle_d = getattr(oracle, "d", None)
    if isinstance(oracle_d, int) and oracle_d != d:
        raise InvalidArgumentError(f"the oracle has token width d = {oracle_d}, but d = {d} was given")

    start = time.perf_counter()
    runs: list[ScheduleRun] = []  # the guards read the run's counts when they fail
    guarded = GuardedOracle(oracle, max_queries, redraws=lambda: runs[0].redraws if runs else 0)
    progress = guarded_progress(progress, lambda: (runs[0].queries, runs[0].max_length, runs[0].redraws))
    run = ScheduleRun(
        guarded, d, H, heads_bound is not None, ExactRationals(), random.Random(f"exactlearn.learn:{seed}"),
        schedule=schedule, token_bound=token_bound, max_redraws=max_redraws, progress=progress,
    )
    runs.append(run)
    try:
        run.result = run.run()
    except ExactLearnError as exc:
        # what the oracle answered before the failure (ALGORITHM.md section 6: a run reports its queries)
        exc.queries, exc.max_length, exc.redraws = run.queries, run.max_length, run.redraws
        raise
    heads_out = [RecoveredHead(W, tuple(v)) for W, v in run.result]
    if all(h.is_rational for h in heads_out):
        heads_out.sort(key=lambda h: h.to_head().key())
    recovery = Recovery(
        d=d,
        heads=tuple(heads_out),
        queries=run.queries,
        max_length=run.max_length,
        redraws=run.redraws,
        schedule=schedule,
        heads_known=heads,
        heads_bound=heads_bound,
        seed=seed,
        token_bound=token_bound,
        seconds_oracle=run.seconds_oracle,
        configurations=run.configs + list(run.links.values()),
        redraw_reasons=run.redraw_reasons,
        lean_fallback=run.fallback,
        notes=run.notes + ([LEAN_NOTE] if schedule == "lean" else []),
    )
    if verify:
        recovery.verification_queries = _verify(guarded, recovery, verify, seed, token_bound)
    recovery.seconds_total = time.perf_counter() - start
    return recovery


def _verify(oracle, recovery: Recovery, n: int, seed: Any, token_bound: int) -> int:
    """Compare the learned model with the oracle on ``n`` fresh random sequences."""
    if not recovery.is_rational:
        raise VerificationError(
            "the recovered weights are not exp-parametrised rationals, so the learned model cannot be "
            "evaluated exactly on a verification query"
        )
    model = recovery.model
    rng = random.Random(f"exactlearn.verify:{seed}")
    field = ExactRationals()
    longest = max(3, max_query_length(recovery.schedule_heads))
    for i in range(n):
        length = rng.randint(1, longest)
        tokens = as_tokens([tuple(rng.randint(-token_bound, token_bound) for _ in range(recovery.d))
                            for _ in range(length)], recovery.d)
        expected = field.element(oracle(list(tokens)))
        got = model.evaluate(tokens)
        if got != expected:
            raise VerificationError(
                f"verification query {i + 1} of {n} (length {length}): the oracle answered {expected}, the learned "
                f"model gives {got}. The learned model is wrong (is the bound H0 too small, or the oracle not "
                f"a multi-head attention?)"
            )
    return n
