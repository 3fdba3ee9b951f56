"""The one query counter: every learner asks its black box through a :class:`QueryCounter`.

A counter calls the user's oracle and counts what it answered: ``queries``,
the longest query (``max_length``), the time spent in the oracle, optionally
per step of a learner, and the run's ``redraws`` (the run adds them). It
enforces an optional budget (:class:`~exactlearn.QueryBudgetExceeded`),
converts answers inside the guard (:meth:`QueryCounter.ask`, e.g. with a
field's ``element``), can answer a repeated query from memory (``remember``)
and turns any exception of the user's callable into an
:class:`~exactlearn.OracleError` chained to the original. Every error that
leaves it carries its :class:`Counts` (:meth:`~exactlearn.ExactLearnError.with_counts`).

A query's length is read before the oracle sees the list, so an oracle that
changes the list it was given cannot change the counts.
``KeyboardInterrupt``, ``SystemExit`` and other ``BaseException``\\ s that are not
``Exception``\\ s pass through unchanged (without counts).

>>> counter = QueryCounter(lambda tokens: len(tokens))
>>> counter([(1, 2), (3, 4)]), counter([(5, 6)])
(2, 1)
>>> counter.counts()
Counts(queries=2, max_length=2, redraws=0)
>>> try:
...     QueryCounter(lambda tokens: 1 // 0)([(1, 2)])
... except OracleError as exc:
...     print(exc.queries, type(exc.__cause__).__name__)
0 ZeroDivisionError
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Any

from .errors import ExactLearnError, InvalidArgumentError, OracleError, OracleOutputError, QueryBudgetExceeded

__all__ = ["Counts", "StepCount", "QueryCounter", "guarded_progress", "describe", "declared",
           "affine_argument"]


@dataclass(frozen=True)
class Counts:
    """What a run has asked so far: answered ``queries``, the longest (``max_length``), ``redraws``."""

    queries: int
    max_length: int
    redraws: int | None = None


@dataclass
class StepCount:
    """Queries and the longest query of one step of a learner."""

    queries: int = 0
    max_length: int = 0


def describe(exc: BaseException) -> str:
    """``"TypeName: message"`` of an exception, the message cut to 200 characters."""
    text = str(exc)
    if len(text) > 200:
        text = text[:197] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _key(tokens: list) -> tuple:
    """A query as a hashable key: its tokens run-length encoded (``(token, repeats)``; a copy query
    ``S_k`` repeats one token ``k`` times, so its key is two runs, not ``k + 1`` tuples)."""
    runs: list[list] = []
    last: Any = None
    for t in tokens:
        if runs and (t is last or tuple(t) == runs[-1][0]):
            runs[-1][1] += 1
        else:
            runs.append([tuple(t), 1])
        last = t
    return tuple((token, n) for token, n in runs)


class QueryCounter:
    """Calls ``oracle`` and counts (see the module docstring).

    * ``budget`` -- at most this many answered queries (``None``: no budget);
      one more raises :class:`~exactlearn.QueryBudgetExceeded` before calling.
    * ``remember`` -- each distinct query is sent once; asked again, its first
      answer is returned and nothing is counted (one query, one answer error).
    * ``step`` -- set by a learner with steps: the queries asked while it is
      set are also counted in ``steps[step]``.
    * ``tracks_redraws`` -- ``False`` for a learner whose redraws are counted
      elsewhere (the Transformer's step 1): its counts say ``redraws=None``.
    """

    def __init__(self, oracle: Callable[[list], Any], *, budget: int | None = None, remember: bool = False,
                 tracks_redraws: bool = True):
        self.oracle = oracle
        self.tracks_redraws = tracks_redraws
        self.budget = budget
        self.answers: dict[tuple, Any] | None = {} if remember else None
        self.queries = 0
        self.max_length = 0
        self.redraws = 0
        self.seconds = 0.0  # wall time spent inside the oracle
        self.step: Any = None  # a learner's step (an enum member), or None
        self.steps: dict[Any, StepCount] = {}

    def counts(self) -> Counts:
        return Counts(self.queries, self.max_length, self.redraws if self.tracks_redraws else None)

    def ask(self, tokens: list, convert: Callable[[Any], Any]) -> Any:
        """The answer to ``tokens`` converted by ``convert`` inside the guard: an exception of
        ``convert`` (reading the user's answer object) becomes an :class:`~exactlearn.OracleOutputError`."""
        answer = self(tokens)
        try:
            return convert(answer)
        except ExactLearnError as exc:
            exc.with_counts(self.counts())
            raise
        except Exception as exc:  # the user's answer object raised while being read
            raise OracleOutputError(
                f"reading the oracle's answer to query {self.queries} raised {describe(exc)}"
            ).with_counts(self.counts()) from exc

    def __call__(self, tokens: list) -> Any:
        if self.answers is None:
            return self._call(tokens)
        key = _key(tokens)
        if key not in self.answers:
            self.answers[key] = self._call(tokens)
        return self.answers[key]

    def remembers(self, tokens: list) -> bool:
        """Whether the answer to ``tokens`` is remembered (``remember=True``: asked before)."""
        return self.answers is not None and _key(tokens) in self.answers

    def _call(self, tokens: list) -> Any:
        length = len(tokens)
        if self.budget is not None and self.queries >= self.budget:
            raise QueryBudgetExceeded(
                f"the budget of max_queries = {self.budget} queries is spent ({self.queries} answered, "
                f"longest {self.max_length}, {self.redraws} redraws); raise max_queries to continue"
            ).with_counts(self.counts())
        start = perf_counter()
        try:
            answer = self.oracle(tokens)
        except ExactLearnError as exc:
            exc.with_counts(self.counts())
            raise
        except Exception as exc:
            where = "" if self.step is None else f", step {self.step}"
            raise OracleError(
                f"the oracle raised {describe(exc)} on query {self.queries + 1} (length {length}{where}), "
                f"after {self.queries} answered queries"
            ).with_counts(self.counts()) from exc
        finally:
            self.seconds += perf_counter() - start
        self._count(length)
        return answer

    def _count(self, length: int) -> None:
        self.queries += 1
        if length > self.max_length:
            self.max_length = length
        if self.step is not None:
            step = self.steps.setdefault(self.step, StepCount())
            step.queries += 1
            if length > step.max_length:
                step.max_length = length


def guarded_progress(progress: Callable[[int, int], None] | None,
                     counter: QueryCounter) -> Callable[[int, int], None] | None:
    """Wrap a progress callback so that its exceptions become :class:`~exactlearn.OracleError`
    carrying ``counter``'s counts."""
    if progress is None:
        return None

    def call(done: int, planned: int) -> None:
        try:
            progress(done, planned)
        except ExactLearnError:
            raise
        except Exception as exc:
            error = OracleError(f"the progress callback raised {describe(exc)} "
                                f"after {counter.queries} answered queries")
            raise error.with_counts(counter.counts()) from exc

    return call


def declared(oracle: Any, name: str) -> Any:
    """What the oracle declares as its attribute ``name`` (``d``, ``eps``, ``field``), or ``None``; an
    exception of the user's property becomes an :class:`~exactlearn.OracleError` (before any query)."""
    try:
        return getattr(oracle, name, None)
    except Exception as exc:
        error = OracleError(f"reading the oracle's {name} raised {describe(exc)}")
        raise error.with_counts(Counts(0, 0, 0)) from exc


def affine_argument(oracle: Any, affine: Any) -> bool:
    """``affine`` of a learner: ``True``/``False`` as given, ``None`` for what the oracle declares (its
    ``affine`` attribute, as :class:`~exactlearn.Oracle` and the torch target have), else ``False``.

    >>> affine_argument(print, None), affine_argument(print, True)
    (False, True)
    """
    if affine is None:
        affine = declared(oracle, "affine")
        affine = False if affine is None else affine
        if not isinstance(affine, bool):
            raise InvalidArgumentError(f"the oracle's attribute 'affine' must be True or False, got "
                                       f"{affine!r}; pass affine=True or affine=False")
    if not isinstance(affine, bool):
        raise InvalidArgumentError(f"affine must be True, False or None, got {affine!r}")
    return affine
