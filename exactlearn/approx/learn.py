"""``learn_approx``: the one schedule of :mod:`exactlearn.learn`, run over real balls.

The approximate learner does not re-implement the schedule. It hands
:func:`exactlearn.learn.run_schedule` two things:

* the field :class:`~exactlearn.approx.field.RealBalls` (arb balls whose radius
  starts at ``eps``, the declared bound on the oracle's output error);
* the oracle seen through a **query scale** ``s``: the schedule draws integer
  tokens ``t`` as always, the oracle receives the real tokens ``s * t`` (Python
  floats, exactly representable). Scores scale by ``s^2`` and values by ``s``,
  so the schedule learns ``W' = s^2 W`` and ``v' = s v``, and ``learn_approx``
  returns ``W = W' / s^2``, ``v = v' / s``.

Why a scale: the sensitivity constant ``C`` (:func:`~exactlearn.approx.sensitivity`)
depends on how far the poles ``-1/rho`` spread, ``rho = exp(s^2 (z - x)^T W x)``.
Large scores put poles near 0 or far out (ill-conditioned interpolation), small
ones crowd every pole near ``-1`` and divide the error by ``s^2`` on the way
back. :func:`~exactlearn.approx.choose_scale` picks ``s`` minimising ``C``
(powers of two by default).

Only the known-``H`` paper schedule runs here (``4Hd^2 - 2H + 1`` queries of
length at most ``2H + 1``): deciding the number of heads from noisy data (an
upper bound ``H0``) or predicting residues (the lean schedule) is not offered
on the approximate path.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import permutations
from typing import Any

import mpmath
import numpy as np
from flint import arb, fmpq

from ..errors import (
    InconsistentAnswersError,
    InvalidArgumentError,
    RecoveryError,
    RedrawBudgetExceeded,
)
from ..exact import rational_str
from ..guard import GuardedOracle, guarded_progress
from ..learn import DEFAULT_TOKEN_BOUND
from ..limits import DEFAULT_LIMITS, Limits, check_approx, check_learn
from ..model import MultiHeadAttention
from ..recovery import ScheduleCounts
from ..schedule import Configuration
from ..states import Redraw, RedrawReason
from ..validate import integer, optional_integer
from .balls import as_fmpq, radius, recenter, to_arb, to_mpf, working_precision
from .field import RealBalls
from .models import RealMultiHeadAttention
from .run import run_approx_schedule
from .sketch import SKETCH_MAX_HEADS, SKETCH_MIN_HEADS, SKETCH_SCALE, Sketch, sketch_heads

__all__ = [
    "learn_approx",
    "ApproxHead",
    "ApproxRecovery",
    "AmbiguousAnswersError",
    "ParameterError",
    "parameter_error",
    "DEFAULT_PRECISION",
    "ScaledQueries",
    "suggested_max_condition",
]

#: Default working precision in bits (about 77 decimal digits).
DEFAULT_PRECISION = 256


def suggested_max_condition(heads: int) -> int:
    """``10^(2H+1)``: about 100 times the condition of ideally placed poles.

    With samples at ``k = 0..2H`` even the best-placed copy function (residues
    1, ``rho`` in a geometric progression) has condition about 24, 9e2, 1.2e5,
    5.8e6 for ``H = 1..4``; random configurations are often far worse. A limit
    two orders of magnitude above the ideal keeps ``C`` moderate at the cost
    of a few redraws (for ``H = 4``: hundreds; raise ``max_redraws``).
    """
    return 10 ** (2 * heads + 1)


class AmbiguousAnswersError(RedrawBudgetExceeded):
    """Within the declared error bound ``eps`` the answers do not determine the heads.

    Raised instead of guessing when configuration after configuration could not
    be resolved: the pairing of the heads of two linked configurations was not
    unique (pole products and residue combinations overlap more than one perfect
    matching's targets), or the poles/residues of a configuration could not be
    resolved. ``reasons`` lists every redraw; ``ambiguous_matchings`` counts
    those caused by an ambiguous pairing.
    """

    def __init__(self, message: str, reasons: Sequence[str] = (), notes: Sequence[str] = (),
                 queries: int = 0):
        super().__init__(message, queries=queries, reasons=reasons)
        self.notes = list(notes)
        self.ambiguous_matchings = sum(
            1 for r in self.reasons if isinstance(r, Redraw) and r.reason is RedrawReason.AMBIGUOUS_PAIRING)


class ScaledQueries:
    """The oracle seen by the schedule: integer tokens ``t`` are sent as floats ``s * t``.

    ``s`` must make every ``s * t`` exactly representable as a float (powers of
    two and other short binary fractions do), so no rounding enters the
    queries; checked for every entry sent.
    """

    def __init__(self, oracle: Callable, scale: fmpq, remember: bool = False):
        self.oracle = oracle
        self.scale = scale
        self._cache: dict[int, float] = {}
        #: with ``remember``, each distinct query is sent once and its answer reused (a sketch's answers
        #: serve the schedule; a query asked twice has one answer error, as the constant C assumes)
        self.answers: dict[tuple, Any] | None = {} if remember else None

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
        if self.answers is None:
            return self.oracle([tuple(self.real(t) for t in token) for token in tokens])
        key = tuple(tuple(token) for token in tokens)
        if key not in self.answers:
            self.answers[key] = self.oracle([tuple(self.real(t) for t in token) for token in tokens])
        return self.answers[key]


@dataclass(frozen=True)
class ApproxHead:
    """One recovered head: the real ``W`` (d x d mpmath numbers, not its exponential) and ``v``.

    ``W_radius`` / ``v_radius``: error radii. From a rigorous run they are
    certified (if the oracle is an attention with the stated number of heads
    answering within ``eps``, the true entry lies within the radius of the
    returned one); otherwise they are first-order error estimates.
    """

    W: list[list[mpmath.mpf]]
    v: list[mpmath.mpf]
    W_radius: list[list[mpmath.mpf]]
    v_radius: list[mpmath.mpf]

    @property
    def d(self) -> int:
        return len(self.v)

    @property
    def radius(self) -> mpmath.mpf:
        """The largest certified radius of this head's parameters."""
        return max([r for row in self.W_radius for r in row] + list(self.v_radius))


@dataclass
class ApproxRecovery(ScheduleCounts):
    """The result of :func:`learn_approx`. Counts are measured by the learner as it asked."""

    d: int
    heads: tuple[ApproxHead, ...]
    queries: int
    max_length: int
    redraws: int
    eps: fmpq
    precision: int
    scale: fmpq
    seed: Any
    token_bound: int
    rigorous: bool = False
    seconds_total: float = 0.0
    seconds_oracle: float = 0.0
    configurations: list[Configuration] = field(default_factory=list, repr=False)
    # j -> matching configuration of link (j-1, j)
    links: dict[int, Configuration] = field(default_factory=dict, repr=False)
    redraw_reasons: list[str] = field(default_factory=list, repr=False)
    notes: list[str] = field(default_factory=list, repr=False)
    #: of ``queries``: those the sketch asked (0 without a sketch); the rest the schedule asked anew
    sketch_queries: int = 0

    @property
    def num_heads(self) -> int:
        return len(self.heads)

    @property
    def schedule_heads(self) -> int:
        """The known ``H`` the paper schedule was sized with."""
        return self.num_heads

    @property
    def planned(self) -> int:
        """The paper schedule's count without redraws."""
        return self.formula

    @property
    def error_bound(self) -> mpmath.mpf:
        """The largest radius over all parameters (certified if ``rigorous``, else a first-order estimate)."""
        return max(h.radius for h in self.heads)

    @property
    def measurements(self) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """The integer tokens ``(x_j, z_j)`` of the measurement configurations (before scaling)."""
        return [(c.x, c.z) for c in self.configurations]

    def model(self) -> RealMultiHeadAttention:
        """The recovered model (midpoints) as a :class:`RealMultiHeadAttention`."""
        return RealMultiHeadAttention([h.W for h in self.heads], [h.v for h in self.heads])

    def to_dict(self) -> dict:
        def s(x):
            return mpmath.nstr(x, mpmath.mp.dps, strip_zeros=False)
        return {
            "format": "exactlearn.approx-recovery/1",
            "d": self.d,
            "num_heads": self.num_heads,
            "queries": self.queries,
            "formula": self.formula,
            "max_length": self.max_length,
            "formula_max_length": self.formula_max_length,
            "redraws": self.redraws,
            "redraw_reasons": list(self.redraw_reasons),
            "eps": rational_str(self.eps),
            "precision_bits": self.precision,
            "scale": rational_str(self.scale),
            "seed": self.seed,
            "token_bound": self.token_bound,
            "rigorous": self.rigorous,
            "error_bound": s(self.error_bound),
            "heads": [{"W": [[s(e) for e in row] for row in h.W], "v": [s(e) for e in h.v],
                       "W_radius": [[s(e) for e in row] for row in h.W_radius],
                       "v_radius": [s(e) for e in h.v_radius]} for h in self.heads],
        }


def _brief(q: fmpq) -> str:
    """A short decimal form of an exact rational (for messages)."""
    if q.q == 1 or len(str(q)) <= 24:
        return rational_str(q)
    return mpmath.nstr(mpmath.mpf(int(q.p)) / int(q.q), 6)


def _summary(items: Sequence[str]) -> str:
    counts = Counter(re.sub(r"^configuration \d+: ", "", text) for text in items)
    return "; ".join(f"{n} x {text}" for text, n in counts.most_common())


def learn_approx(oracle: Callable[[list[tuple[float, ...]]], Any], d: int, *, heads: int,
                 precision: int = DEFAULT_PRECISION, eps: Any = None, scale: Any = None, seed: Any = 0,
                 token_bound: int = DEFAULT_TOKEN_BOUND, max_redraws: int | None = None,
                 progress: Callable[[int, int], None] | None = None, rigorous: bool = False,
                 max_condition: Any = None, guide: Any = "auto",
                 limits: Limits = DEFAULT_LIMITS) -> ApproxRecovery:
    """Learn a multi-head attention from approximate (e.g. float) answers.

    Runs the paper schedule of :func:`exactlearn.learn` in python-flint ball
    arithmetic at ``precision`` bits and returns real parameters as mpmath
    numbers with certified radii.

    * ``oracle`` -- any callable taking a list of real token vectors (tuples of
      floats) and returning a real number (float, int, rational, ``mpf``, arb);
      ``d`` the token width, ``heads`` the known number ``H`` of canonical heads.
    * ``precision`` -- working precision in bits; it must exceed roughly
      ``log2(C / eps) + 64``.
    * ``eps`` -- bound on ``|answer - f(X)|`` (rational, float or string such as
      ``"1e-30"``); default: the oracle's ``eps`` attribute, otherwise required.
    * ``scale`` -- query scale ``s`` (tokens sent are ``s * t``), a positive
      binary fraction such as 1, 1/2, 1/4; see :func:`choose_scale`. Default:
      ``SKETCH_SCALE`` (2) when the run sketches first, otherwise 1.
    * ``seed``, ``token_bound``, ``max_redraws``, ``progress`` -- as in :func:`exactlearn.learn`.
    * ``rigorous`` -- ``True``: every copy function is certified (Krawczyk), so
      the radii are rigorous bounds, at the price of refusing at lower noise;
      ``False`` (default): first-order error estimates.
    * ``max_condition`` -- redraw (and count) every configuration whose condition
      exceeds this number: fewer ill-conditioned configurations, a smaller ``C``.
    * ``guide`` -- an approximation of the heads (a model, or a pilot
      :class:`ApproxRecovery` of the same oracle): token vectors are then chosen,
      before querying, by the conditioning it predicts (:mod:`exactlearn.approx.guide`);
      it never enters the returned values. ``"sketch"``: the guide is a sketch
      of the same oracle (:mod:`exactlearn.approx.sketch`, rough heads from few
      queries, counted), whose first configurations are reused. ``"auto"``
      (default): ``"sketch"`` for ``SKETCH_MIN_HEADS <= heads <= SKETCH_MAX_HEADS`` (3 to 6), ``None``
      (random configurations) below. ``None``: random configurations.
    * ``limits`` -- maxima checked before the first query, as in :func:`exactlearn.learn`.

    Raises :class:`AmbiguousAnswersError` when the noise keeps configurations
    unresolved beyond the redraw budget (the learner refuses to guess), and
    :class:`~exactlearn.InconsistentAnswersError` when the answers contradict an
    attention with ``heads`` heads within ``eps``.

    >>> from exactlearn import MultiHeadAttention
    >>> from exactlearn.approx import NoisyOracle, learn_approx, parameter_error
    >>> E = [[["11/10", "9/10"], ["4/5", "6/5"]], [["6/5", 1], ["9/10", "4/3"]]]
    >>> truth = MultiHeadAttention.from_lists(E, [[1, -2], [3, 1]])   # W = log E, close to 0
    >>> oracle = NoisyOracle(truth, eps="1e-30", seed=1)
    >>> rec = learn_approx(oracle, 2, heads=2)
    >>> (rec.queries, oracle.queries, rec.max_length, rec.redraws)
    (29, 29, 5, 0)
    >>> parameter_error(rec, truth).max_abs < 1e-22      # C * eps, C of these queries
    True
    """
    H, eps_q, s, max_condition = _check_arguments(oracle, d, heads, precision, eps, scale, token_bound,
                                                  max_redraws, max_condition, limits)
    check_approx(d, precision, limits, seed=seed, guide=guide)
    sketching = _sketches(guide, H)
    if scale is None and sketching:
        s = fmpq(SKETCH_SCALE)
    guarded = GuardedOracle(oracle)  # the oracle's exceptions become OracleError (with the counts)
    queries_seen = ScaledQueries(guarded, s, remember=sketching)
    for t in range(-2 * token_bound, 2 * token_bound + 1):
        queries_seen.real(t)  # refuse an inexact scale before querying
    start = time.perf_counter()
    field_ = RealBalls(eps_q, rigorous=rigorous, max_condition=max_condition)
    with working_precision(precision):
        sketch, chooser = _guide_of(guide, sketching, queries_seen, d, H, seed, token_bound, field_.notes)
        try:
            run = run_approx_schedule(queries_seen, d, H, field=field_, seed=seed, token_bound=token_bound,
                                      max_redraws=max_redraws,
                                      progress=guarded_progress(
                                          progress, lambda: (guarded.queries, guarded.max_length, None)),
                                      scale=float(s.p) / float(s.q), **chooser)
        except RedrawBudgetExceeded as exc:
            exc.queries = guarded.queries
            raise _refusal(exc, H, eps_q, field_.notes) from None
        except InconsistentAnswersError as exc:
            raise InconsistentAnswersError(
                f"{exc}. The answers were taken to be within eps = {_brief(eps_q)} of the outputs of an "
                f"attention with {H} heads; if eps underestimates the oracle's error, increase it"
            ) from None
        out = _real_heads(run.result, s)
    return ApproxRecovery(
        d=d, heads=tuple(out), queries=guarded.queries, max_length=guarded.max_length, redraws=run.redraws,
        eps=eps_q, precision=precision, scale=s, seed=seed, token_bound=token_bound, rigorous=rigorous,
        seconds_total=time.perf_counter() - start, seconds_oracle=run.seconds_oracle,
        configurations=list(run.configs), links=dict(run.links),
        redraw_reasons=list(run.redraw_reasons), notes=list(field_.notes),
        sketch_queries=0 if sketch is None else sketch.queries,
    )


def _sketches(guide: Any, H: int) -> bool:
    """Whether the run sketches first: ``guide="sketch"`` (at most ``SKETCH_MAX_HEADS`` heads, refused
    before any query otherwise), or ``"auto"`` from ``SKETCH_MIN_HEADS`` to ``SKETCH_MAX_HEADS`` heads."""
    if isinstance(guide, str) and guide == "sketch":
        if H > SKETCH_MAX_HEADS:
            raise InvalidArgumentError(f"guide='sketch' takes at most {SKETCH_MAX_HEADS} heads (the sketch "
                                       f"tries every pairing of the heads), got {H}; pass guide=None")
        return True
    return isinstance(guide, str) and guide == "auto" and SKETCH_MIN_HEADS <= H <= SKETCH_MAX_HEADS


def _guide_of(guide: Any, sketching: bool, queries_seen: ScaledQueries, d: int, H: int, seed: Any,
              token_bound: int, notes: list[str]) -> tuple[Sketch | None, dict[str, Any]]:
    """The sketch (if one is made) and the ``guide``/``reuse`` arguments of the schedule run.

    A sketch that fails (too many failed fits) leaves random configurations, with a note: it
    cost queries (counted by the oracle), never correctness.
    """
    if sketching:
        try:
            sketch = sketch_heads(queries_seen, d, H, seed=seed, token_bound=token_bound)
        except RecoveryError as exc:
            notes.append(f"no sketch: {exc}")
            return None, {}
        scale = float(queries_seen.scale.p) / float(queries_seen.scale.q)
        return sketch, {"guide": sketch.guide(scale), "reuse": sketch.plan}
    if guide is None or isinstance(guide, str):
        if guide not in (None, "auto"):
            raise InvalidArgumentError(f"guide must be a model, a recovery, 'auto', 'sketch' or None, "
                                       f"got {guide!r}")
        return None, {}
    return None, {"guide": guide_heads(guide)}


def _check_arguments(oracle, d, heads, precision, eps, scale, token_bound, max_redraws, max_condition,
                     limits) -> tuple[int, fmpq, fmpq, Any]:
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
    check_learn(d, H, token_bound, "paper", limits, max_redraws=max_redraws)
    oracle_d = getattr(oracle, "d", None)
    if isinstance(oracle_d, int) and oracle_d != d:
        raise InvalidArgumentError(f"the oracle has token width d = {oracle_d}, but d = {d} was given")
    if eps is None:
        eps = getattr(oracle, "eps", None)
        if eps is None:
            raise InvalidArgumentError(
                "give eps, a bound on the oracle's output error (this oracle declares none); "
                "for float64 black boxes with outputs of size ~1, eps = 1e-12 is a cautious choice"
            )
    eps_q = as_fmpq(eps, "eps")
    if eps_q < 0:
        raise InvalidArgumentError(f"eps must be >= 0, got {rational_str(eps_q)}")
    if max_condition is not None:
        mc = as_fmpq(max_condition, "max_condition")
        if mc <= 0:
            raise InvalidArgumentError("max_condition must be a positive number or None, "
                                       f"got {rational_str(mc)}")
        max_condition = mpmath.mpf(int(mc.p)) / int(mc.q)
    s = as_fmpq(1 if scale is None else scale, "scale")
    if s <= 0:
        raise InvalidArgumentError(f"scale must be positive, got {rational_str(s)}")
    return H, eps_q, s, max_condition


def _refusal(exc: RedrawBudgetExceeded, H: int, eps_q: fmpq, notes: Sequence[str]) -> AmbiguousAnswersError:
    """The refusal when the redraw budget ran out: every reason, what was not certified, what to try."""
    reasons = exc.reasons
    return AmbiguousAnswersError(
        f"the answers do not determine the {H} heads within the error bound eps = {_brief(eps_q)}: "
        f"{len(reasons)} configurations were redrawn ({exc.queries} queries) and the "
        f"learner refuses to guess. Redraw reasons: {_summary(reasons)}."
        + (f" Not certified: {_summary(notes)}." if notes else "")
        + " Lower the noise, choose a query scale with a smaller sensitivity constant "
        "(exactlearn.approx.choose_scale), or redraw ill-conditioned configurations "
        f"(max_condition=suggested_max_condition({H}) = {suggested_max_condition(H):.0e} with a larger "
        "max_redraws).",
        reasons, notes, exc.queries or 0,
    )


def _real_heads(result, s: fmpq) -> list[ApproxHead]:
    """The learned balls of the scaled problem as real heads (``W / s^2``, ``v / s``) with radii."""
    s_ball = to_arb(s)
    out = []
    for W, v in result:
        W_real = [[recenter(w / (s_ball * s_ball), w.mid() / (s_ball * s_ball)) for w in row] for row in W]
        v_real = [recenter(x / s_ball, x.mid() / s_ball) for x in v]
        out.append(ApproxHead(
            W=[[to_mpf(e) for e in row] for row in W_real],
            v=[to_mpf(e) for e in v_real],
            W_radius=[[radius(e) for e in row] for row in W_real],
            v_radius=[radius(e) for e in v_real],
        ))
    return out


def guide_heads(model: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """``[(W_h, v_h)]`` as float arrays (a guide, :mod:`.guide`): a model, a recovery, ``(W, v)`` pairs."""
    if isinstance(model, ApproxRecovery):
        pairs: Any = [(h.W, h.v) for h in model.heads]
    else:
        pairs = truth_parameters(model, 64)
    return [(np.array([[float(e) for e in row] for row in W]), np.array([float(e) for e in v]))
            for W, v in pairs]


# -- comparing with a known model -----------------------------------------------------------
def truth_parameters(truth: Any, precision: int = DEFAULT_PRECISION
                     ) -> list[tuple[list[list[mpmath.mpf]], list[mpmath.mpf]]]:
    """The canonical heads of a known model as real ``(W, v)`` (mpmath numbers, ``precision`` bits).

    ``truth`` is an exp-parametrised :class:`~exactlearn.MultiHeadAttention`
    (``W = log exp_W``), a :class:`RealMultiHeadAttention`, or a list of
    ``(W, v)`` pairs of real numbers.
    """
    with working_precision(precision):
        if isinstance(truth, MultiHeadAttention):
            return [([[to_mpf(arb(e).log()) for e in row] for row in h.exp_W], [to_mpf(arb(x)) for x in h.v])
                    for h in truth.canonical().heads]
        if isinstance(truth, RealMultiHeadAttention):
            canon = truth.canonical()
            heads = [] if canon is None else canon.heads
        else:
            heads = list(truth)
        return [([[to_mpf(to_arb(e)) for e in row] for row in W], [to_mpf(to_arb(x)) for x in v])
                for W, v in heads]


@dataclass(frozen=True)
class ParameterError:
    """How far a recovery is from a known model (mpmath numbers; floats nowhere).

    ``max_abs`` = max over all heads and entries of ``|W_hat - W|`` and
    ``|v_hat - v|`` (the infinity norm the constant ``C`` bounds);
    ``max_rel`` = max of ``|error| / |true entry|`` over nonzero entries;
    ``permutation[i]`` = the truth head matched to recovered head ``i``;
    ``deviations[j]`` = ``(W_hat - W, v_hat - v)`` for truth head ``j``.
    """

    max_abs: mpmath.mpf
    max_rel: mpmath.mpf
    permutation: tuple[int, ...]
    deviations: tuple


def parameter_error(recovery: ApproxRecovery, truth: Any) -> ParameterError:
    """Compare a recovery with a known model, matching heads by the permutation of least error."""
    true = truth_parameters(truth, recovery.precision)
    if len(true) != recovery.num_heads:
        raise InvalidArgumentError(
            f"the recovery has {recovery.num_heads} heads but the model has {len(true)} canonical heads"
        )
    H = len(true)
    with mpmath.mp.workprec(recovery.precision):
        def err(i: int, j: int) -> mpmath.mpf:
            h, (W, v) = recovery.heads[i], true[j]
            return max([abs(h.W[a][b] - W[a][b]) for a in range(len(W)) for b in range(len(W))]
                       + [abs(h.v[a] - v[a]) for a in range(len(v))])
        table = [[err(i, j) for j in range(H)] for i in range(H)]
        if H <= 7:
            best = min(permutations(range(H)), key=lambda p: max(table[i][p[i]] for i in range(H)))
        else:  # greedy; fine for well-separated heads
            greedy: list[int] = []
            for i in range(H):
                j = min((j for j in range(H) if j not in greedy), key=lambda j: table[i][j])
                greedy.append(j)
            best = tuple(greedy)
        max_abs = max(table[i][best[i]] for i in range(H))
        rel = []
        deviations: list = [None] * H
        for i, j in enumerate(best):
            h, (W, v) = recovery.heads[i], true[j]
            dW = [[h.W[a][b] - W[a][b] for b in range(len(W))] for a in range(len(W))]
            dv = [h.v[a] - v[a] for a in range(len(v))]
            deviations[j] = (dW, dv)
            rel += [abs(dW[a][b]) / abs(W[a][b])
                    for a in range(len(W)) for b in range(len(W)) if W[a][b] != 0]
            rel += [abs(dv[a]) / abs(v[a]) for a in range(len(v)) if v[a] != 0]
        return ParameterError(+max_abs, +max(rel, default=mpmath.mpf(0)), tuple(best), tuple(deviations))
