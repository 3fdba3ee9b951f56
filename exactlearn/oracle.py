"""The black box: wraps a model (or any callable) and keeps its own log of queries.

Query counts reported by exactlearn's checks are read from this log (what the
oracle actually answered), never computed from a formula.

>>> from exactlearn import MultiHeadAttention
>>> oracle = Oracle(MultiHeadAttention.random(2, 1, seed=1), budget=2)
>>> _ = oracle([(1, 0), (0, 1)])
>>> oracle.queries, oracle.max_length
(1, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from time import perf_counter, thread_time
from typing import Any

from .errors import InvalidArgumentError, InvalidQueryError
from .exact import NOTHING_TRUSTED, Token, as_tokens, oracle_value
from .limits import MAX_OUTPUT_BITS
from .model import MultiHeadAttention
from .numberfield import NumberField
from .numberfield.exactfield import ExactNumberField
from .querylog import QueryLog
from .validate import integer, optional_integer
from .vector.field import vector_answer

__all__ = ["Oracle"]


class Oracle(QueryLog):
    """A logged, optionally budgeted black box answering exact queries.

    Parameters
    ----------
    target:
        A :class:`~exactlearn.MultiHeadAttention` or any callable taking a list of
        integer tuples and returning an exact rational.
    d:
        Token width; taken from ``target.d`` when the target has one. Queries with
        tokens of another length are refused with :class:`~exactlearn.InvalidQueryError`.
    budget:
        If given, the number of queries the oracle will answer; one more raises
        :class:`~exactlearn.QueryBudgetExceeded` (the target is not called).
    keep_transcript:
        Keep every ``(tokens, output)`` pair in :attr:`transcript`.
    max_bits:
        For a :class:`~exactlearn.MultiHeadAttention` target: a query whose
        exact answer would need more than about this many bits is refused with
        :class:`~exactlearn.InvalidQueryError` before computing (default
        :data:`exactlearn.limits.MAX_OUTPUT_BITS`).
    field:
        The :class:`~exactlearn.NumberField` the answers are in (taken from
        ``target.field`` when the target has one): answers are then elements of
        it, and an answer outside it (or in another field) is refused with
        :class:`~exactlearn.OracleOutputError`. ``None``: exact rationals.

    Notes
    -----
    The log (:class:`~exactlearn.querylog.QueryLog`): :attr:`queries` (answered
    queries), :attr:`lengths` (a Counter of sequence lengths), :attr:`max_length`,
    :attr:`seconds` (time spent answering).
    """

    def __init__(
        self,
        target: Callable[[list[Token]], Any],
        *,
        d: int | None = None,
        budget: int | None = None,
        keep_transcript: bool = False,
        max_bits: int = MAX_OUTPUT_BITS,
        field: NumberField | None = None,
    ):
        if not callable(target):
            raise InvalidArgumentError(f"the oracle's target must be callable, got {type(target).__name__}")
        if d is None:
            d = getattr(target, "d", None)
        self.max_bits = integer("max_bits", max_bits)
        self.target = target
        self.d = optional_integer("d", d)
        self.set_budget(budget)
        self.keep_transcript = keep_transcript
        found = getattr(target, "field", None)
        if field is None and isinstance(found, NumberField):
            field = found
        if field is not None and not isinstance(field, NumberField):
            raise InvalidArgumentError(f"field must be an exactlearn.NumberField, got {type(field).__name__}")
        self.field = field
        self._convert: Callable[[Any], Any] = (oracle_value if field is None
                                               else ExactNumberField(field).element)
        outputs = getattr(target, "outputs", None)
        self._outputs = outputs if isinstance(outputs, int) and field is None else None
        if self._outputs is not None:  # vector answers: a tuple of exact rationals of this length
            self._convert = partial(vector_answer, width=self._outputs)
        self.reset()

    @property
    def affine(self) -> bool:
        """Whether the target is affine attention (a :class:`~exactlearn.MultiHeadAttention` with biases):
        :func:`exactlearn.learn` then learns ``w_h`` and ``c0`` by default."""
        return isinstance(self.target, MultiHeadAttention) and self.target.is_affine

    @property
    def outputs(self) -> int | None:
        """The length of the target's vector answers (a :class:`~exactlearn.vector.VectorMultiHeadAttention`,
        or any target with an integer ``outputs``), ``None`` for scalar answers: :func:`exactlearn.learn`
        then learns ``V_h`` (docs/algorithm.md section 10)."""
        return self._outputs

    def reset(self) -> None:
        """Forget the log and the transcript (the budget counts from zero again)."""
        super().reset()
        self._trusted: tuple = NOTHING_TRUSTED  # the last query's x and z, checked (none yet)
        self.transcript: list[tuple[tuple[Token, ...], Any]] = []

    def __call__(self, tokens: Sequence[Sequence[int]]) -> Any:
        query = as_tokens(tokens, self.d, self._trusted)
        self._trusted = (query[0], query[-1])  # a copy query's x and z: the next query repeats them
        if self.budget is not None:
            self.check_budget()
        wall, cpu = perf_counter(), thread_time()  # as ``with self.answering(query):``, inline (per query)
        value = self._convert(self._ask(query))
        self.log_answer(len(query), wall, cpu)
        if self.keep_transcript:
            self.transcript.append((query, value))
        return value

    def _ask(self, query: tuple[Token, ...]) -> Any:
        evaluate = getattr(self.target, "evaluate", None)
        if evaluate is not None and hasattr(self.target, "canonical"):
            try:
                if isinstance(self.target, MultiHeadAttention):  # the query is already validated
                    return evaluate(query, max_bits=self.max_bits)
                return evaluate(query)
            except OverflowError:
                raise InvalidQueryError(
                    "the token entries are too large: the exact scores exp(x^T W y) would need exponents "
                    "beyond what exact arithmetic can represent"
                ) from None
        return self.target([tuple(t) for t in query])

    def __repr__(self) -> str:
        budget = "" if self.budget is None else f", budget={self.budget}"
        return f"Oracle({self.target!r}, queries={self.queries}, max_length={self.max_length}{budget})"
