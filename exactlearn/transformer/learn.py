"""The Transformer learner: three exact steps, then a verification (docs/transformer.md).

1. *Attention* from the odd part ``g(X) = T(X) - T(-X) = sum_h v_h^T o_h(X)``,
   ``v_h = 2 l_h``: :func:`exactlearn.learn` on ``g`` (2 calls to ``T`` per query).
2. *Merged lines* on the uniform slice (:mod:`.slice`).
3. *Per-head split* along copy-ratio families (:mod:`.split`).

With ``residual=True`` the residual's linear part ``l_res`` is learned first
(:mod:`.residual`). The result is checked against every answer of the call and
against fresh random sequences (counted queries) before it is returned.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from flint import fmpq

from .. import display
from ..counter import QueryCounter, StepCount
from ..errors import (
    ExactLearnError,
    InvalidArgumentError,
    InvalidModelError,
    OracleOutputError,
    RecoveryError,
)
from ..exact import dot
from ..learn import learn
from ..limits import DEFAULT_LIMITS, Limits, check_transformer_learn
from ..recovery import Recovery
from ..settings import DEFAULT_SETTINGS, TransformerSettings
from ..states import StrEnum
from ..validate import integer
from .canonical import CanonicalTransformer, Line, Matrix, Vector, build_weights, form_from_parts
from .errors import Condition, TransformerConditionError, TransformerVerificationError
from .model import Transformer, rational
from .residual import learn_residual_linear, residual_limit
from .slice import MergedLine, learn_slice
from .split import SplitStats, learn_split

__all__ = ["Step", "StepCount", "TransformerRecovery", "learn_transformer", "step1_formula"]

#: The longest query the learner may ask unless given ``max_length`` (:mod:`exactlearn.settings`).
DEFAULT_MAX_LENGTH = DEFAULT_SETTINGS.transformer.max_length


class Step(StrEnum):
    """The steps of the Transformer learner; every call to ``T`` is counted under one."""

    RESIDUAL = "residual"  # the residual connection's linear part (residual=True only)
    ATTENTION = "attention"  # step 1: the heads from the odd part
    SLICE = "slice"  # step 2: merged lines on the uniform slice
    SPLIT = "split"  # step 3: each line's per-head split
    VERIFY = "verify"  # fresh random sequences


def step1_formula(d: int, H: int) -> int:
    """Calls to ``T`` in step 1 without redraws: ``2 (4 H d^2 - 2 H + 1)``."""
    return 2 * (4 * H * d * d - 2 * H + 1)


@dataclass(repr=False)
class TransformerRecovery(display.Shown):
    """What :func:`learn_transformer` returns; every count is measured by the learner."""

    model: Transformer
    canonical: CanonicalTransformer
    attention: Recovery
    steps: dict[Step, StepCount]
    d: int
    heads: int
    lines: int
    split_tokens: int = 0
    split_fits_refused: int = 0
    seconds: float = 0.0

    @property
    def queries(self) -> int:
        """Calls to the oracle, all steps (verification included)."""
        return sum(s.queries for s in self.steps.values())

    @property
    def max_length(self) -> int:
        """The longest query of any step."""
        return max(s.max_length for s in self.steps.values())

    @property
    def redraws(self) -> int:
        """Degenerate configurations redrawn in step 1."""
        return self.attention.redraws

    @property
    def step1_formula(self) -> int:
        return step1_formula(self.d, self.attention.schedule_heads)

    def to_dict(self) -> dict:
        return {
            "format": "exactlearn.transformer-recovery/1",
            "d": self.d, "heads": self.heads, "lines": self.lines,
            "queries": self.queries, "max_length": self.max_length, "redraws": self.redraws,
            "step1_formula": self.step1_formula,
            "steps": {str(k): {"queries": v.queries, "max_length": v.max_length}
                      for k, v in self.steps.items()},
            "split_tokens": self.split_tokens, "split_fits_refused": self.split_fits_refused,
            "seconds": self.seconds,
            "model": self.model.to_dict(),
            "canonical": self.canonical.to_dict(),
        }

    def __repr__(self) -> str:
        details = [display.plural(self.lines, "line"), f"{self.queries} queries",
                   f"max length {self.max_length}",
                   display.plural(self.redraws, "redraw")]
        return display.summary("TransformerRecovery", f"d={self.d} H={self.heads}", details)

    def _lines(self) -> list[str]:
        """The summary, each step's measured counts (step 1 beside its formula), the model's grids."""
        out = display.wrapped(repr(self))
        for step, count in self.steps.items():
            formula = f" (formula {self.step1_formula})" if step is Step.ATTENTION else ""
            out.append(f"steps[{step.value!r}]: {count.queries} queries{formula}, "
                       f"max length {count.max_length}")
        return out + self.model._lines()

    def _latex_lines(self) -> list[str]:
        return [r"\text{" + repr(self)[1:-1] + "}"] + self.model._latex_lines()


class _Answer(NamedTuple):
    """An answer of the oracle, with the step that asked it."""

    step: Step
    tokens: list
    value: fmpq


class _Asker:
    """Asks ``T`` through one :class:`~exactlearn.counter.QueryCounter`, counted per :class:`Step`,
    and keeps every answer (the transcript the model is verified against)."""

    def __init__(self, oracle: Callable, cap: int):
        self.counter = QueryCounter(oracle, tracks_redraws=False)  # step 1's learn() counts the redraws
        self.counter.steps = {s: StepCount() for s in Step}
        self.counter.step = Step.ATTENTION
        self.cap = cap  # no query is longer
        self.transcript: list[_Answer] = []

    @property
    def step(self) -> Step:
        step = self.counter.step
        assert isinstance(step, Step)
        return step

    @step.setter
    def step(self, step: Step) -> None:
        self.counter.step = step

    @property
    def steps(self) -> dict[Step, StepCount]:
        """The counts per step (the counter's)."""
        return self.counter.steps

    def __call__(self, tokens: list) -> fmpq:
        value = self.counter.ask(list(tokens), self._rational)
        self.transcript.append(_Answer(self.step, tokens, value))
        return value

    def _rational(self, answer: Any) -> fmpq:
        try:
            return rational(answer, "the oracle's answer")
        except (InvalidModelError, ArithmeticError) as exc:
            raise OracleOutputError(f"{exc} (call {self.counter.queries}, step {self.step})") from None


def learn_transformer(
    oracle: Callable[[list], Any],
    d: int,
    *,
    heads: int | None = None,
    heads_bound: int | None = None,
    seed: Any = 0,
    verify: int = DEFAULT_SETTINGS.transformer.verify,
    max_length: int = DEFAULT_MAX_LENGTH,
    residual: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> TransformerRecovery:
    """Learn a one-layer Transformer (attention + bias-free ReLU FFN) exactly from queries.

    ``oracle`` is any callable on a list of integer tuples returning an exact
    rational ``T(X)``. Give the number of canonical heads ``heads=H`` or a bound
    ``heads_bound=H0``. Conditions (docs/transformer.md): no residual connection;
    every canonical head visible in the odd part (``V_h^T sum_j a_j u_j != 0``);
    every FFN line visible on the uniform slice (``sum_h V_h^T u_j != 0``) and
    distinct lines distinct there; ``d >= 2`` when ``H >= 2``; every line's
    per-head split reachable with queries of at most ``max_length`` tokens.
    ``residual=True`` learns ``y = x_N + sum_h V_h o_h`` (docs/transformer.md, section 5b).
    A violation raises :class:`TransformerConditionError` naming the condition.
    The model is checked against every answer and on ``verify`` fresh random
    sequences (counted) before it is returned; a mismatch raises
    :class:`TransformerVerificationError`.

    >>> truth = Transformer.random(d=2, heads=2, width=3, seed=4)
    >>> rec = learn_transformer(truth, d=2, heads=2)
    >>> rec.model == truth, rec.steps["attention"].queries == rec.step1_formula
    (True, True)
    """
    settings = DEFAULT_SETTINGS.transformer
    if not callable(oracle):
        raise InvalidArgumentError(f"oracle must be callable, got {type(oracle).__name__}")
    integer("d", d)
    integer("verify", verify, 0)
    if (heads is None) == (heads_bound is None):
        raise InvalidArgumentError("give exactly one of heads (H) or heads_bound (H0)")
    H = integer("heads" if heads is not None else "heads_bound", heads if heads is not None else heads_bound)
    # step 1 asks up to 2H + 1 tokens, the residual pre-pass up to 2H + 1 + its checks
    integer("max_length", max_length, 2 * H + 1 + (settings.residual_test_checks if residual else 0))
    check_transformer_learn(d, H, verify, max_length, limits, seed=seed)
    start = time.process_time()
    ask = _Asker(oracle, max_length)
    try:
        rec = _Run(ask, d, H, heads is not None, seed, verify, residual, settings).learn()
    except ExactLearnError as exc:  # what the oracle answered before the refusal (calls to T, not to g)
        exc.with_counts(ask.counter.counts())
        raise
    rec.seconds = time.process_time() - start
    return rec


class _FFN(NamedTuple):
    """Steps 2 and 3: the merged lines, each line's per-head parts, the split's stats (if it ran)."""

    merged: list[MergedLine]
    parts: list[tuple[Vector, ...]]
    stats: SplitStats | None


@dataclass
class _Run:
    """One call of :func:`learn_transformer`: its asker, sizes, options, random source and settings."""

    ask: _Asker
    d: int
    H: int  # the heads H, or the bound H0
    known: bool  # H is the number of heads, not a bound
    seed: Any
    verify: int
    residual: bool
    settings: TransformerSettings
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"exactlearn.transformer.learn:{self.seed}")

    def learn(self) -> TransformerRecovery:
        """Steps 1-3, the model built back, and its verification (module docstring)."""
        residual_linear = None  # l_res, the residual's linear part (residual=True)
        if self.residual:
            self.ask.step = Step.RESIDUAL
            residual_linear = learn_residual_linear(self.ask, self.d, self.H, self.ask.cap, self.rng,
                                                    self.settings)
            self.ask.step = Step.ATTENTION
        attention = self._attention(residual_linear)
        exp_Ws = [h.exp_W for h in attention.heads]
        head_linear = [tuple(x / 2 for x in h.v) for h in attention.heads]  # l_h = v_h / 2
        heads = len(exp_Ws)  # canonical heads found (at most the bound H0)
        if heads == 0:
            return self._no_heads(attention)
        if self.d == 1 and heads > 1:
            raise TransformerConditionError(Condition.PER_HEAD_SPLIT,
                                            "d = 1 with several heads: lines cannot be split")
        ffn = self._ffn(exp_Ws, head_linear, residual_linear)
        linear = head_linear + ([residual_linear] if residual_linear is not None else [])
        lines = [Line(w, line.kappa) for w, line in zip(ffn.parts, ffn.merged)]
        model = self._model(form_from_parts(self.d, exp_Ws, linear, lines, self.residual))
        self.ask.step = Step.VERIFY
        self._verify(model, heads)
        return self._recovery(model, attention, heads, len(ffn.merged), ffn.stats)

    def _recovery(self, model: Transformer, attention: Recovery, heads: int, lines: int,
                  stats: SplitStats | None) -> TransformerRecovery:
        return TransformerRecovery(
            model=model, canonical=model.canonical(), attention=attention, steps=dict(self.ask.steps),
            d=self.d, heads=heads, lines=lines, split_tokens=stats.tokens if stats else 0,
            split_fits_refused=stats.refused if stats else 0,
        )

    def _residual_limit(self, H: int) -> fmpq | None:
        return residual_limit(self.ask, self.d, H, self.ask.cap, self.rng, settings=self.settings)

    def _attention(self, residual_linear: Vector | None) -> Recovery:
        """Step 1: the canonical heads ``(exp(W_h), v_h)`` of the odd part ``g`` (less ``2 l_res . x_N``)."""
        ask = self.ask

        def odd(tokens):
            g = ask(tokens) - ask([tuple(-t for t in x) for x in tokens])
            if residual_linear is not None:  # the residual's odd part 2 l_res . x_N
                g -= 2 * dot(residual_linear, tokens[-1])
            return g

        try:
            attention = learn(odd, self.d, heads_bound=self.H, seed=self.seed)
        except RecoveryError as exc:
            limit = None if residual_linear is not None else self._residual_limit(self.H)
            if limit is not None and limit != 0:
                raise TransformerConditionError(
                    Condition.NO_RESIDUAL,
                    f"g((0,...,0,x)) tends to {limit} != 0 as zeros are added: the answers reveal a term "
                    f"in the last token, a residual connection y = x_N + sum_h V_h o_h "
                    f"(learn it with residual=True)",
                ) from None
            raise TransformerConditionError(Condition.ODD_ATTENTION, f"step 1 failed: {exc}") from None
        if not attention.is_rational:
            raise TransformerConditionError(Condition.RATIONAL, "a recovered exp(W_h) is not rational")
        if self.known and attention.num_heads < self.H:
            raise TransformerConditionError(
                Condition.HEADS_VISIBLE,
                f"the odd part shows {attention.num_heads} head(s), not H = {self.H}: "
                "some head has v_h = 0 (or H is too large)")
        return attention

    def _no_heads(self, attention: Recovery) -> TransformerRecovery:
        """Step 1 found no head (possible only with a bound H0): the zero function, or a refusal.

        The heads' ``W`` are learned from the odd part only; with no head there, a model is
        returned only if the uniform slice shows no line either (then ``T = 0`` is checked).
        """
        d = self.d
        self.ask.step = Step.SLICE
        if self.residual or learn_slice(self.ask, (fmpq(0),) * d, self.rng, self.settings.uniform_slice):
            raise TransformerConditionError(
                Condition.HEADS_VISIBLE, "the odd part T(X) - T(-X) shows no head, but T is not zero: "
                "every head has v_h = 0, so no attention weight W_h can be learned")
        # T = 0: one head (any W; V = 0) and one neuron with u = 0, a = 0
        model = Transformer([[[1] * d for _ in range(d)]], [[[0] * d for _ in range(d)]], [[0] * d], [0])
        self.ask.step = Step.VERIFY
        self._verify(model, model.heads)
        return self._recovery(model, attention, heads=0, lines=0, stats=None)

    def _ffn(self, exp_Ws: Sequence[Matrix], head_linear: Sequence[Vector],
             residual_linear: Vector | None) -> _FFN:
        """Steps 2 and 3: the merged lines ``(J_L, kappa_L)``, their per-head parts, the split's stats."""
        self.ask.step = Step.SLICE
        slice_linear = tuple(sum((l_h[i] for l_h in head_linear), fmpq(0)) for i in range(self.d))  # l_bar
        merged = learn_slice(self.ask, slice_linear, self.rng, self.settings.uniform_slice)
        self.ask.step = Step.SPLIT
        if not merged:
            return _FFN(merged, [], None)
        if len(exp_Ws) == 1 and residual_linear is None:  # one head: w_L1 = J_L
            return _FFN(merged, [(line.J,) for line in merged], None)
        parts, stats = learn_split(self.ask, exp_Ws, head_linear, merged, max_length=self.ask.cap,
                                   rng=self.rng, residual_linear=residual_linear,
                                   settings=self.settings.head_split)
        return _FFN(merged, parts, stats)

    def _model(self, form: CanonicalTransformer) -> Transformer:
        """A Transformer of hidden width at most ``d`` with canonical form ``form`` (``WIDTH`` if none)."""
        try:
            Vs, U, a = build_weights(form)
        except InvalidModelError as exc:
            raise TransformerConditionError(Condition.WIDTH, str(exc)) from None
        if not U:
            U, a = [[0] * self.d], [0]
        return Transformer(form.heads, Vs, U, a, residual=self.residual)

    def _verify(self, model: Transformer, H: int) -> None:
        """Every answer of the call, then ``verify`` fresh random sequences (counted), against the model."""
        for answer in list(self.ask.transcript):
            if model(answer.tokens) != answer.value:
                raise _unexplained(answer)
        s, rng = self.settings, self.rng
        for i in range(self.verify):  # every other one as short as step 1's queries, the others longer
            longest = s.verify_long_length if i % 2 else 2 * H + 1 + s.verify_short_extra
            length = rng.randint(1, min(longest, self.ask.cap))
            tokens = [tuple(rng.randint(-s.verify_token_bound, s.verify_token_bound) for _ in range(self.d))
                      for _ in range(length)]
            if model(tokens) != self.ask(tokens):
                limit = self._residual_limit(H)
                if limit is not None and limit != 0:
                    raise TransformerConditionError(Condition.NO_RESIDUAL,
                                                    "the answers reveal a term in the last token "
                                                    "(a residual connection)")
                raise TransformerVerificationError(
                    f"verification sequence {i + 1} of {self.verify} (length {length}): "
                    f"the learned model disagrees with the "
                    f"oracle, so no model is returned "
                    f"(is a head invisible in the odd part, or a line on the slice?)")


def _unexplained(answer: _Answer) -> RecoveryError:
    """The error for an answer of the call that the learned model does not give."""
    if answer.step in (Step.ATTENTION, Step.SPLIT):
        return TransformerConditionError(
            Condition.LINES_ON_SLICE,
            f"an answer of step {answer.step} is not explained by the lines found on the uniform slice: "
            f"a line is "
            f"invisible there (sum_h V_h^T u_j = 0) or distinct lines are parallel there "
            f"(or, with a bound "
            f"H0, a head is invisible in the odd part)")
    return TransformerVerificationError(
        f"the learned model disagrees with an answer the oracle gave (a sequence of length "
        f"{len(answer.tokens)}): the answers fit no Transformer satisfying the conditions")
