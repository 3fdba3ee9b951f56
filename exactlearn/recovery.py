"""What a learning run returns: the recovered heads and the honest counts.

A :class:`Recovery` holds the recovered canonical heads (each with its exact log
form ``log_W``, its rational ``exp_W`` when that exists, and ``v``), the number
of oracle queries the learner made and the longest one (counted by the learner
as it asked), the paper's formula for comparison, redraws, timings, and the
configurations it used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from flint import fmpq

from . import display
from .errors import InvalidArgumentError
from .exact import rational_str
from .logspace import LogMatrix, LogNumber
from .model import Head, MultiHeadAttention, entry_str, head_key
from .numberfield.exactfield import ExpMatrix
from .schedule import Configuration, Schedule, max_query_length, vector_excess
from .vector.model import VectorMultiHeadAttention

__all__ = ["RecoveredHead", "Recovery", "RECOVERY_FORMAT"]

RECOVERY_FORMAT = "exactlearn.recovery/1"


@dataclass(frozen=True, repr=False)
class RecoveredHead(display.Shown):
    """One recovered canonical head.

    ``log_W`` is the exact weight matrix ``W_h`` in log form (always available);
    ``exp_W`` is ``exp(W_h)`` entrywise as rationals, raising
    :class:`~exactlearn.NotRationalError` if an entry is not rational; ``v`` the
    value vector as ``flint.fmpq``. Over a number field ``log_W`` is an
    :class:`~exactlearn.numberfield.exactfield.ExpMatrix` (``exp(W_h)`` exact in
    the field) and ``v`` holds elements of the field. Affine attention
    (``learn(..., affine=True)``, over Q): ``log_w``, the score vector ``w_h`` in
    log form, and ``exp_w``; ``None`` otherwise.
    """

    log_W: LogMatrix | ExpMatrix
    v: tuple[Any, ...]
    log_w: tuple[LogNumber, ...] | None = None

    @classmethod
    def of(cls, W: LogMatrix, v: tuple[fmpq, ...], *, affine: bool = False) -> RecoveredHead:
        """The head of a run's ``(W, v)``; ``affine``: ``W`` is ``[[W_h, w_h], [0, 0]]``
        (:func:`exactlearn.learn.run_schedule`), split into ``log_W`` and ``log_w``."""
        if not affine:
            return cls(W, v)
        d, rows = W.d - 1, W.coefficients
        return cls(LogMatrix(W.base, tuple(row[:d] for row in rows[:d])), v,
                   tuple(LogNumber(W.base, rows[a][d]) for a in range(d)))

    @property
    def d(self) -> int:
        return len(self.v)

    @property
    def is_rational(self) -> bool:
        """True iff ``exp(W_h)`` (and ``exp(w_h)``) are rational (so the head is exp-parametrised)."""
        return self.log_W.is_rational and all(e.is_rational for e in self.log_w or ())

    @cached_property
    def exp_W(self) -> tuple[tuple[Any, ...], ...]:
        return self.log_W.exp()

    @cached_property
    def exp_w(self) -> tuple[fmpq, ...] | None:
        """``exp(w_h)`` entrywise (``None`` without ``log_w``); NotRationalError if not rational."""
        return None if self.log_w is None else tuple(e.exp() for e in self.log_w)

    @property
    def field(self) -> Any:
        """The number field of the entries (``None``: rationals)."""
        return getattr(self.log_W, "field", None)

    def __repr__(self) -> str:
        kind = "exp(W) rational" if self.is_rational else "exp(W) not rational (see log_W)"
        return display.summary("RecoveredHead", f"d={self.d}", [kind] + (["affine"] if self.log_w else []))

    def _lines(self) -> list[str]:
        return recovered_lines(self)

    def _latex_lines(self) -> list[str]:
        return [recovered_latex(self)]

    def to_head(self) -> Head:
        return Head(self.exp_W, self.v, self.exp_w)

    def key(self) -> tuple:
        """``self.to_head().key()`` without building (and validating) the Head: the order of heads."""
        exp_w = self.exp_w
        return head_key(self.exp_W, self.v, None if exp_w is None or all(e == 1 for e in exp_w) else exp_w)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"v": [entry_str(x) for x in self.v], "log_W": self.log_W.to_dict()}
        if self.is_rational:
            out["exp_W"] = [[entry_str(x) for x in row] for row in self.exp_W]
        if self.log_w is not None:
            out["log_w"] = [str(e) for e in self.log_w]
            if self.is_rational:
                out["exp_w"] = [rational_str(x) for x in self.exp_w or ()]
        return out


def recovered_lines(head: RecoveredHead, prefix: str = "") -> list[str]:
    """A recovered head's grids: ``exp_W`` when rational, else the exact ``log_W``; ``v``; ``exp_w`` or
    ``log_w``."""
    if head.is_rational:
        return display.head_lines(head, prefix)
    assert isinstance(head.log_W, LogMatrix)  # an ExpMatrix (a number field) is always exact
    return display.block(prefix, [("log_W", head.log_W.entries()), ("v", head.v), ("log_w", head.log_w)])


def recovered_latex(head: RecoveredHead, index: int | None = None) -> str:
    """A recovered head in LaTeX: ``exp_W`` when rational, else ``W`` (by sympy) and ``v``."""
    if head.is_rational:
        return display.head_latex(head, index)
    import sympy

    sub = "" if index is None else f"_{{{index}}}"
    assert isinstance(head.log_W, LogMatrix)
    return rf"W{sub} = {sympy.latex(head.log_W.to_sympy())},\quad v{sub} = {display.pmatrix([head.v])}"


@dataclass(repr=False)
class Recovery(display.Shown):
    """The result of :func:`exactlearn.learn`.

    Counts are measured, not computed: ``queries`` is how many times this call
    queried the oracle (verification queries excluded, see
    ``verification_queries``), ``max_length`` the longest sequence it sent.
    ``formula`` is the paper's count ``4Hd^2 - 2H + 1`` for the ``H`` (or bound
    ``H0``) the learner was given, ``planned`` the count of the schedule actually
    run (the same for ``schedule="paper"``, smaller for ``"lean"``); with zero
    ``redraws``, ``queries == planned``.
    """

    d: int
    heads: tuple[RecoveredHead, ...]
    queries: int
    max_length: int
    redraws: int
    schedule: Schedule
    heads_known: int | None
    heads_bound: int | None
    seed: Any
    token_bound: int
    verification_queries: int = 0
    seconds_total: float = 0.0
    seconds_oracle: float = 0.0
    configurations: list[Configuration] = field(default_factory=list, repr=False)
    redraw_reasons: list[str] = field(default_factory=list, repr=False)
    # lean schedule, two heads with equal v: later configurations matched by queries
    lean_fallback: bool = False
    notes: list[str] = field(default_factory=list, repr=False)  # for the reader: lean fallback, lean caveat
    affine: bool = False  # learned as affine attention (docs/algorithm.md section 9): heads carry w_h
    c0: fmpq = fmpq(0)  # the output offset (affine attention)
    outputs: int | None = None  # vector answers of this length (docs/algorithm.md section 10): V_h

    @property
    def num_heads(self) -> int:
        """The number of canonical heads found (the true ``H``, also with a bound)."""
        return len(self.heads)

    @property
    def schedule_heads(self) -> int:
        """The ``H`` the schedule was sized with: the known ``H`` or the bound ``H0``."""
        bound = self.heads_known if self.heads_known is not None else self.heads_bound
        assert bound is not None  # learn() is given exactly one of them
        return bound

    @property
    def formula(self) -> int:
        """The paper's count ``4Hd^2 - 2H + 1`` (``H0`` in place of ``H`` with a bound); affine
        attention: ``4Hd(d+1) - 2H + 1``."""
        return Schedule.PAPER.query_count(self.d, self.schedule_heads, affine=self.affine)

    @property
    def formula_max_length(self) -> int:
        """``2H + 1`` (``2H0 + 1`` with a bound)."""
        return max_query_length(self.schedule_heads)

    @property
    def lean_formula(self) -> int:
        """The lean schedule's count ``d(2H+1) + (d^2-1)(2H-1)`` for the same ``H``/``H0``."""
        return Schedule.LEAN.query_count(self.d, self.schedule_heads, affine=self.affine)

    @property
    def planned(self) -> int:
        """The count of the schedule that ran, without redraws."""
        return Schedule(self.schedule).query_count(self.d, self.schedule_heads, fallback=self.lean_fallback,
                                                   affine=self.affine, outputs=self.outputs)

    @property
    def counts_as_planned(self) -> bool:
        """Queries and maximum length equal the schedule's formulas exactly."""
        return self.queries == self.planned and self.max_length == self.planned_max_length

    @property
    def planned_max_length(self) -> int:
        """The longest query of the schedule that ran: ``2H + 1``, or ``H + 2`` with vector answers of length
        ``D >= H`` (docs/algorithm.md section 10)."""
        H = self.schedule_heads
        return max_query_length(H) if self.outputs is None else H + vector_excess(self.outputs, H) + 1

    @property
    def seconds_learner(self) -> float:
        """Time spent outside the oracle."""
        return self.seconds_total - self.seconds_oracle

    @property
    def is_rational(self) -> bool:
        return all(h.is_rational for h in self.heads)

    @cached_property
    def model(self) -> MultiHeadAttention:
        """The recovered canonical model (raises NotRationalError if some exp_W is not rational; vector
        answers: :attr:`vector_model`)."""
        if self.outputs is not None:
            raise InvalidArgumentError("this recovery has vector outputs: its model is rec.vector_model")
        heads = [h.to_head() for h in self.heads]
        if not heads:
            return MultiHeadAttention._unchecked([], self.d, c0=self.c0)
        return MultiHeadAttention(heads, self.c0).canonical()

    @cached_property
    def vector_model(self) -> VectorMultiHeadAttention:
        """The recovered canonical model of vector answers (docs/algorithm.md section 10): heads with
        ``V_h``; NotRationalError if some exp_W is not rational."""
        if self.outputs is None:
            raise InvalidArgumentError("this recovery has scalar outputs: its model is rec.model")
        heads = [h.to_head() for h in self.heads]  # VectorHead of a VectorRecoveredHead
        return VectorMultiHeadAttention(heads, d=self.d, outputs=self.outputs).canonical()

    def to_dict(self) -> dict:
        """A JSON-ready summary (rationals as ``"p/q"`` strings)."""
        out: dict[str, Any] = {
            "format": RECOVERY_FORMAT,
            "d": self.d,
            "num_heads": self.num_heads,
            "heads_known": self.heads_known,
            "heads_bound": self.heads_bound,
            "schedule": str(self.schedule),
            "queries": self.queries,
            "formula": self.formula,
            "lean_formula": self.lean_formula,
            "planned": self.planned,
            "max_length": self.max_length,
            "formula_max_length": self.formula_max_length,
            "redraws": self.redraws,
            "lean_fallback": self.lean_fallback,
            "redraw_reasons": list(self.redraw_reasons),
            "notes": list(self.notes),
            "verification_queries": self.verification_queries,
            "seed": self.seed,
            "token_bound": self.token_bound,
            "seconds_total": self.seconds_total,
            "seconds_oracle": self.seconds_oracle,
            "heads": [h.to_dict() for h in self.heads],
        }
        if self.outputs is not None:
            out["outputs"] = self.outputs
        if self.affine:
            out["affine"] = True
            out["c0"] = rational_str(self.c0)
        if self.is_rational:
            out["model"] = (self.model if self.outputs is None else self.vector_model).to_dict()
        return out

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **({"indent": 2} | kwargs))

    def __repr__(self) -> str:
        return recovery_summary(self)

    def _lines(self) -> list[str]:
        over = self.heads[0].field if self.heads else None
        out = display.wrapped(repr(self)) + ([f"over {over}"] if over is not None else [])
        for i, h in enumerate(self.heads):
            out += recovered_lines(h, f"heads[{i}].")
        return out + ([f"c0 = {display.text(self.c0)}"] if self.affine else [])

    def _latex_lines(self) -> list[str]:
        out = [r"\text{" + recovery_summary(self)[1:-1] + "}"]
        out += [recovered_latex(h, i) for i, h in enumerate(self.heads)]
        return out + ([f"c_0 = {display.latex(self.c0)}"] if self.affine else [])


def recovery_summary(rec: Recovery) -> str:
    """``<Recovery d=3 H=2: 29 queries (formula 29), max length 5, 0 redraws>``: the measured counts
    beside the formula of the schedule that ran (``lean formula`` for the lean schedule)."""
    bound = "" if rec.heads_known is not None else f" (bound {rec.heads_bound})"
    head = f"d={rec.d} H={rec.num_heads}{bound}"
    over = rec.heads[0].field if rec.heads else None
    tags = (["affine"] if rec.affine else []) + ([f"over Q({over.name})"] if over is not None else [])
    formula = "formula" if rec.schedule == Schedule.PAPER else f"{rec.schedule} formula"
    details = tags + [f"{rec.queries} queries ({formula} {rec.planned})", f"max length {rec.max_length}",
                      display.plural(rec.redraws, "redraw")]
    return display.summary("Recovery", head, details + ([] if rec.is_rational else ["exp(W) not rational"]))
