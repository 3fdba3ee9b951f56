"""The query log every oracle keeps: what it answered, how long, and an optional budget.

:class:`exactlearn.Oracle`, the approximate oracles of :mod:`exactlearn.approx`,
the torch target and the symbolic oracle all mix in :class:`QueryLog`, so their
counts are measured the same way: a query is logged only once it is answered.

>>> class Echo(QueryLog):
...     def __init__(self):
...         self.reset()
...     def __call__(self, tokens):
...         with self.answering(tokens):
...             return len(tokens)
>>> echo = Echo()
>>> echo([(1,), (2,)]), echo([(3,)])
(2, 1)
>>> echo.queries, echo.max_length, dict(echo.lengths)
(2, 2, {2: 1, 1: 1})
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sized
from typing import Any

from .errors import QueryBudgetExceeded
from .validate import optional_integer

__all__ = ["QueryLog", "logged"]


class QueryLog:
    """Mixin: the log of an oracle.

    Attributes: :attr:`queries` (answered queries), :attr:`lengths` (a
    ``Counter`` of their sequence lengths), :attr:`max_length`, :attr:`seconds`
    and :attr:`cpu_seconds` (wall and thread CPU time spent answering), and
    :attr:`budget` (``None``, or the number of queries the oracle answers
    before raising :class:`~exactlearn.QueryBudgetExceeded`).

    A subclass calls :meth:`reset` (and :meth:`set_budget` if it has a budget)
    in ``__init__`` and answers inside ``with self.answering(query):``.
    """

    budget: int | None = None
    queries: int
    lengths: Counter[int]
    seconds: float
    cpu_seconds: float

    def set_budget(self, budget: int | None) -> None:
        """Set :attr:`budget` (a non-negative integer, or ``None`` for no limit)."""
        self.budget = optional_integer("budget", budget, 0)

    def reset(self) -> None:
        """Forget the log (the budget counts from zero again)."""
        self.queries = 0
        self.lengths = Counter()
        self.seconds = 0.0
        self.cpu_seconds = 0.0

    @property
    def max_length(self) -> int:
        """Length of the longest query answered so far (0 before the first)."""
        return max(self.lengths, default=0)

    def answering(self, query: Sized) -> _Answering:
        """Check the budget, then a context that times the answer and logs ``query`` if it returns."""
        self.check_budget()
        return _Answering(self, len(query))

    def check_budget(self) -> None:
        """Raise :class:`~exactlearn.QueryBudgetExceeded` if the budget is spent (before answering)."""
        if self.budget is not None and self.queries >= self.budget:
            raise QueryBudgetExceeded(f"the oracle's query budget of {self.budget} queries is spent")

    def log_answer(self, length: int, wall: float, cpu: float) -> None:
        """Log one answered query of ``length`` tokens whose answer started at ``(wall, cpu)``
        (``time.perf_counter()``, ``time.thread_time()``); what :meth:`answering` does on a normal exit."""
        self.cpu_seconds += time.thread_time() - cpu
        self.seconds += time.perf_counter() - wall
        self.queries += 1
        self.lengths[length] += 1


class _Answering:
    """The context of one answer: logged on normal exit only (a failed answer is not a query answered)."""

    __slots__ = ("log", "length", "wall", "cpu")

    def __init__(self, log: QueryLog, length: int):
        self.log, self.length = log, length

    def __enter__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.thread_time()

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        if kind is None:
            self.log.log_answer(self.length, self.wall, self.cpu)


def logged(answer: Callable[[Any], Any]) -> tuple[Callable[[Any], Any], dict[str, int]]:
    """A plain function that answers like ``answer``, and the log it keeps.

    The function carries no attribute (nothing on it refers to what ``answer``
    closes over); the log is a dict with ``"calls"`` and ``"max_length"``.

    >>> oracle, log = logged(len)
    >>> oracle([1, 2, 3]), oracle([4]), log
    (3, 1, {'calls': 2, 'max_length': 3})
    """
    log = {"calls": 0, "max_length": 0}

    def oracle(tokens: Any) -> Any:
        log["calls"] += 1
        log["max_length"] = max(log["max_length"], len(tokens))
        return answer(tokens)

    return oracle, log
