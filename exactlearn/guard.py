"""Guards around the user's callables: failures become :class:`~exactlearn.OracleError`.

:func:`learn` never calls the user's oracle or progress callback directly. It
calls a :class:`GuardedOracle`, which counts what it answered, enforces an
optional query budget (:class:`~exactlearn.QueryBudgetExceeded`) and turns any
exception of the callable (other than an :class:`~exactlearn.ExactLearnError`,
which passes through) into an :class:`~exactlearn.OracleError` chained to the
original, carrying the counts so far.

>>> guarded = GuardedOracle(lambda tokens: 1 // 0)
>>> try:
...     guarded([(1, 2)])
... except OracleError as exc:
...     print(exc.queries, type(exc.__cause__).__name__)
0 ZeroDivisionError
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import ExactLearnError, OracleError, QueryBudgetExceeded

__all__ = ["GuardedOracle", "attach_counts", "guarded_progress"]


def attach_counts(exc: ExactLearnError, queries: int, max_length: int, redraws: int | None) -> None:
    """Record the counts so far on an error (unless it already carries them)."""
    for name, value in (("queries", queries), ("max_length", max_length), ("redraws", redraws)):
        if getattr(exc, name, None) is None:
            setattr(exc, name, value)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    if len(text) > 200:
        text = text[:197] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class GuardedOracle:
    """Calls ``oracle`` and counts; at most ``max_queries`` calls (``None``: no budget).

    ``redraws`` is a callable returning the run's redraw count, read when an
    error is raised (the guard itself does not know about redraws).
    """

    def __init__(self, oracle: Callable[[list], Any], max_queries: int | None = None,
                 redraws: Callable[[], int] | None = None):
        self.oracle = oracle
        self.max_queries = max_queries
        self.redraws = redraws
        self.queries = 0
        self.max_length = 0

    def _redraws(self) -> int | None:
        return None if self.redraws is None else self.redraws()

    def __call__(self, tokens: list) -> Any:
        if self.max_queries is not None and self.queries >= self.max_queries:
            error = QueryBudgetExceeded(
                f"the budget of max_queries = {self.max_queries} queries is spent ({self.queries} answered, "
                f"longest {self.max_length}, {self._redraws()} redraws); raise max_queries to continue"
            )
            attach_counts(error, self.queries, self.max_length, self._redraws())
            raise error
        try:
            answer = self.oracle(tokens)
        except ExactLearnError as exc:
            attach_counts(exc, self.queries, self.max_length, self._redraws())
            raise
        except Exception as exc:
            raise OracleError(
                f"the oracle raised {_describe(exc)} on query {self.queries + 1} (length {len(tokens)}), "
                f"after {self.queries} answered queries",
                queries=self.queries, max_length=self.max_length, redraws=self._redraws(),
            ) from exc
        self.queries += 1
        if len(tokens) > self.max_length:
            self.max_length = len(tokens)
        return answer


def guarded_progress(
    progress: Callable[[int, int], None] | None, counts: Callable[[], tuple[int, int, int | None]]
) -> Callable[[int, int], None] | None:
    """Wrap a progress callback so that its exceptions become :class:`~exactlearn.OracleError`.

    ``counts()`` returns ``(queries, max_length, redraws)`` at the time of the failure.
    """
    if progress is None:
        return None

    def call(done: int, planned: int) -> None:
        try:
            progress(done, planned)
        except ExactLearnError:
            raise
        except Exception as exc:
            queries, max_length, redraws = counts()
            raise OracleError(f"the progress callback raised {_describe(exc)} "
                              f"after {queries} answered queries",
                              queries=queries, max_length=max_length, redraws=redraws) from exc

    return call
