"""The learner: runs a query schedule against a black box and recovers the heads.

ALGORITHM.md sections 3-6. :func:`learn` is the public entry point for exact
oracles; :func:`run_schedule` is the field-agnostic core that other fields
(approximate reals, symbolic weights) reuse through :class:`~exactlearn.field.Field`.

What is *proved* (ALGORITHM.md, and the paper's theorem): for tokens drawn from
a continuous distribution the schedule recovers the canonical heads with
probability one. What is *checked* here on every run, exactly: each copy function
is reconstructed and verified against every sample; every pole is rational,
simple and negative; head matchings are unique perfect matchings; the value
system is consistent; ``u^T z_j`` equals every measured ``R_j(oo)``; the
matching configurations' poles agree with the solved ``W_h``. Degenerate draws
are redrawn and counted; anything inconsistent raises
:class:`~exactlearn.InconsistentAnswersError`. Nothing is guessed.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Sequence

from flint import fmpq_mat

from .errors import (
    InconsistentAnswersError,
    InvalidArgumentError,
    ReconstructionError,
    RecoveryError,
    RedrawBudgetExceeded,
    VerificationError,
)
from .exact import Token, as_tokens
from .field import ExactRationals, Field
from .recovery import RecoveredHead, Recovery
from .schedule import (
    SCHEDULES,
    Configuration,
    TokenSampler,
    add_tokens,
    copies_query,
    full_rank,
    matching_points,
    max_query_length,
    measurement_points,
    query_count,
    value_row,
    weight_row,
)

__all__ = ["learn", "run_schedule", "ScheduleRun", "DEFAULT_TOKEN_BOUND"]

#: Token entries are drawn uniformly from ``[-B, B]``. ``B = 2`` keeps the
#: exponents ``(z - x)_a x_b`` (at most ``2B^2 = 8`` in size) and hence the
#: numbers small, while degenerate draws stay rare for generic weights (they
#: need an exact rational relation among the weights; see docs/genericity.md).
DEFAULT_TOKEN_BOUND = 2

_MAX_PRE_QUERY_DRAWS = 10_000


def _positive_int(name: str, value: Any, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidArgumentError(f"{name} must be an integer >= {low}, got {value!r}")
    return value


class ScheduleRun:
    """One run of the schedule over a field. Use :func:`run_schedule`."""

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
        # the schedule's state
        self.n_configs = d * d
        self.n_measured = d * d if schedule == "paper" else d
        self.configs: list[Configuration] = []
        self.matchings: dict[int, Configuration] = {}
        self.history: list[Configuration] = []
        self.H_seen = heads if not bound else 0
        self.max_count_seen = 0
        self.values: list[tuple] | None = None

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

    def _copy_terms(self, cfg: Configuration, where: str):
        try:
            cfg.terms = self.field.copy_terms(
                cfg.points, cfg.values, self.H, at_zero=cfg.at_zero, at_infinity=cfg.at_infinity
            ).terms
        except ReconstructionError as exc:
            raise InconsistentAnswersError(
                f"{where}: {exc}. No multi-head attention with at most {self.H} heads answers like this"
                + (" (is the bound H0 too small?)" if self.bound else " (is H too small?)")
            ) from None
        self.max_count_seen = max(self.max_count_seen, len(cfg.terms))

    def measure(self, cfg: Configuration, where: str) -> None:
        """Query ``S_k(x, z)`` for ``k = 0..2H`` and reconstruct the type-(H, H) function."""
        cfg.points = measurement_points(self.H)
        cfg.values = [self.ask(copies_query(cfg.x, cfg.z, k)) for k in cfg.points]
        cfg.at_zero, cfg.at_infinity = None, None
        self._copy_terms(cfg, where)
        cfg.status = "measured"
        self._report()

    # -- drawing --------------------------------------------------------------
    def _pre_query_ok(self, pairs: Sequence[tuple[Token, Token]]) -> bool:
        """Conditions checked before any query (ALGORITHM.md section 6)."""
        d = self.d
        weight_rows = [weight_row(x, z) for x, z in pairs]
        if not full_rank(weight_rows, d * d):
            return False
        value_rows = [value_row(x, z) for x, z in pairs[: self.n_measured]]
        if not full_rank(value_rows, d):
            return False
        x1, z1 = pairs[0]
        for x, z in pairs[1 : self.n_measured]:
            xm, zm = add_tokens(x1, x), add_tokens(z1, z)
            if not any(xm) or xm == zm:
                return False
        return True

    def draw_initial(self) -> None:
        for _ in range(_MAX_PRE_QUERY_DRAWS):
            pairs = [self.sampler.pair() for _ in range(self.n_configs)]
            if self._pre_query_ok(pairs):
                kinds = ["measurement"] * self.n_measured + ["predicted"] * (self.n_configs - self.n_measured)
                self.configs = [Configuration(k, x, z) for k, (x, z) in zip(kinds, pairs)]
                return
        raise RecoveryError(
            f"could not draw {self.n_configs} configurations with full-rank designs from tokens in "
            f"[-{self.sampler.bound}, {self.sampler.bound}]^{self.d}; increase token_bound"
        )

    def redraw(self, j: int, reason: str) -> None:
        """Replace configuration ``j`` after a degenerate outcome (counted)."""
        self.redraws += 1
        self.redraw_reasons.append(f"configuration {j}: {reason}")
        old = self.configs[j]
        old.status = "degenerate"
        self.history.append(old)
        if self.redraws > self.max_redraws:
            hint = ""
            if not self.bound and self.max_count_seen < self.H:
                hint = (
                    f" No configuration showed more than {self.max_count_seen} of the H = {self.H} heads: "
                    f"the model may have fewer canonical heads (pass heads_bound={self.H} instead of heads)."
                )
            error = RedrawBudgetExceeded(
                f"more than {self.max_redraws} degenerate configurations were redrawn "
                f"({self.queries} queries spent); last: {reason}.{hint}"
            )
            error.reasons = list(self.redraw_reasons)  # every redraw, for callers that explain the failure
            error.queries = self.queries
            raise error
        pairs = [(c.x, c.z) for c in self.configs]
        for _ in range(_MAX_PRE_QUERY_DRAWS):
            pairs[j] = self.sampler.pair()
            if self._pre_query_ok(pairs):
                self.configs[j] = Configuration(old.kind, *pairs[j])
                break
        else:
            raise RecoveryError(f"could not redraw configuration {j} with full-rank designs; increase token_bound")
        if j == 0:
            for m in self.matchings.values():
                m.status = "degenerate"
                self.history.append(m)
            self.matchings.clear()
        elif j in self.matchings:
            stale = self.matchings.pop(j)
            stale.status = "degenerate"
            self.history.append(stale)

    # -- the phases -----------------------------------------------------------
    def _distinct(self, values: Sequence[Any]) -> bool:
        return all(not self.field.equal(values[a], values[b])
                   for a in range(len(values)) for b in range(a))

    def settle_measurements(self) -> None:
        """Measure configurations ``0..n_measured-1`` until none is degenerate."""
        while True:
            for j in range(self.n_measured):
                if self.configs[j].status == "pending":
                    self.measure(self.configs[j], f"measurement configuration {j}")
            counts = [len(self.configs[j].terms) for j in range(self.n_measured)]
            if self.bound:
                self.H_seen = max([self.H_seen] + counts)
            bad = []
            for j in range(self.n_measured):
                terms = self.configs[j].terms
                if len(terms) < self.H_seen:
                    bad.append((j, f"{len(terms)} poles, fewer than the {self.H_seen} heads"))
                elif not self._distinct([c for _, c in terms]):
                    bad.append((j, "two heads have equal residues, so matching by residues is ambiguous"))
            if not bad:
                return
            for j, reason in bad:
                self.redraw(j, reason)

    def match(self, j: int) -> tuple[str, str]:
        """Matching configuration for ``j``: ``("ok"|"redraw"|"recount", reason)``."""
        anchor, other = self.configs[0], self.configs[j]
        cfg = Configuration("matching", add_tokens(anchor.x, other.x), add_tokens(anchor.z, other.z))
        cfg.points = matching_points(self.H)
        cfg.at_zero = anchor.value_at_zero + other.value_at_zero
        cfg.at_infinity = anchor.value_at_infinity + other.value_at_infinity
        cfg.values = [self.ask(copies_query(cfg.x, cfg.z, k)) for k in cfg.points]
        self._copy_terms(cfg, f"matching configuration (0 + {j})")
        self._report()
        self.history.append(cfg)
        count = len(cfg.terms)
        if count > self.H_seen:
            # only possible with a bound: every measurement so far was degenerate alike
            self.H_seen = count
            cfg.status = "degenerate"
            return "recount", f"a matching configuration showed {count} poles"
        if count < self.H_seen:
            cfg.status = "degenerate"
            return "redraw", f"its matching configuration has {count} poles, fewer than {self.H_seen}"
        a = [c for _, c in anchor.terms]
        b = [c for _, c in other.terms]
        t = [c for _, c in cfg.terms]
        found = _perfect_matchings(self.field, a, b, t, limit=2)
        if not found:
            raise InconsistentAnswersError(
                f"no head of measurement configuration {j} pairs with each head of configuration 0: the "
                f"residues of the matching configuration are not sums c_0,h + c_{j},h'. No multi-head "
                f"attention with at most {self.H} heads answers like this"
                + (" (is the bound H0 too small?)" if self.bound else " (is H too small?)")
            )
        if len(found) > 1:
            cfg.status = "degenerate"
            return "redraw", "the head matching by residue sums is not unique"
        sigma, tau = found[0]
        other.labels = sigma
        cfg.labels = tau
        cfg.status = "used"
        self.matchings[j] = cfg
        return "ok", ""

    def settle_matchings(self) -> None:
        while True:
            self.settle_measurements()
            self.configs[0].labels = list(range(len(self.configs[0].terms)))
            restart = False
            for j in range(1, self.n_measured):
                if j in self.matchings:
                    continue
                outcome, reason = self.match(j)
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
        rows = [value_row(c.x, c.z) for c in self.configs[:upto]]
        residues = [[self.configs[j].terms[self.configs[j].labels[h]][1] for j in range(upto)]
                    for h in range(self.H_seen)]
        if self.H_seen == 0:
            return []
        try:
            return self.field.solve_values(rows, residues)
        except ReconstructionError as exc:
            raise InconsistentAnswersError(
                f"{exc}. No multi-head attention with at most {self.H} heads answers like this"
                + (" (is the bound H0 too small?)" if self.bound else "")
            ) from None

    def predicted(self, values: list[tuple]) -> None:
        """Lean schedule: later configurations with known R(0), R(oo) and residues."""
        u = _vector_sum(self.field, values, self.d)
        for j in range(self.n_measured, self.n_configs):
            while True:
                cfg = self.configs[j]
                row = value_row(cfg.x, cfg.z)
                expected = [self.field.dot(row, v) for v in values]
                zero = self.field.element(0)
                if any(self.field.equal(c, zero) for c in expected) or not self._distinct(expected):
                    # a condition known before querying: draw again, no query spent
                    self._replace_pre_query(j)
                    continue
                cfg.points = matching_points(self.H)
                cfg.at_zero = self.field.dot(cfg.x, u)
                cfg.at_infinity = self.field.dot(cfg.z, u)
                cfg.values = [self.ask(copies_query(cfg.x, cfg.z, k)) for k in cfg.points]
                self._copy_terms(cfg, f"configuration {j}")
                self._report()
                count = len(cfg.terms)
                if count < self.H_seen:
                    self.redraw(j, f"{count} poles, fewer than the {self.H_seen} heads")
                    continue
                labels = []
                for h in range(self.H_seen):
                    hits = [i for i, (_, c) in enumerate(cfg.terms) if self.field.equal(c, expected[h])]
                    if len(hits) != 1:
                        raise InconsistentAnswersError(
                            f"configuration {j}: the residues {len(cfg.terms)} found are not the residues "
                            f"v_h^T (x - z) predicted from the learned values. No multi-head attention with at "
                            f"most {self.H} heads answers like this"
                            + (" (is the bound H0 too small?)" if self.bound else "")
                        )
                    labels.append(hits[0])
                if len(set(labels)) != len(labels) or count != self.H_seen:
                    raise InconsistentAnswersError(
                        f"configuration {j}: {count} poles, but {self.H_seen} heads were learned"
                    )
                cfg.labels = labels
                cfg.status = "used"
                break

    def _replace_pre_query(self, j: int) -> None:
        pairs = [(c.x, c.z) for c in self.configs]
        for _ in range(_MAX_PRE_QUERY_DRAWS):
            pairs[j] = self.sampler.pair()
            if self._pre_query_ok(pairs):
                self.configs[j] = Configuration(self.configs[j].kind, *pairs[j])
                return
        raise RecoveryError(f"could not draw configuration {j} with distinct predicted residues; increase token_bound")

    def solve_and_check(self, values: list[tuple]) -> list[tuple[Any, tuple]]:
        d, H = self.d, self.H_seen
        design = fmpq_mat(d * d, d * d, [x for c in self.configs for x in weight_row(c.x, c.z)])
        rhos = [[c.terms[c.labels[h]][0] for c in self.configs] for h in range(H)]
        weights = self.field.solve_weights(design, rhos) if H else []
        # u^T z_j = R_j(oo) on every measured configuration
        u = _vector_sum(self.field, values, d)
        for j in range(self.n_measured):
            c = self.configs[j]
            if not self.field.equal(self.field.dot(c.z, u), c.value_at_infinity):
                raise InconsistentAnswersError(
                    f"measurement configuration {j}: R(oo) differs from u^T z with u = sum_h v_h"
                    + (" (is the bound H0 too small?)" if self.bound else "")
                )
        # every matching configuration's poles are further measurements of W_h
        for j, m in self.matchings.items():
            left = tuple(a - b for a, b in zip(m.z, m.x))
            for h in range(H):
                if not self.field.weights_agree(weights[h], left, m.x, m.terms[m.labels[h]][0]):
                    raise InconsistentAnswersError(
                        f"matching configuration (0 + {j}): the pole of head {h} disagrees with the solved W_{h}"
                        + (" (is the bound H0 too small?)" if self.bound else "")
                    )
        return list(zip(weights, values))

    def run(self) -> list[tuple[Any, tuple]]:
        self.draw_initial()
        self.settle_matchings()
        values = self.solve_values(self.n_measured)
        if self.schedule == "lean":
            self.predicted(values)
        return self.solve_and_check(values)


def _vector_sum(field: Field, vectors: list[tuple], d: int) -> list:
    if not vectors:
        return [field.element(0) for _ in range(d)]
    out = list(vectors[0])
    for v in vectors[1:]:
        out = [a + b for a, b in zip(out, v)]
    return out


def _perfect_matchings(field: Field, anchor: Sequence, other: Sequence, target: Sequence, limit: int = 2):
    """Perfect matchings ``h -> (sigma[h], tau[h])`` with ``anchor[h] + other[sigma[h]] == target[tau[h]]``.

    Returns at most ``limit`` of them; the learner requires exactly one.
    """
    H = len(anchor)
    if len(other) != H or len(target) != H:
        return []
    edges = [
        [(hp, t) for hp in range(H) for t in range(H) if field.equal(anchor[h] + other[hp], target[t])]
        for h in range(H)
    ]
    found: list[tuple[list[int], list[int]]] = []
    sigma: list[int] = []
    tau: list[int] = []

    def extend(h: int) -> None:
        if len(found) >= limit:
            return
        if h == H:
            found.append((list(sigma), list(tau)))
            return
        for hp, t in edges[h]:
            if hp in sigma or t in tau:
                continue
            sigma.append(hp)
            tau.append(t)
            extend(h + 1)
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
    oracle_d = getattr(oracle, "d", None)
    if isinstance(oracle_d, int) and oracle_d != d:
        raise InvalidArgumentError(f"the oracle has token width d = {oracle_d}, but d = {d} was given")

    start = time.perf_counter()
    run = run_schedule(
        oracle, d, H, bound=heads_bound is not None, seed=seed, schedule=schedule,
        token_bound=token_bound, max_redraws=max_redraws, progress=progress,
    )
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
        configurations=run.configs + list(run.matchings.values()),
        redraw_reasons=run.redraw_reasons,
    )
    if verify:
        recovery.verification_queries = _verify(oracle, recovery, verify, seed, token_bound)
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
