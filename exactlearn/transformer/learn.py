"""The Transformer learner: three exact steps, then a verification (docs/transformer.md).

1. *Attention* from the odd part ``g(X) = T(X) - T(-X) = sum_h v_h^T o_h(X)``,
   ``v_h = 2 l_h``: :func:`exactlearn.learn` on ``g`` (2 calls to ``T`` per query).
2. *Merged lines* on the uniform slice (:mod:`.slice`).
3. *Per-head split* along copy-ratio families (:mod:`.split`).

The result is checked against every answer of the call and against fresh
random sequences (counted queries) before it is returned.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flint import fmpq

from ..errors import (
    ExactLearnError,
    InvalidArgumentError,
    InvalidModelError,
    OracleError,
    OracleOutputError,
    RecoveryError,
)
from ..learn import learn
from ..limits import DEFAULT_LIMITS, Limits, check_transformer_learn
from ..recovery import Recovery
from ..validate import integer
from .canonical import CanonicalTransformer, build_weights, form_from_parts
from .errors import Condition, TransformerConditionError, TransformerVerificationError
from .model import Transformer, rational
from .pieces import rational_limit
from .slice import learn_slice
from .split import learn_split

__all__ = ["StepCount", "TransformerRecovery", "learn_transformer", "step1_formula"]

STEPS = ("residual", "attention", "slice", "split", "verify")
DEFAULT_MAX_LENGTH = 10_000


def step1_formula(d: int, H: int) -> int:
    """Calls to ``T`` in step 1 without redraws: ``2 (4 H d^2 - 2 H + 1)``."""
    return 2 * (4 * H * d * d - 2 * H + 1)


@dataclass
class StepCount:
    queries: int = 0
    max_length: int = 0


class _StepTotals:
    """``queries`` and ``max_length`` over ``self.steps`` (verification included)."""

    steps: dict[str, StepCount]

    @property
    def queries(self) -> int:
        """Calls to the oracle, all steps (verification included)."""
        return sum(s.queries for s in self.steps.values())

    @property
    def max_length(self) -> int:
        """The longest query of any step."""
        return max(s.max_length for s in self.steps.values())


@dataclass
class TransformerRecovery(_StepTotals):
    """What :func:`learn_transformer` returns; every count is measured by the learner."""

    model: Transformer
    canonical: CanonicalTransformer
    attention: Recovery
    steps: dict[str, StepCount]
    d: int
    heads: int
    lines: int
    split_tokens: int = 0
    split_fits_refused: int = 0
    seconds: float = 0.0


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
            "steps": {k: {"queries": v.queries, "max_length": v.max_length} for k, v in self.steps.items()},
            "split_tokens": self.split_tokens, "split_fits_refused": self.split_fits_refused,
            "seconds": self.seconds,
            "model": self.model.to_dict(),
            "canonical": self.canonical.to_dict(),
        }


class _Asker(_StepTotals):
    """Counts every call to the oracle per step and keeps the answers."""

    def __init__(self, oracle: Callable, d: int, cap: int):
        self.oracle = oracle
        self.d = d
        self.cap = cap  # no query is longer
        self.steps = {s: StepCount() for s in STEPS}
        self.step = "attention"
        self.transcript: list[tuple[str, list, fmpq]] = []


    def __call__(self, tokens: list) -> fmpq:
        try:
            answer = self.oracle(list(tokens))
        except ExactLearnError:
            raise
        except Exception as exc:  # the user's oracle failed: say where, with the counts so far
            raise OracleError(
                f"the oracle raised {type(exc).__name__}: {str(exc)[:200]} on call {self.queries + 1} "
                f"(step {self.step}, length {len(tokens)}), after {self.queries} answered calls",
                queries=self.queries, max_length=self.max_length) from exc
        count = self.steps[self.step]  # an answer, even a malformed one, is a call
        count.queries += 1
        count.max_length = max(count.max_length, len(tokens))
        try:
            value = rational(answer, "the oracle's answer")
        except (InvalidModelError, ArithmeticError) as exc:
            raise OracleOutputError(f"{exc} (call {self.queries}, step {self.step})") from None
        self.transcript.append((self.step, tokens, value))
        return value


def _residual_check(ask: _Asker, d: int, H: int, rng: random.Random, x: tuple | None = None) -> fmpq | None:
    """``lim g((0^k, x))`` as ``k -> oo``: ``2 l_res . x`` (zero without a residual), or None
    if ``g`` along ``k`` is not of the attention form."""
    if 2 * H + 3 > ask.cap:
        return None
    if x is None:
        x = tuple(rng.choice((-2, -1, 1, 2)) for _ in range(d))
    zero, neg = (0,) * d, tuple(-t for t in x)
    ks = list(range(2 * H + 3))
    ys = [ask([zero] * k + [x]) - ask([zero] * k + [neg]) for k in ks]
    return rational_limit(ks, ys, H)


def _residual_linear(ask: _Asker, d: int, H: int, rng: random.Random) -> tuple[fmpq, ...]:
    """``l_res = 1/2 sum_j a_j u_j`` from the limits of ``g((0^k, e_i))``, ``i = 1..d``."""
    out = []
    for i in range(d):
        limit = _residual_check(ask, d, H, rng, tuple(int(j == i) for j in range(d)))
        if limit is None:
            raise TransformerConditionError(
                Condition.ODD_ATTENTION,
                "g((0,...,0,e_i)) along the number of zeros is not attention plus a constant")
        out.append(limit / 2)
    return tuple(out)


def _attention(ask: _Asker, d: int, H: int, known: bool, seed: Any, rng: random.Random,
               lres: tuple[fmpq, ...] | None = None) -> Recovery:
    def odd(tokens):
        g = ask(tokens) - ask([tuple(-t for t in x) for x in tokens])
        if lres is not None:  # the residual's odd part 2 l_res . x_N
            g -= 2 * sum((a * b for a, b in zip(lres, tokens[-1])), fmpq(0))
        return g

    try:
        rec = learn(odd, d, heads_bound=H, seed=seed)
    except RecoveryError as exc:
        limit = None if lres is not None else _residual_check(ask, d, H, rng)
        if limit is not None and limit != 0:
            raise TransformerConditionError(
                Condition.NO_RESIDUAL,
                f"g((0,...,0,x)) tends to {limit} != 0 as zeros are added: the answers reveal a term in the "
                f"last token, a residual connection y = x_N + sum_h V_h o_h (learn it with residual=True)",
            ) from None
        raise TransformerConditionError(Condition.ODD_ATTENTION, f"step 1 failed: {exc}") from None
    if not rec.is_rational:
        raise TransformerConditionError(Condition.RATIONAL, "a recovered exp(W_h) is not rational")
    if known and rec.num_heads < H:
        raise TransformerConditionError(
            Condition.HEADS_VISIBLE,
            f"the odd part shows {rec.num_heads} head(s), not H = {H}: "
            "some head has v_h = 0 (or H is too large)")
    return rec


def learn_transformer(
    oracle: Callable[[list], Any],
    d: int,
    *,
    heads: int | None = None,
    heads_bound: int | None = None,
    seed: Any = 0,
    verify: int = 16,
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
    ``residual=True`` learns ``y = x_N + sum_h V_h o_h`` (docs/transformer.md, section 5).
    A violation raises :class:`TransformerConditionError` naming the condition.
    The model is checked against every answer and on ``verify`` fresh random
    sequences (counted) before it is returned; a mismatch raises
    :class:`TransformerVerificationError`.

    >>> truth = Transformer.random(d=2, heads=2, width=3, seed=4)
    >>> rec = learn_transformer(truth, d=2, heads=2)
    >>> rec.model == truth, rec.steps["attention"].queries == rec.step1_formula
    (True, True)
    """
    if not callable(oracle):
        raise InvalidArgumentError(f"oracle must be callable, got {type(oracle).__name__}")
    integer("d", d)
    integer("verify", verify, 0)
    if (heads is None) == (heads_bound is None):
        raise InvalidArgumentError("give exactly one of heads (H) or heads_bound (H0)")
    H = integer("heads" if heads is not None else "heads_bound", heads if heads is not None else heads_bound)
    # step 1 asks up to 2H + 1 tokens, the residual pre-pass 2H + 3
    integer("max_length", max_length, 2 * H + (3 if residual else 1))
    check_transformer_learn(d, H, verify, max_length, limits, seed=seed)
    start = time.process_time()
    ask = _Asker(oracle, d, max_length)
    try:
        rec = _run(ask, d, H, heads is not None, seed, verify, max_length, residual)
    except ExactLearnError as exc:  # what the oracle answered before the refusal (calls to T, not to g)
        exc.queries = ask.queries  # type: ignore[attr-defined]
        exc.max_length = ask.max_length  # type: ignore[attr-defined]
        raise
    rec.seconds = time.process_time() - start
    return rec


def _run(ask: _Asker, d: int, H: int, known: bool, seed: Any, verify: int, max_length: int,
         residual: bool) -> TransformerRecovery:
    """Steps 1-3, the build-back and the verification (module docstring)."""
    rng = random.Random(f"exactlearn.transformer.learn:{seed}")
    lres = None
    if residual:
        ask.step = "residual"
        lres = _residual_linear(ask, d, H, rng)
        ask.step = "attention"
    rec = _attention(ask, d, H, known, seed, rng, lres)
    exp_Ws = [h.exp_W for h in rec.heads]
    ells = [tuple(x / 2 for x in h.v) for h in rec.heads]
    H = len(exp_Ws)
    if H == 0:
        return _no_heads(ask, d, verify, rng, residual, rec)
    if d == 1 and H > 1:
        raise TransformerConditionError(Condition.PER_HEAD_SPLIT,
                                        "d = 1 with several heads: lines cannot be split")
    merged, parts, stats = _ffn(ask, exp_Ws, ells, lres, max_length, rng)
    linear = ells + ([lres] if lres is not None else [])
    form = form_from_parts(d, exp_Ws, linear, [(w, k) for w, (_, k) in zip(parts, merged)], residual)
    try:
        Vs, U, a = build_weights(form)
    except InvalidModelError as exc:
        raise TransformerConditionError(Condition.WIDTH, str(exc)) from None
    if not U:
        U, a = [[0] * d], [0]
    model = Transformer(form.heads, Vs, U, a, residual=residual)
    ask.step = "verify"
    _verify(ask, model, d, H, verify, rng)
    return TransformerRecovery(
        model=model, canonical=model.canonical(), attention=rec, steps=ask.steps, d=d, heads=H,
        lines=len(merged), split_tokens=stats.tokens if stats else 0,
        split_fits_refused=stats.refused if stats else 0,
    )


def _no_heads(ask: _Asker, d: int, verify: int, rng: random.Random, residual: bool,
              rec: Recovery) -> TransformerRecovery:
    """Step 1 found no head (possible only with a bound H0): the zero function, or a refusal.

    The heads' ``W`` are learned from the odd part only; with no head there, a model is
    returned only if the uniform slice shows no line either (then ``T = 0`` is checked).
    """
    ask.step = "slice"
    if residual or learn_slice(ask, (fmpq(0),) * d, rng):
        raise TransformerConditionError(
            Condition.HEADS_VISIBLE, "the odd part T(X) - T(-X) shows no head, but T is not zero: every head "
            "has v_h = 0, so no attention weight W_h can be learned")
    model = Transformer([[[1] * d for _ in range(d)]], [[[0] * d for _ in range(d)]], [[0] * d], [0])
    ask.step = "verify"
    _verify(ask, model, d, 1, verify, rng)
    return TransformerRecovery(model=model, canonical=model.canonical(), attention=rec, steps=ask.steps,
                               d=d, heads=0, lines=0)


def _ffn(ask: _Asker, exp_Ws, ells, lres, max_length: int, rng: random.Random):
    """Steps 2 and 3: merged lines ``(J_L, kappa_L)``, their per-head parts, the split's stats."""
    d, H = len(ells[0]), len(exp_Ws)
    ask.step = "slice"
    lbar = tuple(sum((l[i] for l in ells), fmpq(0)) for i in range(d))
    merged = learn_slice(ask, lbar, rng)
    ask.step = "split"
    if not merged:
        return merged, [], None
    if H == 1 and lres is None:
        return merged, [(J,) for J, _ in merged], None
    parts, stats = learn_split(ask, exp_Ws, ells, merged, max_length=max_length, rng=rng, residual=lres)
    return merged, parts, stats


def _verify(ask: _Asker, model: Transformer, d: int, H: int, n: int, rng: random.Random) -> None:
    """Every answer of the call, then ``n`` fresh random sequences (counted), against the model."""
    for step, tokens, value in list(ask.transcript):
        if model(tokens) == value:
            continue
        if step in ("attention", "split"):
            raise TransformerConditionError(
                Condition.LINES_ON_SLICE,
                f"an answer of step {step} is not explained by the lines found on the uniform slice: "
                f"a line is "
                f"invisible there (sum_h V_h^T u_j = 0) or distinct lines are parallel there "
                f"(or, with a bound "
                f"H0, a head is invisible in the odd part)")
        raise TransformerVerificationError(
                f"the learned model disagrees with an answer the oracle gave (a sequence of length "
                f"{len(tokens)}): the answers fit no Transformer satisfying the conditions")
    for i in range(n):  # half as short as step 1's queries, half up to 32 tokens
        length = rng.randint(1, min(32 if i % 2 else 2 * H + 3, ask.cap))
        tokens = [tuple(rng.randint(-3, 3) for _ in range(d)) for _ in range(length)]
        if model(tokens) != ask(tokens):
            limit = _residual_check(ask, d, H, rng)
            if limit is not None and limit != 0:
                raise TransformerConditionError(Condition.NO_RESIDUAL,
                                                "the answers reveal a term in the last token "
                                                "(a residual connection)")
            raise TransformerVerificationError(
                f"verification sequence {i + 1} of {n} (length {length}): "
                f"the learned model disagrees with the "
                f"oracle, so no model is returned "
                f"(is a head invisible in the odd part, or a line on the slice?)")
