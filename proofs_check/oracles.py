"""Opaque oracles: the only way a claim lets a learner see a model.

:func:`opaque_oracle` wraps an evaluator in a plain function. The function has
no attribute (no ``target``, no ``model``, no ``d``) and is not an
``exactlearn.Oracle``, so a learner that looks for the model through its
oracle finds nothing. Every answered query is written to the claim's own
:class:`QueryLog`, and every count a claim reports is read from that log.

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
    """Every query an opaque oracle answered, in order (tokens as tuples of tuples)."""

    queries: list[tuple[tuple, ...]] = field(default_factory=list)

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
    """A plain function answering ``evaluate(tokens)``, and the log it writes.

    ``evaluate`` is held in the function's closure only; the function itself
    carries no attribute, so nothing reachable as ``oracle.<name>`` leads to it.
    """
    log = QueryLog()

    def oracle(tokens: Sequence) -> Any:
        query = tuple(tuple(t) for t in tokens)
        answer = evaluate([tuple(t) for t in query])
        log.queries.append(query)
        return answer

    return oracle, log


def model_oracle(model: Any) -> tuple[Callable[[Sequence], Any], QueryLog]:
    """An opaque oracle answering like ``model(tokens)`` (exact rationals for integer tokens)."""
    return opaque_oracle(model.__call__)
