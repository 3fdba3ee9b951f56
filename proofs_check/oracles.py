"""Query logs, and an in-process logged oracle for what has no hidden truth.

:class:`QueryLog` is the log the oracle process keeps (:mod:`proofs_check.processes`)
and what a claim reads its counts from. Claims learn through
:class:`proofs_check.sandbox.Sandbox`: the model and its log live in another
process. :func:`opaque_oracle` keeps model and log in *this* process; it is
used only where there is nothing to hide (claim 40's symbolic run, whose
weights are the indeterminates themselves) and as the positive control of the
introspection tests (a learner that walks this process's objects finds the
model behind it).

>>> from exactlearn import MultiHeadAttention
>>> ask, log = model_oracle(MultiHeadAttention.random(2, 1, seed=1))
>>> _ = ask([(1, 0), (0, 1)])
>>> log.count, log.max_length, vars(ask)
(1, 2, {})
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["QueryLog", "model_oracle", "opaque_oracle"]


@dataclass
class QueryLog:
    """Every query an oracle answered, in order (tokens as tuples of tuples)."""

    queries: list[tuple[tuple, ...]] = field(default_factory=list)

    def record(self, query: tuple[tuple, ...]) -> None:
        """Log one answered query."""
        self.queries.append(query)

    @property
    def count(self) -> int:
        return len(self.queries)

    @property
    def max_length(self) -> int:
        return max((len(q) for q in self.queries), default=0)

    @property
    def lengths(self) -> dict[int, int]:
        return dict(sorted(Counter(len(q) for q in self.queries).items()))


def opaque_oracle(evaluate: Callable[[list[tuple]], Any]) -> tuple[Callable[[Sequence], Any], QueryLog]:
    """A plain function answering ``evaluate(tokens)``, and the log it writes (both in this process)."""
    log = QueryLog()

    def oracle(tokens: Sequence) -> Any:
        query = tuple(tuple(t) for t in tokens)
        answer = evaluate([tuple(t) for t in query])
        log.record(query)
        return answer

    return oracle, log


def model_oracle(model: Any) -> tuple[Callable[[Sequence], Any], QueryLog]:
    """An in-process logged oracle answering like ``model(tokens)``."""
    return opaque_oracle(model.__call__)
