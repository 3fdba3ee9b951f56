"""The approximate learner's core: the one schedule of :mod:`exactlearn.learn`, run over real balls.

:func:`learn_over_balls` hands :func:`exactlearn.learn.run_schedule` two things:

* the field :class:`~exactlearn.approx.core.field.RealBalls` (arb balls whose radius
  starts at ``eps``, the declared bound on the oracle's output error);
* the oracle seen through a **query scale** ``s`` (:class:`ScaledQueries`): the
  schedule draws integer tokens ``t`` as always, the oracle receives the real
  tokens ``s * t`` (Python floats, exactly representable). Scores scale by ``s^2``
  and values by ``s``, so the schedule learns ``W' = s^2 W`` and ``v' = s v``, and
  the learner returns ``W = W' / s^2``, ``v = v' / s``.

Why a scale: the sensitivity constant ``C`` (:mod:`exactlearn.approx.bounds`)
depends on how far the poles ``-1/rho`` spread, ``rho = exp(s^2 (z - x)^T W x)``.
Large scores put poles near 0 or far out (ill-conditioned interpolation), small
ones crowd every pole near ``-1`` and divide the error by ``s^2`` on the way
back. :func:`~exactlearn.approx.choose_scale` picks ``s`` minimising ``C``.

Which token vectors the configurations get is a :class:`Guidance`'s decision:
random without one; the guide layer (:mod:`exactlearn.approx.guide`) makes the
guidance of :func:`~exactlearn.approx.learn_approx`'s ``guide=``. Only the
known-``H`` paper schedule runs here (``4Hd^2 - 2H + 1`` queries of length at
most ``2H + 1``): deciding the number of heads from noisy data (an upper bound
``H0``) or predicting residues (the lean schedule) is not offered on the
approximate path.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from flint import fmpq

from ...chain import TokenChain
from ...counter import QueryCounter, declared, guarded_progress
from ...errors import InconsistentAnswersError, InvalidArgumentError, RedrawBudgetExceeded
from ...exact import rational_str
from ...learn import DEFAULT_TOKEN_BOUND, ChainFactory
from ...limits import DEFAULT_LIMITS, Limits, check_learn, lift
from ...schedule import Schedule
from ...settings import DEFAULT_SETTINGS
from ...states import Redraw
from ...validate import counted, integer, optional_integer
from .balls import (
    DEFAULT_PRECISION,
    as_fmpq,
    brief_decimal,
    radius,
    recenter,
    to_arb,
    to_mpf,
    working_precision,
)
from .counts import CopyCounts, query_length, resolve_counts
from .field import RealBalls
from .noise import SingleTokens, digits, eps_diagnosis, scatter
from .recovery import AmbiguousAnswersError, ApproxHead, ApproxRecovery
from .run import run_approx_schedule

__all__ = [
    "learn_over_balls",
    "Guidance",
    "RunSetup",
    "Plan",
    "ScaledQueries",
    "suggested_max_condition",
]


#: The query scales a sketch may move to (:attr:`RunSetup.rescale`): those of ``ApproxSettings.scales``
#: and one step beyond on either side.
_SCALE_RANGE = (min(as_fmpq(v) for v in DEFAULT_SETTINGS.approx.scales) / 2,
                max(as_fmpq(v) for v in DEFAULT_SETTINGS.approx.scales) * 2)


def suggested_max_condition(heads: int) -> int:
    """``10^(2H+1)``: about 100 times the condition of ideally placed poles (docs/approximate.md, "Query
    scale and ill-conditioned configurations"), a ``max_condition`` that keeps ``C`` moderate at the cost
    of redraws.

    >>> suggested_max_condition(2)
    100000
    """
    return 10 ** (2 * heads + 1)


class ScaledQueries:
    """The oracle seen by the schedule: integer tokens ``t`` are sent as floats ``s * t``.

    ``s`` must make every ``s * t`` exactly representable as a float (powers of
    two and other short binary fractions do), so no rounding enters the
    queries; checked for every entry sent.
    """

    def __init__(self, oracle: Callable, scale: fmpq):
        self.oracle = oracle
        self.scale = scale
        self._cache: dict[int, float] = {}
        self.singles = SingleTokens()  # the one-token answers (:mod:`.noise`)

    def rescale(self, scale: fmpq) -> None:
        """Send ``scale * t`` from now on."""
        self.scale = scale
        self._cache.clear()
        self.singles.clear()

    def check(self, token_bound: int) -> None:
        """Refuse, before any query, a scale that makes some ``s * t`` (``|t| <= 2 token_bound``) inexact."""
        for t in range(-2 * token_bound, 2 * token_bound + 1):
            self.real(t)

    def real(self, t: int) -> float:
        out = self._cache.get(t)
        if out is None:
            exact = self.scale * t
            out = float(Fraction(int(exact.p), int(exact.q)))
            if Fraction(out) != Fraction(int(exact.p), int(exact.q)):
                raise InvalidArgumentError(
                    f"the query scale {rational_str(self.scale)} times the token entry {t} is not a float; "
                    f"use a power of two (or another short binary fraction) as scale"
                )
            self._cache[t] = out
        return out

    def __call__(self, tokens: Sequence[Sequence[int]]) -> Any:
        converted: dict[int, tuple[float, ...]] = {}  # by id: S_k repeats one token object k times
        out = []
        for token in tokens:
            real = converted.get(id(token))
            if real is None:
                real = converted[id(token)] = tuple(self.real(t) for t in token)
            out.append(real)
        answer = self.oracle(out)
        self.singles.record(tokens, answer)
        return answer


@dataclass(frozen=True)
class RunSetup:
    """What a :class:`Guidance`'s plan is given: the run's counter (the plan's queries are the run's),
    its sizes, and its notes (a plan adds why it made none)."""

    counter: QueryCounter
    d: int
    heads: int
    seed: Any
    token_bound: int
    scale: float  # the query scale s (tokens are sent as s * t)
    notes: list[str]
    #: the measurement configurations' copy counts (``0..2H`` for the paper's schedule)
    points: tuple[int, ...] = ()
    #: ``rescale(shrink)`` halves (``shrink``) or doubles the query scale and forgets the answers
    #: remembered so far; the new scale, or ``None`` when the run's scale is fixed (``scale=`` given)
    #: or would leave ``ApproxSettings.scales``' range
    rescale: Callable[[bool], float | None] | None = None


@dataclass(frozen=True)
class Plan:
    """How a run draws its configurations, how many of its queries planning asked, and the query scale
    planning settled on (``None``: unchanged)."""

    chain: ChainFactory = TokenChain
    queries: int = 0
    scale: float | None = None


@dataclass(frozen=True)
class Guidance:
    """How a run chooses its configurations; the guide layer makes these (:mod:`exactlearn.approx.guide`).

    ``plan`` is called once before the schedule runs (``None``: random
    configurations); ``remember``: each distinct query is sent once (what planning
    asked serves the run); ``scale``: the query scale when ``scale=`` is not given.
    """

    plan: Callable[[RunSetup], Plan] | None = None
    remember: bool = False
    scale: int | None = None


def _summary(items: Sequence[str]) -> str:
    """``"3 x text; 1 x other"``: the items (a redraw by its detail) by frequency."""
    counts = Counter(item.detail if isinstance(item, Redraw) else item for item in items)
    return "; ".join(f"{n} x {text}" for text, n in counts.most_common())


def learn_over_balls(oracle: Callable[[list[tuple[float, ...]]], Any], d: int, *, heads: int,
                     precision: int = DEFAULT_PRECISION, eps: Any = None, scale: Any = None, seed: Any = 0,
                     token_bound: int = DEFAULT_TOKEN_BOUND, max_redraws: int | None = None,
                     progress: Callable[[int, int], None] | None = None, rigorous: bool = False,
                     max_condition: Any = None, limits: Limits = DEFAULT_LIMITS,
                     guidance: Callable[[int], Guidance] | None = None,
                     copy_counts: Any = CopyCounts.PAPER, affine: bool = False,
                     residue_labels: bool = False) -> ApproxRecovery:
    """:func:`~exactlearn.approx.learn_approx` with the configurations chosen by ``guidance(H)``
    (random without one); the arguments are :func:`~exactlearn.approx.learn_approx`'s, and
    ``residue_labels`` :class:`~exactlearn.approx.core.field.RealBalls`'."""
    H, eps_q, s, max_condition = _check_arguments(oracle, d, heads, precision, eps, scale, token_bound,
                                                  max_redraws, max_condition, limits, affine)
    counts = resolve_counts(copy_counts, d, H, rigorous, float(eps_q.p) / float(eps_q.q))
    _check_lengths(counts, limits)
    chosen = Guidance() if guidance is None else guidance(H)
    if scale is None and chosen.scale is not None:
        s = fmpq(chosen.scale)
    scaled = ScaledQueries(oracle, s)
    scaled.check(token_bound)
    # with remember, each distinct query is sent once (one answer error per query, as the constant C assumes)
    counter = QueryCounter(scaled, remember=chosen.remember)
    start = time.perf_counter()
    field_ = RealBalls(eps_q, rigorous=rigorous, max_condition=max_condition, copy_counts=counts,
                       residue_labels=residue_labels)
    current = [s]

    def rescale(shrink: bool) -> float | None:
        new = current[0] / 2 if shrink else current[0] * 2
        if scale is not None or not _SCALE_RANGE[0] <= new <= _SCALE_RANGE[1]:
            return None
        current[0] = new
        scaled.rescale(new)
        if counter.answers is not None:
            counter.answers.clear()  # answers at the old scale are other queries
        field_.notes.append(f"the sketch changed the query scale to {rational_str(new)}")
        return float(new.p) / float(new.q)

    with working_precision(precision):
        plan = Plan() if chosen.plan is None else chosen.plan(
            RunSetup(counter, d, H, seed, token_bound, float(s.p) / float(s.q), field_.notes,
                     tuple(field_.measurement_points(H)), rescale))
        s = current[0]
        try:
            run = run_approx_schedule(counter, d, H, field=field_, seed=seed, token_bound=token_bound,
                                      max_redraws=max_redraws, progress=guarded_progress(progress, counter),
                                      chain=plan.chain, affine=affine)
        except RedrawBudgetExceeded as exc:
            raise _refusal(exc, H, eps_q, field_.notes, _noise(scaled, d, eps_q, affine)).with_counts(
                counter.counts()) from None
        except InconsistentAnswersError as exc:
            raise _inconsistent(exc, H, eps_q, scaled, d, affine).with_counts(counter.counts()) from None
        out = _real_heads(run.result, s, affine)
        offset = {} if not affine else {"affine": True, "c0": to_mpf(run.c0), "c0_radius": radius(run.c0)}
    return ApproxRecovery(
        d=d, heads=tuple(out), queries=counter.queries, max_length=counter.max_length, redraws=run.redraws,
        eps=eps_q, precision=precision, scale=s, seed=seed, token_bound=token_bound, rigorous=rigorous,
        seconds_total=time.perf_counter() - start, seconds_oracle=counter.seconds,
        configurations=list(run.configs), links=dict(run.links),
        redraw_reasons=list(run.redraw_reasons), notes=list(field_.notes) + run.notes,
        sketch_queries=plan.queries,
        copy_counts=counts, chained=run.chain.n_chained, **offset,
    )


def _check_lengths(counts: Sequence[Any] | None, limits: Limits) -> None:
    """Refuse, before the first query, copy counts (or ratios ``k/m``: ``k + m`` tokens) whose queries are
    longer than ``limits.query_length``."""
    longest = max((query_length(t) for t in counts), default=0) if counts else 0
    if longest > limits.query_length:
        raise InvalidArgumentError(f"copy_counts ask a query of {longest} tokens, above the limit of "
                                   f"{limits.query_length} tokens per query; {lift('query_length')}")


def _check_arguments(oracle, d, heads, precision, eps, scale, token_bound, max_redraws, max_condition,
                     limits, affine=False) -> tuple[int, fmpq, fmpq, Any]:
    """Refuse bad arguments of :func:`learn_approx`; returns ``(H, eps, scale)`` (exact) and
    ``max_condition`` (an ``mpf`` or ``None``)."""
    if not callable(oracle):
        raise InvalidArgumentError("oracle must be callable (tokens -> real number), "
                                   f"got {type(oracle).__name__}")
    integer("d", d)
    H = integer("heads", heads)
    integer("precision", precision, 16)
    integer("token_bound", token_bound)
    optional_integer("max_redraws", max_redraws, 0)
    # the limits of the exact schedule apply; its time estimate does not (float fits, guides, retries)
    check_learn(d, H, token_bound, Schedule.PAPER, limits, max_redraws=max_redraws, affine=affine,
                announce_slow=False)
    oracle_d = declared(oracle, "d")
    if isinstance(oracle_d, int) and oracle_d != d:
        raise InvalidArgumentError(f"the oracle has token width d = {oracle_d}, but d = {d} was given")
    if eps is None:
        eps = declared(oracle, "eps")
        if eps is None:
            raise InvalidArgumentError(
                "give eps, a bound on the oracle's output error (this oracle declares none); "
                "for float64 black boxes with outputs of size ~1, eps = 1e-12 is a cautious choice"
            )
    eps_q = as_fmpq(eps, "eps")
    if eps_q < 0:
        raise InvalidArgumentError(f"eps must be >= 0, got {rational_str(eps_q)}")
    if max_condition is not None:
        limit = as_fmpq(max_condition, "max_condition")
        if limit <= 0:
            raise InvalidArgumentError("max_condition must be a positive number or None, "
                                       f"got {rational_str(limit)}")
        max_condition = to_mpf(limit)
    s = as_fmpq(1 if scale is None else scale, "scale")
    if s <= 0:
        raise InvalidArgumentError(f"scale must be positive, got {rational_str(s)}")
    return H, eps_q, s, max_condition


def _inconsistent(exc: InconsistentAnswersError, H: int, eps_q: fmpq, scaled: ScaledQueries, d: int,
                  affine: bool) -> InconsistentAnswersError:
    """The refusal of inconsistent answers: first of all, when the single-token answers prove it, that
    ``eps`` is below the answers' error (not the oracle's form or ``H``)."""
    noise = eps_diagnosis(scaled.singles, d, float(eps_q.p) / float(eps_q.q), affine)
    if noise:
        return InconsistentAnswersError(f"{noise[0].upper()}{noise[1:]}. (The learner found: {exc}.)")
    return InconsistentAnswersError(
        f"{exc}. The answers were taken to be within eps = {brief_decimal(eps_q)} of the outputs of an "
        f"attention with {counted(H, 'head')}; if eps underestimates the oracle's error, increase it")


def _noise(scaled: ScaledQueries, d: int, eps_q: fmpq, affine: bool = False) -> str:
    """:func:`~exactlearn.approx.core.noise.eps_diagnosis` of the run's single-token answers; or, when
    they are within eps, how much they scatter (the answers' own precision, evidence for a refusal)."""
    eps = float(eps_q.p) / float(eps_q.q)
    found = eps_diagnosis(scaled.singles, d, eps, affine)
    rms = scatter(scaled.singles, d, affine)
    if found or rms is None:
        return found
    carried = digits(scaled.singles, d, affine)
    text = (f"the single-token answers scatter by {rms:.1e} (root mean square) around their linear fit, "
            f"within eps = {eps:.1e}")
    if carried is None or carried >= DEFAULT_SETTINGS.approx.precise_digits:
        return text
    return (f"{text}: they carry about {carried:.0f} significant digits (float64 answers carry about 16, "
            f"float32 about 7), and that precision, not the oracle's form or H, is what leaves the heads "
            f"unresolved on this schedule; ask more precise answers (a torch layer: "
            f"torch_attention(..., dtype=torch.float64))")


def _refusal(exc: RedrawBudgetExceeded, H: int, eps_q: fmpq, notes: Sequence[str],
             noise: str = "") -> AmbiguousAnswersError:
    """The refusal when the redraw budget ran out: every reason, what was not certified, what to try
    (first of all, when the single-token answers prove it, that eps is below the answers' error)."""
    reasons = exc.reasons
    return AmbiguousAnswersError(
        (f"{noise[0].upper()}{noise[1:]}. Then " if noise else "")
        + f"the answers do not determine the {counted(H, 'head')} within the error bound "
        f"eps = {brief_decimal(eps_q)}: "
        f"{len(reasons)} configurations were redrawn ({exc.queries} queries) and the "
        f"learner refuses to guess. Redraw reasons: {_summary(reasons)}."
        + (f" Not certified: {_summary(notes)}." if notes else "")
        + " Lower the noise, choose a query scale with a smaller sensitivity constant "
        "(exactlearn.approx.choose_scale), or redraw ill-conditioned configurations "
        f"(max_condition=suggested_max_condition({H}) = {suggested_max_condition(H):.0e} with a larger "
        "max_redraws).",
        reasons, notes,
    )


def _real_heads(result, s: fmpq, affine: bool = False) -> list[ApproxHead]:
    """The learned balls of the scaled problem as real heads (``W / s^2``, ``v / s``) with radii.

    ``affine``: each ``W`` is ``[[W', w'], [0, 0]]`` (:func:`exactlearn.learn.run_schedule`), and
    ``w = w' / s`` (the score term ``w^T (s t)`` of a scaled token ``s t``)."""
    s_ball = to_arb(s)
    out = []
    for W, v in result:
        d = len(v)
        s2 = s_ball * s_ball
        W_real = [[recenter(w / s2, w.mid() / s2) for w in row[:d]] for row in W[:d]]
        v_real = [recenter(x / s_ball, x.mid() / s_ball) for x in v]
        w_real = [recenter(row[d] / s_ball, row[d].mid() / s_ball) for row in W[:d]] if affine else None
        out.append(ApproxHead(
            W=[[to_mpf(e) for e in row] for row in W_real],
            v=[to_mpf(e) for e in v_real],
            W_radius=[[radius(e) for e in row] for row in W_real],
            v_radius=[radius(e) for e in v_real],
            w=None if w_real is None else [to_mpf(e) for e in w_real],
            w_radius=None if w_real is None else [radius(e) for e in w_real],
        ))
    return out
