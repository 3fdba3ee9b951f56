"""The learner: runs a query schedule against a black box and recovers the heads.

docs/algorithm.md sections 3-6. :func:`learn` is the public entry point for exact
oracles; :func:`run_schedule` is the field-agnostic core that other fields
(approximate reals, symbolic weights) reuse through :class:`~exactlearn.field.Field`.
The run measures configurations, links consecutive ones (:mod:`exactlearn.matching`),
settles degenerate draws (:mod:`exactlearn.chain`) and solves for the heads.

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
from collections.abc import Callable
from typing import Any

from flint import fmpq

from .chain import TokenChain
from .consistency import (
    LinearityGate,
    distinct,
    distinct_vectors,
    predicts,
    single_tokens_linear,
    vector_sum,
)
from .counter import QueryCounter, affine_argument, declared, guarded_progress
from .errors import (
    ExactLearnError,
    InconsistentAnswersError,
    InvalidArgumentError,
    OracleOutputError,
    QueryBudgetExceeded,
    ReconstructionError,
    RedrawBudgetExceeded,
    UndeterminedFitError,
    VerificationError,
)
from .exact import Token, as_tokens
from .exactfield import ExactRationals
from .field import Field
from .limits import DEFAULT_LIMITS, Limits, announce_answers, answer_too_large, check_learn, lift
from .matching import link_matchings, residue_labels
from .numberfield import NumberField
from .numberfield.exactfield import ExactNumberField, FieldFromAnswers
from .recovery import RecoveredHead, Recovery
from .schedule import (
    Configuration,
    Schedule,
    TokenSampler,
    as_schedule,
    configuration_count,
    linked_tokens,
    max_query_length,
    value_row,
)
from .settings import DEFAULT_SETTINGS
from .states import (
    ConfigKind,
    LeanFallback,
    Linearity,
    LinkKind,
    LinkOutcome,
    Redraw,
    RedrawReason,
    Status,
    Why,
)
from .validate import counted, integer, optional_integer
from .validate import seed as check_seed
from .vector.field import VectorAnswers, VectorRationals
from .vector.recovered import VectorRecoveredHead

__all__ = ["learn", "run_schedule", "ScheduleRun", "ChainFactory", "DEFAULT_TOKEN_BOUND"]

#: Token entries are drawn uniformly from ``[-B, B]`` (:class:`~exactlearn.settings.ScheduleSettings`).
DEFAULT_TOKEN_BOUND = DEFAULT_SETTINGS.schedule.token_bound
#: Larger token ranges make every exact number grow like ``B^2``: refuse absurd
#: ones (the limit is ``Limits.token_bound``, exactlearn/limits.py).
MAX_TOKEN_BOUND = DEFAULT_LIMITS.token_bound
#: Said in the report of every lean run without verification.
LEAN_NOTE = ("lean schedule: no redundancy; a single wrong answer can give a different model that "
             "agrees with every answer. Check on fresh queries with verify=N (--verify N), or use the "
             "paper schedule")
#: Lean schedule: pre-query draws of one later configuration before the fallback (:mod:`exactlearn.settings`).
MAX_PREDICTION_DRAWS = DEFAULT_SETTINGS.schedule.prediction_draws
STRICT_PREDICTION_DRAWS = DEFAULT_SETTINGS.schedule.strict_prediction_draws
#: A redraw re-checks the single tokens once they grew by this factor (:mod:`exactlearn.settings`).
LINEAR_CHECK_GROWTH = DEFAULT_SETTINGS.schedule.linear_check_growth
#: Failures in a row of one link before configuration ``j - 1`` is drawn again (:mod:`exactlearn.settings`).
STUCK_LINK_FAILURES = DEFAULT_SETTINGS.schedule.stuck_link_failures

#: Builds a run's chain from ``(d, n_full, sampler)`` (and ``affine=True`` for affine attention):
#: :class:`~exactlearn.chain.TokenChain` (random vectors), or a guided chain on the approximate path
#: (:func:`exactlearn.approx.guide.guided_chain`).
ChainFactory = Callable[..., TokenChain]


class _Restart(Exception):
    """Inconsistent answers while the head count may be underestimated (bound mode)."""


class _LeanFallback(Exception):
    """Lean schedule: residues cannot label the later configurations; match them by queries."""

    def __init__(self, reason: LeanFallback, detail: str = ""):
        super().__init__(f"{reason.value}{detail}")
        self.reason = reason


class StuckLinks:
    """The failures in a row of each link's matching configuration, and which configuration a failed
    link draws again (:meth:`redrawn`)."""

    def __init__(self, limit: int, notes: list[str]):
        self.limit, self.notes = limit, notes  # (the run's notes: a redraw of j - 1 is noted there)
        self.failures: dict[int, int] = {}  # link j -> failures in a row

    def clear(self) -> None:
        self.failures.clear()

    def passed(self, j: int) -> None:
        """Link ``j`` succeeded: its failures no longer run."""
        self.failures.pop(j, None)

    def redrawn(self, j: int, reason: RedrawReason, members: range) -> int:
        """The configuration failed link ``j`` draws again: ``j``, or ``j - 1`` once its matching
        configuration had too few poles ``limit`` times in a row and ``j - 1`` is one of the ``members``
        being settled (measured and linked again there), not the first configuration."""
        if reason is not RedrawReason.MATCHING_TOO_FEW_POLES or j - 1 < max(1, members.start):
            self.failures.pop(j, None)
            return j
        failures = self.failures.get(j, 0) + 1
        self.failures[j] = failures % self.limit
        if failures < self.limit:
            return j
        self.notes.append(f"link {j}: its matching configuration had too few poles {failures} times in a "
                          f"row; configuration {j - 1} drawn again")
        return j - 1


class MeasuredRun:
    """The oracle side of a schedule run: ask, measure, count, redraw, refuse.

    The oracle is asked through a :class:`~exactlearn.counter.QueryCounter`
    (``counter``), which holds the counts (``queries``, ``max_length``,
    ``redraws``, the time spent in the oracle); the run adds ``redraw_reasons``
    and the configurations (a :class:`~exactlearn.chain.TokenChain`, ``chain``;
    ``configs``, ``links`` and ``history`` are its lists). :class:`ScheduleRun`
    adds the schedule.
    """

    def __init__(self, counter: QueryCounter, d: int, heads: int, bound: bool, field: Field,
                 rng: random.Random, *, schedule: Schedule = Schedule.PAPER,
                 token_bound: int = DEFAULT_TOKEN_BOUND, max_redraws: int | None = None,
                 progress: Callable[[int, int], None] | None = None, chain: ChainFactory = TokenChain,
                 limits: Limits = DEFAULT_LIMITS, affine: bool = False):
        self.counter, self.d, self.field = counter, d, field
        self.limits = limits
        self._announced_bits = 0  # answers above this size announce their cost (limits.announce_answers)
        self.H = heads  # the schedule's H (known H, or the bound H0)
        self.bound = bound
        self.schedule = schedule
        self.affine = affine  # scores x_i^T W_h x_N + w_h^T x_i, offset c0 (docs/algorithm.md section 9)
        n = configuration_count(d, affine=affine)
        self.max_redraws = 2 * n + 10 if max_redraws is None else max_redraws
        self.progress = progress
        self.planned = schedule.query_count(d, heads, affine=affine, outputs=field.outputs)
        self.redraw_reasons: list[str] = []  # Redraw entries: the text and its RedrawReason
        sampler = TokenSampler(d, token_bound, rng)
        # vector answers label heads by residues: only the first d configurations are chained
        n_full = n if schedule is Schedule.PAPER and not field.residues_label_heads else d
        self.chain = chain(d, n_full, sampler, affine=True) if affine else chain(d, n_full, sampler)
        self.H_seen = heads if not bound else 0
        self.max_count_seen = 0
        self.u: list | None = None  # known once the values are learned (lean schedule)
        self.c0: Any = None  # affine: the output offset c0, known with u
        self.fallback = False  # lean schedule fell back: later configurations are matched by queries too
        self.fallback_reason: LeanFallback | None = None
        self.notes: list[str] = []  # for the report besides redraws: lean pre-query draws, fallback
        self.result: list[tuple[Any, tuple]] = []  # [(W_h, v_h)] once the run is done
        self.extra_samples = 0  # vector answers: copy counts added to fits the samples did not determine
        self.linearity = LinearityGate(LINEAR_CHECK_GROWTH)  # when redraws re-check the single tokens
        self.link_failures = StuckLinks(STUCK_LINK_FAILURES, self.notes)  # what a failed link redraws

    @property
    def queries(self) -> int:
        return self.counter.queries

    @property
    def max_length(self) -> int:
        return self.counter.max_length

    @property
    def redraws(self) -> int:
        return self.counter.redraws

    @property
    def configs(self) -> list[Configuration]:
        return self.chain.configs

    @property
    def links(self) -> dict[int, Configuration]:
        return self.chain.links

    @property
    def history(self) -> list[Configuration]:
        return self.chain.history

    # -- measuring ------------------------------------------------------------
    def ask(self, tokens: list[Token]) -> Any:
        """The oracle's answer to ``tokens`` as a field element, counted (a list of its own: the oracle
        may keep or change it); an answer larger than the run affords is refused before any arithmetic."""
        return self.counter.ask(tokens, self._element)

    def _element(self, raw: Any) -> Any:
        value = self.field.element(raw)
        bits = self.field.size_bits(value)
        if bits is not None:
            why = answer_too_large(bits, self.counter.queries, self.d, self.H, self.limits)
            if why is not None:
                raise OracleOutputError(why)
            self._announced_bits = announce_answers(bits, self.d, self.H, self._announced_bits)
        return value

    def _query(self, cfg: Configuration, where: str,
               link: tuple[LinkKind, Configuration, Configuration] | None = None) -> Any:
        """Ask ``cfg``'s queries and read off its terms (no valid copy function: inconsistent answers).

        ``link = (kind, prev, cur)`` for a matching configuration: the field may predict its
        terms and pairing from the linked configurations' and check them
        (:meth:`~exactlearn.field.Field.link_terms`); returned (``None``: the copy
        function was reconstructed, ``cfg.fit``).
        """
        x, z = cfg.x, cfg.z
        cfg.values = [self.ask(self.field.copies(x, z, k)) for k in cfg.points]  # copies_query(x, z, k)
        while True:
            try:
                predicted = self._terms(cfg, link)
                break
            except UndeterminedFitError as exc:  # vector answers: one more copy count, up to the scalar's
                last, cap = cfg.points[-1], 2 * self.H - (1 if cfg.at_zero is not None else 0)
                if last >= cap:
                    raise InconsistentAnswersError(f"{where}: {exc}. {self._no_attention()}") from None
                cfg.points.append(last + 1)
                cfg.values.append(self.ask(self.field.copies(x, z, last + 1)))
                self.extra_samples += 1
            except ReconstructionError as exc:
                # a genuine attention with at most H heads always gives a type-(H, H)
                # copy function with rational, simple, negative poles: this is never degeneracy
                raise InconsistentAnswersError(f"{where}: {exc}. {self._no_attention()}") from None
        self.max_count_seen = max(self.max_count_seen, len(cfg.terms))
        if self.progress is not None:
            self.progress(self.queries, self.planned)
        return predicted

    def _terms(self, cfg: Configuration, link: tuple | None) -> Any:
        """Read ``cfg``'s terms off its samples: predicted through its link, else fitted (``cfg.fit``)."""
        known = dict(at_zero=cfg.at_zero, at_infinity=cfg.at_infinity)
        predicted = None
        if link is not None:
            kind, prev, cur = link
            predicted = self.field.link_terms(kind, prev.terms, cur.terms, cfg.points, cfg.values, self.H,
                                              **known)
        if predicted is not None:
            cfg.terms = predicted.terms
        else:
            cfg.fit = self.field.copy_terms(cfg.points, cfg.values, self.H, **known)
            cfg.terms = cfg.fit.terms
        return predicted

    def measure(self, j: int) -> None:
        """Query configuration ``j``: ``k = 0..2H``, or ``k = 1..2H-1`` once ``u`` is known (vector answers:
        ``k = 0..H+1``, and ``1..H`` with ``u`` known in the lean schedule; docs/algorithm.md section 10)."""
        cfg = self.configs[j]
        if self.u is None or (self.schedule is Schedule.PAPER and self.field.residues_label_heads):
            cfg.points = self.field.measurement_points(self.H)
            cfg.at_zero, cfg.at_infinity = None, None
        else:
            cfg.points = self.field.matching_points(self.H)
            cfg.at_zero = self.single_token_value(cfg.x, self.u)
            cfg.at_infinity = self.single_token_value(cfg.z, self.u)
        self._query(cfg, f"configuration {j}")
        cfg.status = Status.MEASURED

    def single_token_value(self, token: Token, u: list) -> Any:
        """``f([token]) = u^T token`` (``+ c0`` for affine attention)."""
        value = self.field.dot(token, u)
        return value if self.c0 is None else self.c0 + value

    def pole_ratios(self, H: int) -> list[list[Any]]:
        """Per head, the ``rho`` of its pole in every configuration: the right-hand sides of the weight solve.

        Affine attention: ``d + 1`` more rows fix the last row of ``[[W, w], [0, 0]]`` (``rho = 1``;
        docs/algorithm.md section 9), an exact 1 of the field (a ball field's ``zero()`` carries the
        answers' radius, its ``dot`` starts exact).
        """
        fixed = [self.field.dot((1,), (1,))] * (self.d + 1) if self.affine else []
        return [[c.term_of(h)[0] for c in self.configs] + fixed for h in range(H)]

    def offset(self, u: list) -> Any:
        """Affine attention: ``c0 = R_0(0) - u^T x_0`` (``f([x]) = c0 + u^T x``; every other configuration's
        ``R(oo)`` checks it)."""
        return self.configs[0].value_at_zero - self.field.dot(self.configs[0].x, u)

    def redraw(self, j: int, reason: RedrawReason, detail: str) -> None:
        """Replace configuration ``j`` after a degenerate outcome (counted)."""
        self.counter.redraws += 1
        self.redraw_reasons.append(Redraw(f"configuration {j}: {detail}", reason, detail))
        self._refuse_nonlinear(detail, last=self.redraws > self.max_redraws)
        if self.redraws > self.max_redraws:
            hint = ""
            if not self.bound and self.max_count_seen < self.H:
                hint = (
                    f" No configuration showed more than {self.max_count_seen} of the H = {self.H} heads: "
                    f"the model may have fewer canonical heads (pass heads_bound={self.H} instead of heads)."
                )
            raise self._budget_error(
                f"more than {self.max_redraws} degenerate configurations were redrawn "
                f"({self.queries} queries spent); last: {detail}.{hint} Structured weights "
                f"(e.g. entries that are all powers of one prime) make integer draws degenerate often: "
                f"try a larger token_bound"
                + ("" if not self.bound else f", or check that the bound H0 = {self.H} is not too small")
            )
        self.chain.redraw(j)

    def restart(self, reason: str) -> None:
        """Start again from fresh configurations (one counted redraw)."""
        self.counter.redraws += 1
        self.redraw_reasons.append(Redraw(f"restart: {reason}", RedrawReason.RESTART))
        self.chain.drop_all()
        self.link_failures.clear()
        self.u, self.fallback, self.fallback_reason = None, False, None
        self.c0 = None
        self._refuse_nonlinear(reason, last=self.redraws > self.max_redraws)
        if self.redraws > self.max_redraws:
            raise self._budget_error(
                f"more than {self.max_redraws} degenerate configurations were redrawn "
                f"({self.queries} queries spent); last: {reason}. Either the draws keep being degenerate "
                f"(try a larger token_bound) "
                f"or the bound H0 = {self.H} is too small"
            )
        self.chain.draw()

    def _budget_error(self, message: str) -> RedrawBudgetExceeded:
        return RedrawBudgetExceeded(message, reasons=self.redraw_reasons).with_counts(self.counter.counts())

    def _refuse_nonlinear(self, reason: str, *, last: bool = False) -> None:
        """Before blaming the draws: answers that fit no attention at all are inconsistent, not degenerate.

        Sound for any ``H``: every multi-head attention answers a single token
        with ``f([x]) = u^T x``. Checked at a redraw once the answered single
        tokens have grown by ``LINEAR_CHECK_GROWTH`` since the last conclusive
        check, and at the ``last`` redraw the budget allows: a non-attention
        (e.g. a constant nonzero oracle) is refused soon after ``d + 1``
        configurations with independent ``x`` are answered, not after the whole
        redraw budget, and a long run does not re-solve every single token at
        every redraw.
        """
        linearity = self.linearity.check(self.field, self.d, self.chain.answered(), affine=self.affine,
                                         last=last)
        if linearity is Linearity.NOT_LINEAR:
            raise InconsistentAnswersError(f"{reason}; {_not_linear(self.affine)}")

    def _no_attention(self) -> str:
        what = "affine multi-head attention" if self.affine else "multi-head attention"
        return (f"No {what} with at most {self.H} heads answers like this"
                + (" (is the bound H0 too small?)" if self.bound else " (is H too small?)"))

    def _inconsistent(self, message: str) -> None:
        """Report answers that fit no model with the configurations' head count.

        With a known ``H`` (or a bound reached, ``H_seen == H0``) every configuration
        used shows exactly that many poles, so its terms are the true heads and an
        inconsistency is genuine: raise. With a bound and ``H_seen < H0`` every
        measured configuration may have been degenerate alike (the count is only a
        lower bound on ``H``), so the run restarts from fresh draws (counted),
        unless the single-token answers already rule out every attention.
        """
        if self.bound and self.H_seen < self.H:
            if not single_tokens_linear(self.field, self.d, self.chain.answered(), affine=self.affine):
                raise InconsistentAnswersError(f"{message}; moreover {_not_linear(self.affine)}")
            raise _Restart(message)
        raise InconsistentAnswersError(f"{message}. {self._no_attention()}")


def _not_linear(affine: bool) -> str:
    """Why answers whose single-token part is not linear (affine) in ``x`` fit no attention."""
    kind, what = ("affine", "affine multi-head attention") if affine else ("linear", "multi-head attention")
    return (f"the single-token answers f([x]) are not {kind} in x, which they are for every {what}: the "
            f"oracle is not {'an' if affine else 'a'} {what}")


class ScheduleRun(MeasuredRun):
    """One run of the schedule over a field: measure, link, settle, solve. Use :func:`run_schedule`."""

    # -- linking --------------------------------------------------------------
    def link(self, j: int) -> tuple[LinkOutcome, RedrawReason | None, str]:
        """Match the heads of configurations ``j - 1`` and ``j``: ``(outcome, reason, detail)``."""
        prev, cur = self.configs[j - 1], self.configs[j]
        kind = self.chain.link_kind(j)
        cfg = _matching_configuration(kind, prev, cur, self.field.matching_points(self.H))
        predicted = self._query(cfg, f"matching configuration ({j - 1} ~ {j})", (kind, prev, cur))
        count = len(cfg.terms)
        if count != self.H_seen:
            self.history.append(cfg)
        if count > self.H_seen:
            # only possible with a bound: every measurement so far was degenerate alike
            self.H_seen = count
            return LinkOutcome.RECOUNT, None, f"a matching configuration showed {counted(count, 'pole')}"
        if count < self.H_seen:
            return (LinkOutcome.REDRAW, RedrawReason.MATCHING_TOO_FEW_POLES,
                    f"its matching configuration has {counted(count, 'pole')}, fewer than {self.H_seen}")
        # a predicted link's pairing is the only one (exactlearn.fastlink)
        found = ([predicted.pairing] if predicted is not None
                 else link_matchings(self.field, kind, prev.terms, cur.terms, cfg.terms, limit=2))
        if len(found) != 1:
            self.history.append(cfg)
        if not found:
            self._inconsistent(
                f"the heads of configurations {j - 1} and {j} cannot be paired: the poles of their matching "
                f"configuration are not the products rho * rho' with the residues "
                + ("c + c'" if kind is LinkKind.X else "c = c'")
            )
        if len(found) > 1:
            return LinkOutcome.REDRAW, RedrawReason.AMBIGUOUS_PAIRING, RedrawReason.AMBIGUOUS_PAIRING.value
        sigma, tau = found[0]
        assert prev.labels is not None  # a configuration is labelled before its successor is linked
        cur.labels = [sigma[i] for i in prev.labels]
        cfg.labels = [tau[i] for i in prev.labels]
        cfg.status = Status.USED
        self.links[j] = cfg
        return LinkOutcome.OK, None, ""

    # -- settling -------------------------------------------------------------
    def settle(self, members: range) -> None:
        """Measure ``members`` and match their links until nothing is degenerate."""
        while True:
            for j in members:
                if self.configs[j].status is Status.PENDING:
                    self.measure(j)
            counts = [len(self.configs[j].terms) for j in members]
            if self.bound:
                if self.u is not None and max(counts) > self.H_seen:
                    learned = f"{counted(self.H_seen, 'head')} {'was' if self.H_seen == 1 else 'were'}"
                    raise _Restart(f"a configuration shows {counted(max(counts), 'pole')}, "
                                   f"but {learned} learned")
                self.H_seen = max([self.H_seen] + counts)
            bad = [j for j in members if len(self.configs[j].terms) < self.H_seen]
            for j in bad:
                if self.configs[j].status is not Status.PENDING:
                    self.redraw(j, RedrawReason.TOO_FEW_POLES,
                                f"{counted(len(self.configs[j].terms), 'pole')}, "
                                f"fewer than the {counted(self.H_seen, 'head')}")
            if bad:
                continue
            if members.start == 0:
                self.configs[0].labels = list(range(len(self.configs[0].terms)))
            if self._link_all(members):
                return

    def _link_all(self, members: range) -> bool:
        """Link every unlinked member to its predecessor; ``False`` if the chain changed."""
        for j in members:
            if j == 0 or j >= self.chain.n_chained or j in self.links:
                continue
            outcome, reason, detail = self.link(j)
            if outcome is LinkOutcome.OK:
                self.link_failures.passed(j)
                continue
            if reason is not None:  # REDRAW (link() names the reason of every redraw; RECOUNT has none)
                self.redraw(self.link_failures.redrawn(j, reason, members), reason, detail)
            return False
        return True

    # -- solving --------------------------------------------------------------
    def solve_values(self, upto: int) -> list[tuple]:
        """``v_h`` from the residues of configurations ``0..upto-1`` (docs/algorithm.md section 3)."""
        if self.H_seen == 0:
            return []
        rows = [value_row(c.x, c.z) for c in self.configs[:upto]]
        residues = [[self.configs[j].term_of(h)[1] for j in range(upto)]
                    for h in range(self.H_seen)]
        try:
            return self.field.solve_values(rows, residues)
        except ReconstructionError as exc:
            self._inconsistent(str(exc))
            raise  # pragma: no cover - _inconsistent always raises

    def measure_by_prediction(self, values: list[tuple]) -> None:
        """Lean schedule: measure the later configurations, whose R(0), R(oo) and residues are known,
        and label their heads by the predicted residues (no matching query)."""
        for j in range(self.chain.n_full, self.chain.n_configs):
            draws = 0
            while True:
                cfg = self.configs[j]
                row = value_row(cfg.x, cfg.z)
                expected = [self.field.dot(row, v) for v in values]
                if not _predictable(self.field, expected, draws):
                    # known before querying: draw again (no query spent, not a redraw), counted and bounded
                    draws += 1
                    if draws > MAX_PREDICTION_DRAWS:
                        raise _LeanFallback(LeanFallback.PREDICTION_DRAWS,
                                            f" ({MAX_PREDICTION_DRAWS} draws of configuration {j} in a row)")
                    self.chain.redraw(j)
                    continue
                if draws:
                    self.notes.append(f"configuration {j}: drawn {draws} more time(s) before querying "
                                      f"(predicted residues collided or vanished; no query spent)")
                self.measure(j)
                count = len(cfg.terms)
                if count > self.H_seen:  # only with a bound: every measured configuration was degenerate
                    raise _Restart(f"configuration {j} shows {counted(count, 'pole')}, but only "
                                   f"{counted(self.H_seen, 'head')} {'was' if self.H_seen == 1 else 'were'} "
                                   f"learned")
                if count < self.H_seen:
                    self.redraw(j, RedrawReason.TOO_FEW_POLES,
                                f"{counted(count, 'pole')}, fewer than the {counted(self.H_seen, 'head')}")
                    continue
                if self._label_by_residues(j, cfg, expected):
                    break
                self.redraw(j, RedrawReason.AMBIGUOUS_PAIRING, "a residue could be more than one head's "
                            "predicted v_h^T (x - z)")

    def _label_by_residues(self, j: int, cfg: Configuration, expected: list) -> bool:
        """Label ``cfg``'s heads by their residues (:func:`~exactlearn.matching.residue_labels`); ``False``
        when a residue could be more than one head's (balls; exact residues never are)."""
        try:
            cfg.labels = residue_labels(self.field, [c for _, c in cfg.terms], expected)
        except ReconstructionError:
            self._inconsistent(f"configuration {j}: the residues found are not the residues v_h^T (x - z) "
                               f"predicted from the learned values")
            raise  # pragma: no cover - _inconsistent always raises
        if cfg.labels is None:
            return False
        cfg.status = Status.USED
        return True

    def solve_and_check(self, values: list[tuple]) -> list[tuple[Any, tuple]]:
        """``W_h`` from the poles; every answer of the run must agree with the result."""
        d, H = self.d, self.H_seen
        design = self.chain.weight_design  # checked before querying: these configurations' design
        assert design is not None  # every configuration was drawn through a passing pre-query check
        try:
            weights = self.field.solve_weights(design, self.pole_ratios(H)) if H else []
        except ReconstructionError as exc:  # exp(W) outside the field (a number field's)
            self._inconsistent(str(exc))
            raise  # pragma: no cover - _inconsistent always raises
        u = vector_sum(self.field, values, d)
        if self.affine:
            self.c0 = self.offset(u)
        # u^T z_j (+ c0) = R_j(oo) on every configuration whose R(oo) was read off its own samples
        for j, c in enumerate(self.configs):
            if c.at_infinity is None and not self.field.equal(self.single_token_value(c.z, u),
                                                             c.value_at_infinity, Why.CONSISTENT):
                self._inconsistent(f"configuration {j}: R(oo) differs from u^T z with u = sum_h v_h"
                                   + (" (+ c0 = R_0(0) - u^T x_0)" if self.affine else ""))
        # the answers of configurations that were dropped must agree with the result too
        for c in self.history:
            if c.values and not predicts(self.field, weights, values, u, c, c0=self.c0):
                self._inconsistent(
                    f"the learned heads contradict the oracle's answers on the dropped configuration "
                    f"x = {c.x}, z = {c.z}"
                )
        return list(zip(weights, values))

    def run(self) -> list[tuple[Any, tuple]]:
        """Draw, settle, solve; restart (counted) when a bound turns out to be underestimated."""
        self.chain.draw()
        while True:
            try:
                self.settle(range(self.chain.n_full))
                values = self.solve_values(self.chain.n_full)
                if self.chain.n_full < self.chain.n_configs:
                    self._lean_rest(values)
                    if self.field.least_squares_values:  # inexact answers: every residue counts
                        values = self.solve_values(self.chain.n_configs)
                return self.solve_and_check(values)
            except _Restart as exc:
                self.restart(str(exc))

    def _lean_rest(self, values: list[tuple]) -> None:
        """Lean schedule: the configurations after the first ``d``, once the values are known."""
        self.u = vector_sum(self.field, values, self.d)
        if self.affine:
            self.c0 = self.offset(self.u)
        try:
            if not distinct_vectors(self.field, values):
                # two heads with the same v: residues cannot tell them apart in any configuration
                raise _LeanFallback(LeanFallback.SHARED_VALUES)
            self.measure_by_prediction(values)
        except _LeanFallback as exc:
            self._fall_back(exc)

    def _fall_back(self, exc: _LeanFallback) -> None:
        """Lean schedule: match configurations ``n_full..`` by queries, like the paper's (reported)."""
        self.notes.append(f"lean fallback to matching queries: {exc}")
        for c in self.configs[self.chain.n_full:]:
            if c.values:
                self.chain.drop(c)  # measured before the fallback: kept for the final checks
        self.fallback, self.fallback_reason = True, exc.reason
        self.chain.n_chained = self.chain.n_configs  # (links from n_full on were never tried: none failed)
        self.planned = self.schedule.query_count(self.d, self.H, fallback=True, affine=self.affine,
                                                 outputs=self.field.outputs)
        self.chain.draw(self.chain.n_full)
        self.settle(range(self.chain.n_full, self.chain.n_configs))


def _predictable(field: Field, expected: list, draws: int) -> bool:
    """Are the predicted residues nonzero and distinct? On the field's own elements for the first
    ``STRICT_PREDICTION_DRAWS`` draws of a configuration, then on its labelling elements
    (:meth:`~exactlearn.field.Field.for_labels`: balls of the answers' observed error)."""
    zero = field.element(0)
    if draws >= STRICT_PREDICTION_DRAWS:
        expected, zero = [field.for_labels(c) for c in expected], field.for_labels(zero)
    return not any(field.equal(c, zero, Why.DISTINCT) for c in expected) and distinct(field, expected)


def _matching_configuration(kind: LinkKind, prev: Configuration, cur: Configuration,
                            points: list[int]) -> Configuration:
    """The matching configuration of a link, with ``R(0) = u^T x_C`` and ``R(oo) = u^T z_C`` by linearity."""
    tokens = linked_tokens(kind, (prev.x, prev.z), (cur.x, cur.z))
    cfg = Configuration(ConfigKind.MATCHING, *tokens, link=kind)
    if kind is LinkKind.X:
        cfg.at_zero = cur.value_at_zero
        cfg.at_infinity = prev.value_at_infinity + cur.value_at_infinity - cur.value_at_zero
    elif kind is LinkKind.REFLECT:  # x_C = 2 x_prev - x_cur, z_C = x_C + a: f([x]) is affine in x
        cfg.at_zero = prev.value_at_zero * 2 - cur.value_at_zero
        cfg.at_infinity = cfg.at_zero + cur.value_at_infinity - cur.value_at_zero
    else:
        cfg.at_zero = prev.value_at_zero + cur.value_at_zero
        cfg.at_infinity = prev.value_at_infinity + cur.value_at_zero
    cfg.points = points
    return cfg


def run_schedule(
    oracle: Callable[[list[Token]], Any],
    d: int,
    heads: int,
    *,
    bound: bool = False,
    field: Field | None = None,
    seed: Any = 0,
    schedule: Schedule | str = Schedule.PAPER,
    token_bound: int = DEFAULT_TOKEN_BOUND,
    max_redraws: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    chain: ChainFactory = TokenChain,
    limits: Limits = DEFAULT_LIMITS,
    affine: bool = False,
) -> ScheduleRun:
    """Run the schedule over ``field`` and return the finished :class:`ScheduleRun`.

    ``oracle`` is asked through a :class:`~exactlearn.counter.QueryCounter` (it may
    be one already: its counts are the run's); ``run.result`` holds
    ``[(W_h, v_h)]`` in the field's representation. An error carries the run's
    counts (docs/algorithm.md section 6: a run reports its queries). ``affine``:
    the schedule of affine attention (docs/algorithm.md section 9); ``W_h`` is
    then the ``(d + 1) x (d + 1)`` matrix ``[[W_h, w_h], [0, 0]]`` and ``run.c0``
    the output offset.
    """
    counter = oracle if isinstance(oracle, QueryCounter) else QueryCounter(oracle)
    run = ScheduleRun(
        counter, d, heads, bound, field or ExactRationals(), random.Random(f"exactlearn.learn:{seed}"),
        schedule=as_schedule(schedule), token_bound=token_bound, max_redraws=max_redraws,
        progress=progress, chain=chain, limits=limits, affine=affine,
    )
    try:
        run.result = run.run()
    except ExactLearnError as exc:
        exc.with_counts(counter.counts())
        raise
    return run


def learn(oracle: Callable[[list[Token]], Any], d: int, *, heads: int | None = None,
          heads_bound: int | None = None, seed: Any = 0, schedule: Schedule | str = Schedule.PAPER,
          verify: int = 0,
          token_bound: int = DEFAULT_TOKEN_BOUND,
          max_redraws: int | None = None, progress: Callable[[int, int], None] | None = None,
          max_queries: int | None = None, limits: Limits = DEFAULT_LIMITS,
          field: NumberField | None = None, affine: bool | None = None) -> Recovery:
    """Learn a multi-head attention exactly from black-box queries.

    * ``oracle`` -- any callable taking a list of integer tuples (each of length
      ``d``) and returning an exact rational (``flint.fmpq``,
      ``fractions.Fraction`` or ``int``), or an element of a
      :class:`~exactlearn.NumberField`; treated as a black box. ``d``: token width.
    * ``heads`` or ``heads_bound`` (exactly one) -- the number ``H`` of canonical
      heads, or an upper bound ``H0 >= H`` (the true ``H`` is found and reported).
    * ``seed`` -- seeds the learner's own random generator (the tokens).
    * ``schedule`` -- ``"paper"`` (``4Hd^2 - 2H + 1`` queries, the default) or
      ``"lean"`` (``d(2H+1) + (d^2-1)(2H-1)``, docs/algorithm.md section 5); a
      :class:`~exactlearn.schedule.Schedule` or its value.
    * ``verify`` -- extra random sequences on which the learned model is compared
      exactly with the oracle (``verification_queries``, not part of ``queries``).
    * ``token_bound`` -- token entries are drawn from ``[-token_bound, token_bound]``.
    * ``max_redraws`` -- budget for degenerate configurations (default ``2 d^2 + 10``).
    * ``progress`` -- optional ``progress(queries_so_far, planned_queries)`` callback.
    * ``max_queries`` -- at most this many oracle calls (verification included);
      one more raises :class:`~exactlearn.QueryBudgetExceeded` with ``queries``,
      ``max_length`` and ``redraws`` so far. A budget below the schedule's
      planned count is refused before the first query.
    * ``limits`` -- maxima on ``d``, the head count, ``token_bound``, the planned
      queries and ``max_redraws``, checked before the first query
      (:class:`~exactlearn.Limits`; lift one with ``limits=Limits(d=48)``).
    * ``field`` -- the :class:`~exactlearn.NumberField` the answers are in
      (default: the oracle's ``field``, else taken from the answers: ``Q`` until
      an answer is an element of a number field; docs/number-fields.md).
    * ``affine`` -- learn affine attention: scores ``x_i^T W_h x_N + w_h^T x_i`` and an
      output offset ``c0`` (biases; docs/algorithm.md section 9), with
      ``4H d(d+1) - 2H + 1`` queries (paper schedule). A model without biases comes
      back with ``w_h = 0`` and ``c0 = 0``. Default ``None``: what the oracle declares
      (``Oracle(model).affine`` is ``model.is_affine``), else ``False``.

    Returns a :class:`~exactlearn.Recovery`: canonical heads (exact), counts
    measured by the learner, redraws, time. Raises a
    :class:`~exactlearn.RecoveryError` when the answers fit no attention with at
    most ``H`` (``H0``) heads (:class:`~exactlearn.InconsistentAnswersError`), the
    redraw budget is spent (:class:`~exactlearn.RedrawBudgetExceeded`) or
    verification fails (:class:`~exactlearn.VerificationError`); an
    :class:`~exactlearn.OracleError` (the original chained as ``__cause__``,
    with the counts so far) when the oracle or the progress callback raised.

    The lean schedule has no redundancy: a single wrong answer can yield a
    different model that agrees with every answer (the paper schedule refuses
    it). Against an oracle that may err, use the paper schedule or ``verify=N``.

    >>> from exactlearn import MultiHeadAttention, Oracle
    >>> oracle = Oracle(MultiHeadAttention.random(2, 2, seed=3))
    >>> rec = learn(oracle, 2, heads=2)
    >>> rec.model.equivalent(oracle.target), rec.queries, rec.formula, oracle.queries
    (True, 29, 29, 29)
    """
    affine = affine_argument(oracle, affine)
    H = _check_arguments(oracle, d, heads, heads_bound, schedule, verify, token_bound, max_redraws,
                         max_queries, limits, affine)
    plan = as_schedule(schedule)
    check_seed(seed)
    start = time.perf_counter()
    counter = QueryCounter(oracle, budget=max_queries)
    run_field = _answer_field(oracle, field, limits, affine)
    options = dict(bound=heads_bound is not None, seed=seed, schedule=plan, token_bound=token_bound,
                   max_redraws=max_redraws, progress=guarded_progress(progress, counter), limits=limits,
                   affine=affine)
    try:
        run = run_schedule(counter, d, H, field=run_field, **options)
    except VectorAnswers as seen:  # undeclared vector answers: start again over Q^D (the answer is counted)
        run = run_schedule(counter, d, H, field=_vector_field(seen.width, affine, field, limits), **options)
        run.notes.append(f"the oracle answered vectors of length {seen.width} without declaring 'outputs': "
                         f"the run started again over them after its first query (counted)")
    heads_out = _recovered_heads(run, affine)
    if all(h.is_rational for h in heads_out):
        heads_out.sort(key=RecoveredHead.key)
    c0 = run.c0 if affine and run.c0 is not None else fmpq(0)
    recovery = Recovery(
        d=d, heads=tuple(heads_out), queries=run.queries, max_length=run.max_length, redraws=run.redraws,
        schedule=plan, heads_known=heads, heads_bound=heads_bound, seed=seed, token_bound=token_bound,
        seconds_oracle=counter.seconds, configurations=run.configs + list(run.links.values()),
        redraw_reasons=run.redraw_reasons, lean_fallback=run.fallback, notes=list(run.notes), affine=affine,
        c0=c0, outputs=run.field.outputs,
    )
    if verify:
        try:
            recovery.verification_queries = _verify(counter, recovery, verify, seed, token_bound, run.field)
        except ExactLearnError as exc:
            exc.with_counts(counter.counts())
            raise
    if plan is Schedule.LEAN:
        recovery.notes.append(LEAN_NOTE if not verify else
                              f"lean schedule: no redundancy; verify={verify} compared the learned "
                              f"model with the oracle on {verify} fresh random sequences: all agreed")
    recovery.seconds_total = time.perf_counter() - start
    return recovery


def _check_arguments(oracle, d, heads, heads_bound, schedule, verify, token_bound, max_redraws,
                     max_queries, limits, affine=False) -> int:
    """Refuse bad arguments (and sizes above ``limits``) of :func:`learn`; returns the schedule's ``H``."""
    if not callable(oracle):
        raise InvalidArgumentError("oracle must be callable (tokens -> exact rational), "
                                   f"got {type(oracle).__name__}")
    integer("d", d)
    if (heads is None) == (heads_bound is None):
        raise InvalidArgumentError("give exactly one of heads (the number H of heads) "
                                   "or heads_bound (an upper bound H0)")
    H = integer("heads" if heads is not None else "heads_bound", heads if heads is not None else heads_bound)
    plan = as_schedule(schedule)
    integer("verify", verify, 0)
    integer("token_bound", token_bound)
    optional_integer("max_redraws", max_redraws, 0)
    planned = check_learn(d, H, token_bound, plan, limits, verify=verify, max_redraws=max_redraws,
                          affine=affine).queries
    budget = optional_integer("max_queries", max_queries, 0)
    if budget is not None and budget < planned:
        raise QueryBudgetExceeded(f"max_queries = {max_queries} is below the {planned} queries "
                                  f"the {schedule} schedule asks at least (d = {d}, H = {H}); "
                                  f"raise max_queries")
    oracle_d = declared(oracle, "d")
    if isinstance(oracle_d, int) and oracle_d != d:
        raise InvalidArgumentError(f"the oracle has token width d = {oracle_d}, but d = {d} was given")
    return H


def _recovered_heads(run: ScheduleRun, affine: bool) -> list[RecoveredHead]:
    """The recovered heads of a finished run (with ``V_h`` for vector answers), with a note on the copy
    counts that vector fits added."""
    if run.field.outputs is None:
        return [RecoveredHead.of(W, tuple(v), affine=affine) for W, v in run.result]
    if run.extra_samples:
        run.notes.append(f"{run.extra_samples} more copy count(s) asked where H + 2 samples did not "
                         f"determine a vector copy function (residue vectors dependent; counted in queries)")
    return [VectorRecoveredHead.of_columns(W, tuple(v)) for W, v in run.result]


def _vector_field(width: Any, affine: bool, field: Any, limits: Limits) -> Field:
    """``Q^D`` for vector answers of length ``width``, refusing what it cannot be combined with."""
    if not isinstance(width, int) or isinstance(width, bool) or width < 1:
        raise InvalidArgumentError(f"the oracle's attribute 'outputs' must be a positive integer, "
                                   f"got {width!r}")
    integer("the oracle's outputs", width, 1, limits.outputs, lift=lift("outputs"))
    if affine or field is not None:
        raise InvalidArgumentError("vector outputs are learned without biases and over the rationals only: "
                                   "affine=True or a number field cannot be combined with them")
    return VectorRationals(width)


def _answer_field(oracle: Any, field: Any, limits: Limits, affine: bool = False) -> Field:
    """The run's field: ``field``, else the oracle's number field, else taken from the answers (over Q
    only, for affine attention); ``Q^D`` for an oracle that declares ``outputs`` (vector answers)."""
    outputs = declared(oracle, "outputs")
    if outputs is not None:
        return _vector_field(outputs, affine, field, limits)
    declared_field = declared(oracle, "field")
    if field is None and isinstance(declared_field, NumberField):
        field = declared_field
    if field is None:
        return ExactRationals() if affine else FieldFromAnswers(limits)
    if not isinstance(field, NumberField):
        raise InvalidArgumentError(f"field must be an exactlearn.NumberField, got {type(field).__name__}")
    if affine:
        raise InvalidArgumentError("affine attention is learned over the rationals only: affine=True "
                                   "cannot be combined with a number field (docs/algorithm.md section 9)")
    return ExactNumberField(field, limits)


def _verify(counter: QueryCounter, recovery: Recovery, n: int, seed: Any, token_bound: int,
            field: Field) -> int:
    """Compare the learned model with the oracle on ``n`` fresh random sequences."""
    if not recovery.is_rational:
        raise VerificationError(
            "the recovered weights are not exp-parametrised rationals, so the learned model cannot be "
            "evaluated exactly on a verification query"
        )
    model = recovery.model if recovery.outputs is None else recovery.vector_model
    rng = random.Random(f"exactlearn.verify:{seed}")
    longest = max(3, max_query_length(recovery.schedule_heads))
    for i in range(n):
        length = rng.randint(1, longest)
        tokens = as_tokens([tuple(rng.randint(-token_bound, token_bound) for _ in range(recovery.d))
                            for _ in range(length)], recovery.d)
        expected = counter.ask(list(tokens), field.element)
        got = model.evaluate(tokens) if recovery.outputs is None else field.element(model.evaluate(tokens))
        if got != expected:
            raise VerificationError(
                f"verification query {i + 1} of {n} (length {length}): the oracle answered "
                f"{expected}, the learned model gives {got}. The learned model is wrong "
                f"(is the bound H0 too small, or the oracle not a multi-head attention?)"
            )
    return n
