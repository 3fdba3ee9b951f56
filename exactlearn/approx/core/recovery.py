"""What the approximate learner returns or refuses with, and how far a result is from a known model.

:class:`ApproxRecovery` (real heads :class:`ApproxHead` with error radii, and the
counts measured as the learner asked), :class:`AmbiguousAnswersError` (the
refusal when the noise leaves the heads undetermined), and the comparison with a
known model: :func:`truth_parameters`, :func:`parameter_error`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import permutations
from typing import Any

import mpmath
from flint import arb, fmpq

from ... import display
from ...errors import InvalidArgumentError, RedrawBudgetExceeded
from ...exact import rational_str
from ...model import MultiHeadAttention
from ...schedule import Configuration, Schedule, configuration_count, max_query_length
from ...states import Redraw, RedrawReason
from .balls import DEFAULT_PRECISION, to_arb, to_mpf, working_precision
from .counts import query_length
from .models import RealMultiHeadAttention

__all__ = [
    "InexactModelWarning",
    "ApproxHead",
    "ApproxRecovery",
    "AmbiguousAnswersError",
    "ParameterError",
    "parameter_error",
    "truth_parameters",
    "truth_offsets",
]


class AmbiguousAnswersError(RedrawBudgetExceeded):
    """Within the declared error bound ``eps`` the answers do not determine the heads.

    Raised instead of guessing when configuration after configuration could not
    be resolved: the pairing of the heads of two linked configurations was not
    unique (pole products and residue combinations overlap more than one perfect
    matching's targets), or the poles/residues of a configuration could not be
    resolved. ``reasons`` lists every redraw; ``ambiguous_matchings`` counts
    those caused by an ambiguous pairing.
    """

    def __init__(self, message: str, reasons: Sequence[str] = (), notes: Sequence[str] = ()):
        super().__init__(message, reasons=reasons)
        self.notes = list(notes)
        self.ambiguous_matchings = sum(
            1 for r in self.reasons if isinstance(r, Redraw) and r.reason is RedrawReason.AMBIGUOUS_PAIRING)


class InexactModelWarning(UserWarning):
    """:func:`~exactlearn.approx.learn_approx` returns a model whose estimated error exceeds
    ``ApproxSettings.warn_relative`` of its largest parameter, or whose answers scatter by more
    than the declared ``eps`` (the result's ``notes`` say which)."""


@dataclass(frozen=True, repr=False)
class ApproxHead(display.Shown):
    """One recovered head: the real ``W`` (d x d mpmath numbers, not its exponential) and ``v``.

    ``W_radius`` / ``v_radius``: error radii. From a rigorous run they are
    certified (if the oracle is an attention with the stated number of heads
    answering within ``eps``, the true entry lies within the radius of the
    returned one); otherwise they are first-order error estimates. Affine
    attention (``learn_approx(..., affine=True)``): ``w``, the score vector, and
    ``w_radius``; ``None`` otherwise.
    """

    W: list[list[mpmath.mpf]]
    v: list[mpmath.mpf]
    W_radius: list[list[mpmath.mpf]]
    v_radius: list[mpmath.mpf]
    w: list[mpmath.mpf] | None = None
    w_radius: list[mpmath.mpf] | None = None

    @property
    def d(self) -> int:
        return len(self.v)

    @property
    def radius(self) -> mpmath.mpf:
        """The largest certified radius of this head's parameters."""
        radii = [r for row in self.W_radius for r in row] + list(self.v_radius)
        return max(radii + list(self.w_radius or ()))

    def __repr__(self) -> str:
        return display.summary("ApproxHead", f"d={self.d}", [f"radius {display.short(self.radius)}"]
                               + (["affine"] if self.w is not None else []))

    def _lines(self) -> list[str]:
        return approx_head_lines(self)

    def _latex_lines(self) -> list[str]:
        return [approx_head_latex(self)]


def approx_head_lines(head: ApproxHead, prefix: str = "") -> list[str]:
    """``W``, ``v`` (and ``w``) to :data:`~exactlearn.display.DIGITS` digits, and the head's radius."""
    return display.block(prefix, [("W", head.W), ("v", head.v), ("w", head.w),
                                  ("radius", display.short(head.radius))])


def approx_head_latex(head: ApproxHead, index: int | None = None) -> str:
    sub = "" if index is None else f"_{{{index}}}"
    out = rf"W{sub} = {display.pmatrix(head.W)},\quad v{sub} = {display.pmatrix([head.v])}"
    return out + ("" if head.w is None else rf",\quad w{sub} = {display.pmatrix([head.w])}")


@dataclass(repr=False)
class ApproxRecovery(display.Shown):
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
    #: the measurement configurations' copy counts when they are not the paper's ``0..2H``
    #: (:mod:`~exactlearn.approx.core.counts`); ``None``: the paper's schedule
    copy_counts: tuple[int | Fraction, ...] | None = None
    #: of ``queries``: those of a first run that was learned again (:func:`~exactlearn.approx.learn_approx`
    #: retries an unguided default run whose estimate misses ``ApproxSettings.retry_relative``)
    retry_queries: int = 0
    #: the answers' root-mean-square error as their value residuals show it, and the largest parameter
    #: error it implies (a statistical estimate: :mod:`exactlearn.approx.bounds.estimate`), absolute and
    #: relative to the largest parameter; ``None`` without residuals
    noise_estimate: float | None = None
    error_estimate: float | None = None
    relative_error_estimate: float | None = None
    #: the same estimate per matrix: the largest over the heads of a ``W_h``'s or ``v_h``'s estimated
    #: error over that matrix's own largest entry (``w_h``, ``c0`` and a matrix within its estimated
    #: error of zero over the largest parameter)
    matrix_error_estimate: float | None = None
    #: the scatter float64 rounding alone would give the estimate (below it the estimate shows no noise)
    noise_floor: float = 0.0
    #: the configurations whose heads were matched by matching queries (the rest were labelled by their
    #: residues, docs/approximate.md "Labels by residues"); ``None``: every one (the paper's schedule)
    chained: int | None = None
    #: learned as affine attention (docs/algorithm.md section 9): heads carry ``w``, and the offset ``c0``
    affine: bool = False
    c0: mpmath.mpf | None = None
    c0_radius: mpmath.mpf | None = None

    def summary(self) -> str:
        """What the result is worth, in words: the bound under ``eps`` and the estimate from the answers.

        The bound ``error_bound`` holds (to first order; certified if ``rigorous``) when every answer is
        within ``eps``; the estimate is what the answers' own scatter implies. A user acts on the
        estimate when ``eps`` is a cautious declaration, on the bound when it must hold."""
        bound = (f"parameter error at most {mpmath.nstr(self.error_bound, 2)} "
                 f"({'certified' if self.rigorous else 'first order'}, if every answer is within eps = "
                 f"{mpmath.nstr(to_mpf(self.eps), 2)})")
        if self.error_estimate is None:
            return bound + "; no estimate from the answers (no residuals)"
        return (bound + f"; the answers scatter by about {self.noise_estimate:.1e}, which puts the parameter "
                f"error near {self.error_estimate:.1e} ({self.relative_error_estimate:.1e} of the largest "
                f"parameter{self._per_matrix()}; an estimate, not a bound)")

    def _per_matrix(self) -> str:
        """The per-matrix estimate, when it says more than the relative one."""
        per = self.matrix_error_estimate
        rel = self.relative_error_estimate
        return "" if per is None or rel is None or per <= rel else f", {per:.1e} of its own matrix at worst"

    @property
    def num_heads(self) -> int:
        return len(self.heads)

    @property
    def schedule_heads(self) -> int:
        """The known ``H`` the paper schedule was sized with."""
        return self.num_heads

    @property
    def formula(self) -> int:
        """The paper's count ``4Hd^2 - 2H + 1`` for the ``H`` heads learned (affine attention:
        ``4Hd(d+1) - 2H + 1``)."""
        return Schedule.PAPER.query_count(self.d, self.schedule_heads, affine=self.affine)

    @property
    def formula_max_length(self) -> int:
        """``2H + 1``."""
        return max_query_length(self.schedule_heads)

    @property
    def planned(self) -> int:
        """The schedule's count without redraws: ``m`` copy counts for each of the ``n`` configurations
        (``d^2``, affine ``d(d + 1)``) and ``l`` for each link among the ``chained`` ones,
        ``m n + l (chained - 1)``: the paper's ``m = 2H + 1``, ``l = 2H - 1`` (its formula when all ``n``
        are chained), or ``copy_counts``' ``m`` and ``l = m - 1`` (every count but ``0``)."""
        H = self.schedule_heads
        m, link = (2 * H + 1, 2 * H - 1) if self.copy_counts is None else (len(self.copy_counts),
                                                                           len(self.copy_counts) - 1)
        n = configuration_count(self.d, affine=self.affine)
        chained = n if self.chained is None else self.chained
        return m * n + link * (chained - 1)

    @property
    def planned_max_length(self) -> int:
        """The longest query of the schedule run: ``2H + 1``, or the largest copy count plus one (a copy
        ratio ``k/m``: ``k + m``)."""
        if self.copy_counts is None:
            return self.formula_max_length
        return max(query_length(t) for t in self.copy_counts)

    @property
    def counts_as_planned(self) -> bool:
        """Queries and maximum length equal the schedule's formulas exactly."""
        return self.queries == self.planned and self.max_length == self.planned_max_length

    @property
    def error_bound(self) -> mpmath.mpf:
        """The largest radius over all parameters (certified if ``rigorous``, else a first-order estimate)."""
        return max([h.radius for h in self.heads] + ([self.c0_radius] if self.c0_radius is not None else []))

    @property
    def measurements(self) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """The integer tokens ``(x_j, z_j)`` of the measurement configurations (before scaling)."""
        return [(c.x, c.z) for c in self.configurations]

    def model(self) -> RealMultiHeadAttention:
        """The recovered model (midpoints) as a :class:`RealMultiHeadAttention`."""
        if not self.affine:
            return RealMultiHeadAttention([h.W for h in self.heads], [h.v for h in self.heads])
        return RealMultiHeadAttention([h.W for h in self.heads], [h.v for h in self.heads],
                                      [h.w for h in self.heads], self.c0 if self.c0 is not None else 0)

    def __repr__(self) -> str:
        kind = "certified" if self.rigorous else "estimated"
        details = (["affine"] if self.affine else []) + [
            f"{self.queries} queries (formula {self.formula})", f"max length {self.max_length}",
            display.plural(self.redraws, "redraw"), f"eps {display.short(self.eps)}",
            f"error bound {display.short(self.error_bound)} ({kind})"]
        return display.summary("ApproxRecovery", f"d={self.d} H={self.num_heads}", details)

    def _lines(self) -> list[str]:
        out = display.wrapped(repr(self))
        for i, h in enumerate(self.heads):
            out += approx_head_lines(h, f"heads[{i}].")
        return out + ([f"c0 = {display.text(self.c0)}"] if self.c0 is not None else [])

    def _latex_lines(self) -> list[str]:
        out = [r"\text{" + repr(self)[1:-1] + "}"]
        out += [approx_head_latex(h, i) for i, h in enumerate(self.heads)]
        return out + ([f"c_0 = {display.latex(self.c0)}"] if self.c0 is not None else [])

    def to_dict(self) -> dict:
        def s(x):
            return mpmath.nstr(x, mpmath.mp.dps, strip_zeros=False)
        out = {
            "format": "exactlearn.approx-recovery/1",
            "d": self.d,
            "num_heads": self.num_heads,
            "queries": self.queries,
            "formula": self.formula,
            "planned": self.planned,
            "chained": self.chained,
            "max_length": self.max_length,
            "formula_max_length": self.formula_max_length,
            "redraws": self.redraws,
            "redraw_reasons": list(self.redraw_reasons),
            "eps": rational_str(self.eps),
            "precision_bits": self.precision,
            "scale": rational_str(self.scale),
            "copy_counts": None if self.copy_counts is None else [
                t if isinstance(t, int) else str(t) for t in self.copy_counts],
            "seed": self.seed,
            "token_bound": self.token_bound,
            "rigorous": self.rigorous,
            "error_bound": s(self.error_bound),
            "noise_estimate": self.noise_estimate,
            "error_estimate": self.error_estimate,
            "matrix_error_estimate": self.matrix_error_estimate,
            "heads": [{"W": [[s(e) for e in row] for row in h.W], "v": [s(e) for e in h.v],
                       "W_radius": [[s(e) for e in row] for row in h.W_radius],
                       "v_radius": [s(e) for e in h.v_radius]} for h in self.heads],
        }
        if self.affine:
            for head, h in zip(out["heads"], self.heads):
                head["w"], head["w_radius"] = [s(e) for e in h.w or ()], [s(e) for e in h.w_radius or ()]
            out["affine"], out["c0"], out["c0_radius"] = True, s(self.c0), s(self.c0_radius)
        return out


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


def truth_offsets(truth: Any, precision: int = DEFAULT_PRECISION
                  ) -> tuple[list[list[mpmath.mpf]], mpmath.mpf]:
    """The score vectors ``w_h`` of a known model's canonical heads (in the order of
    :func:`truth_parameters`) and its offset ``c0`` (zeros for a model without them)."""
    with working_precision(precision):
        if isinstance(truth, MultiHeadAttention):
            canon = truth.canonical()
            ws = [[to_mpf(arb(e).log()) for e in (h.exp_w or [1] * truth.d)] for h in canon.heads]
            return ws, to_mpf(to_arb(canon.c0))
        if isinstance(truth, RealMultiHeadAttention):
            real = truth.canonical()
            if real is None:
                return [], to_mpf(to_arb(truth.c0))
            return [[to_mpf(to_arb(e)) for e in w] for w in real.score_vectors()], to_mpf(to_arb(real.c0))
        return [[mpmath.mpf(0)] * len(v) for _, v in truth], mpmath.mpf(0)


@dataclass(frozen=True)
class ParameterError:
    """How far a recovery is from a known model (mpmath numbers; floats nowhere).

    ``max_abs`` = max over all heads and entries of ``|W_hat - W|`` and
    ``|v_hat - v|`` (the infinity norm the constant ``C`` bounds);
    ``max_rel`` = max of ``|error| / |true entry|`` over nonzero entries;
    ``permutation[i]`` = the truth head matched to recovered head ``i``;
    ``deviations[j]`` = ``(W_hat - W, v_hat - v)`` for truth head ``j``. An
    affine recovery also compares ``w_h`` (``w_deviations[j] = w_hat - w``, in
    ``max_abs`` and ``max_rel``) and ``c0`` (``c0_deviation``, in ``max_abs``).
    """

    max_abs: mpmath.mpf
    max_rel: mpmath.mpf
    permutation: tuple[int, ...]
    deviations: tuple
    w_deviations: tuple | None = None
    c0_deviation: mpmath.mpf | None = None


def _flat(head: ApproxHead, affine: bool) -> list:
    """The head's parameters in one list: ``W`` row by row, ``v`` (and ``w``)."""
    return [x for row in head.W for x in row] + list(head.v) + (list(head.w or ()) if affine else [])


def least_error_matching(table: Sequence[Sequence[Any]]) -> tuple[int, ...]:
    """``p`` with ``p[i]`` the known head matched to recovered head ``i``, ``table[i][j]`` their error:
    the permutation of least largest error up to 7 heads, else greedy (fine for well-separated heads).

    >>> least_error_matching([[5, 1], [0, 4]])
    (1, 0)
    """
    H = len(table)
    if H <= 7:
        return min(permutations(range(H)), key=lambda p: max(table[i][p[i]] for i in range(H)))
    greedy: list[int] = []
    for i in range(H):
        greedy.append(min((j for j in range(H) if j not in greedy), key=lambda j: table[i][j]))
    return tuple(greedy)


def parameter_error(recovery: ApproxRecovery, truth: Any) -> ParameterError:
    """Compare a recovery with a known model, matching heads by the permutation of least error."""
    true = truth_parameters(truth, recovery.precision)
    if len(true) != recovery.num_heads:
        raise InvalidArgumentError(
            f"the recovery has {recovery.num_heads} heads but the model has {len(true)} canonical heads"
        )
    H, affine = len(true), recovery.affine
    ws, c0 = truth_offsets(truth, recovery.precision)
    flat_true = [[x for row in W for x in row] + list(v) + (list(ws[j]) if affine else [])
                 for j, (W, v) in enumerate(true)]
    with mpmath.mp.workprec(recovery.precision):
        flat_rec = [_flat(h, affine) for h in recovery.heads]
        table = [[max(abs(a - b) for a, b in zip(flat_rec[i], flat_true[j])) for j in range(H)]
                 for i in range(H)]
        best = least_error_matching(table)
        max_abs = max(table[i][best[i]] for i in range(H))
        rel = [abs(a - b) / abs(b) for i, j in enumerate(best)
               for a, b in zip(flat_rec[i], flat_true[j]) if b != 0]
        deviations: list = [None] * H
        w_deviations: list = [None] * H
        for i, j in enumerate(best):
            h, (W, v) = recovery.heads[i], true[j]
            deviations[j] = ([[h.W[a][b] - W[a][b] for b in range(len(W))] for a in range(len(W))],
                             [h.v[a] - v[a] for a in range(len(v))])
            w_deviations[j] = [x - y for x, y in zip(h.w or (), ws[j])]
        c0_deviation = None
        if affine:
            c0_deviation = (recovery.c0 if recovery.c0 is not None else mpmath.mpf(0)) - c0
            max_abs = max(max_abs, abs(c0_deviation))
            rel += [abs(c0_deviation) / abs(c0)] if c0 != 0 else []
        return ParameterError(+max_abs, +max(rel, default=mpmath.mpf(0)), tuple(best), tuple(deviations),
                              tuple(w_deviations) if affine else None, c0_deviation)
