"""A recovered head with a value matrix (vector outputs, docs/algorithm.md section 10).

>>> from exactlearn import Oracle, learn
>>> from exactlearn.vector import VectorMultiHeadAttention
>>> target = VectorMultiHeadAttention.random(2, 1, seed=0)
>>> head = learn(Oracle(target), 2, heads=1).heads[0]
>>> head.to_head() == target.heads[0], head.d
(True, 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flint import fmpq_mat

from ..exact import rational_str
from ..logspace import LogMatrix
from ..recovery import RecoveredHead
from .model import VectorHead

__all__ = ["VectorRecoveredHead"]


@dataclass(frozen=True)
class VectorRecoveredHead(RecoveredHead):
    """A recovered head whose ``V`` (``D x d`` rationals) replaces the scalar ``v``; ``v`` holds its
    ``d`` columns."""

    V: tuple[tuple[Any, ...], ...] = ()

    @classmethod
    def of_columns(cls, W: LogMatrix, columns: tuple[fmpq_mat, ...]) -> VectorRecoveredHead:
        """The head of a run's ``(W, v)`` over :class:`~exactlearn.vector.field.VectorRationals`: ``v`` is the
        tuple of ``V``'s columns."""
        rows = tuple(tuple(c[r, 0] for c in columns) for r in range(columns[0].nrows()))
        return cls(W, tuple(tuple(c.entries()) for c in columns), None, rows)

    @property
    def d(self) -> int:
        return len(self.V[0])

    @property
    def is_rational(self) -> bool:
        return self.log_W.is_rational

    def to_head(self) -> VectorHead:  # type: ignore[override]
        return VectorHead(self.exp_W, self.V)

    def key(self) -> tuple:
        return (tuple(e for row in self.exp_W for e in row), self.V)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"V": [[rational_str(x) for x in row] for row in self.V],
                               "log_W": self.log_W.to_dict()}
        if self.is_rational:
            out["exp_W"] = [[rational_str(x) for x in row] for row in self.exp_W]
        return out
