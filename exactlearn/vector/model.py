"""Multi-head attention with vector outputs, evaluated exactly (docs/algorithm.md section 10).

A real attention layer returns a vector at the final token:

    f(X) = sum_h sum_i softmax_i(x_i^T W_h x_N) V_h x_i  in Q^D,

each head carrying ``exp_W = exp(W_h)`` (``d x d`` positive rationals, as in
:class:`~exactlearn.Head`) and a value matrix ``V_h`` (``D x d`` rationals,
``D`` = ``outputs``). The scalar model (:class:`~exactlearn.MultiHeadAttention`)
is the case ``D = 1``; it keeps its own class and JSON. Canonical form: heads
with equal ``exp_W`` merge (their ``V_h`` add), merged heads with ``V_h = 0``
are dropped, heads are sorted.

>>> m = VectorMultiHeadAttention([VectorHead([[2, 1], [1, 3]], [[1, -1], [0, 2]])])
>>> m([(1, 0), (0, 1)])   # weights 1 and 3: (V (1, 0) + 3 V (0, 1)) / 4
(-1/2, 3/2)
>>> m.outputs, m.canonical() == m
(2, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from flint import fmpq

from ..errors import InvalidModelError
from ..exact import Token, as_rational, as_tokens, rational_str
from ..jsonio import JsonModel, json_object
from ..model import Head, random_heads
from ..validate import integer, is_sequence

__all__ = ["VECTOR_MODEL_FORMAT", "VectorHead", "VectorMultiHeadAttention"]

VECTOR_MODEL_FORMAT = "exactlearn.vector-model/1"

Matrix = tuple[tuple[fmpq, ...], ...]


def _value_matrix(rows: Any, d: int) -> Matrix:
    """``V`` validated: a non-empty list of rows of ``d`` exact rationals."""
    if not is_sequence(rows) or not rows:
        raise InvalidModelError(f"V: expected a D x {d} matrix (a non-empty list of rows)")
    out = []
    for a, row in enumerate(rows):
        if not is_sequence(row) or len(row) != d:
            raise InvalidModelError(f"V: row {a} must be a list of d = {d} entries")
        out.append(tuple(as_rational(e, f"V[{a}][{b}]", InvalidModelError) for b, e in enumerate(row)))
    return tuple(out)


@dataclass(frozen=True)
class VectorHead:
    """One head: ``exp_W`` (``d x d`` positive rationals, ``W = log exp_W``) and ``V`` (``D x d``)."""

    exp_W: Matrix
    V: Matrix

    def __init__(self, exp_W: Any, V: Any):
        scores = Head(exp_W, [0] * len(exp_W) if is_sequence(exp_W) else exp_W)  # validates exp_W
        object.__setattr__(self, "exp_W", scores.exp_W)
        object.__setattr__(self, "V", _value_matrix(V, scores.d))
        object.__setattr__(self, "_scores", scores)

    @property
    def d(self) -> int:
        return len(self.exp_W)

    @property
    def outputs(self) -> int:
        """``D``: the length of the output vector."""
        return len(self.V)

    def key(self) -> tuple:
        return (tuple(e for row in self.exp_W for e in row), self.V)

    def output(self, tokens: Sequence[Token]) -> list[fmpq]:
        """``sum_i softmax_i(x_i^T W x_N) V x_i`` exactly."""
        scorer: Head = self.__dict__["_scores"]
        factors = scorer.score_factors(tokens[-1])
        weights = [_power_product(factors, t) for t in tokens]
        total = sum(weights, fmpq(0))
        mean = [sum((w * t[b] for w, t in zip(weights, tokens) if t[b]), fmpq(0)) / total
                for b in range(self.d)]
        return [sum((v * m for v, m in zip(row, mean) if v), fmpq(0)) for row in self.V]

    def to_dict(self) -> dict:
        return {"exp_W": [[rational_str(e) for e in row] for row in self.exp_W],
                "V": [[rational_str(e) for e in row] for row in self.V]}


def _power_product(factors: Sequence[fmpq], token: Token) -> fmpq:
    out = fmpq(1)
    for g, t in zip(factors, token):
        if t:
            out *= g**t
    return out


class VectorMultiHeadAttention(JsonModel):
    """Multi-head attention answering the whole output vector (a tuple of ``flint.fmpq``).

    ``outputs`` (``D``) is the length of every head's value rows; every head has
    the same ``d``. :meth:`random` draws a model whose canonical form has exactly
    ``heads`` heads.
    """

    def __init__(self, heads: Iterable[Any], *, d: int | None = None, outputs: int | None = None):
        self._heads = tuple(heads)
        for h in self._heads:
            if not isinstance(h, VectorHead):
                raise InvalidModelError(f"heads must be VectorHead objects, got {type(h).__name__}")
        if not self._heads and (d is None or outputs is None):
            raise InvalidModelError("a model with no heads needs d and outputs")
        self._d = d if d is not None else self._heads[0].d
        self._outputs = outputs if outputs is not None else self._heads[0].outputs
        if any(h.d != self._d or h.outputs != self._outputs for h in self._heads):
            raise InvalidModelError(f"every head must have d = {self._d} and {self._outputs} output rows")

    @classmethod
    def random(cls, d: int, heads: int, seed: int | str = 0, *, outputs: int | None = None,
               height: int = 30) -> VectorMultiHeadAttention:
        """A random model (``outputs`` defaults to ``d``): the ``exp_W`` of
        :meth:`MultiHeadAttention.random <exactlearn.MultiHeadAttention.random>`, value entries ``p/q``
        with ``|p| <= height``, ``1 <= q <= height``, each ``V_h`` nonzero."""
        D = d if outputs is None else integer("outputs", outputs)
        scalar, rng = random_heads(d, heads, seed, height)
        out = []
        for h in scalar:
            V = [[fmpq(rng.randint(-height, height), rng.randint(1, height)) for _ in range(d)]
                 for _ in range(D)]
            V[0] = list(h.v)  # nonzero, so the canonical form keeps every head
            out.append(VectorHead(h.exp_W, V))
        return cls(out)

    @property
    def d(self) -> int:
        return self._d

    @property
    def outputs(self) -> int:
        """``D``: the length of every answer."""
        return self._outputs

    @property
    def heads(self) -> tuple[VectorHead, ...]:
        return self._heads

    @property
    def num_heads(self) -> int:
        return len(self._heads)

    def __call__(self, tokens: Sequence[Sequence[int]]) -> tuple[fmpq, ...]:
        return self.evaluate(as_tokens(tokens, self._d))

    def evaluate(self, tokens: Sequence[Token]) -> tuple[fmpq, ...]:
        """``f(X)`` as ``D`` exact rationals."""
        total = [fmpq(0)] * self._outputs
        for h in self._heads:
            total = [a + b for a, b in zip(total, h.output(tokens))]
        return tuple(total)

    def canonical(self) -> VectorMultiHeadAttention:
        """Merge heads with equal ``exp_W`` (adding ``V``), drop zero ``V``, sort (docs/algorithm.md
        section 10)."""
        sums: dict[Matrix, list[list[fmpq]]] = {}
        for h in self._heads:
            V = sums.setdefault(h.exp_W, [[fmpq(0)] * self._d for _ in range(self._outputs)])
            for row, add in zip(V, h.V):
                row[:] = [a + b for a, b in zip(row, add)]
        merged = [VectorHead(e, V) for e, V in sums.items() if any(x != 0 for row in V for x in row)]
        return VectorMultiHeadAttention(sorted(merged, key=VectorHead.key), d=self._d, outputs=self._outputs)

    def equivalent(self, other: VectorMultiHeadAttention) -> bool:
        """True iff both models compute the same function (equal canonical forms)."""
        return self.canonical() == other.canonical()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VectorMultiHeadAttention):
            return NotImplemented
        return (self._d, self._outputs, self._heads) == (other._d, other._outputs, other._heads)

    def __hash__(self) -> int:
        return hash((self._d, self._outputs, self._heads))

    def to_dict(self) -> dict:
        return {"format": VECTOR_MODEL_FORMAT, "d": self._d, "outputs": self._outputs,
                "heads": [h.to_dict() for h in self._heads]}

    @classmethod
    def from_dict(cls, data: Any) -> VectorMultiHeadAttention:
        data = json_object(data, "a vector model", VECTOR_MODEL_FORMAT, "unknown vector model format")
        heads = data.get("heads")
        if not isinstance(heads, list):
            raise InvalidModelError("a vector model needs a list 'heads'")
        out = []
        for i, h in enumerate(heads):
            if not isinstance(h, dict) or "exp_W" not in h or "V" not in h:
                raise InvalidModelError(f"head {i} needs 'exp_W' and 'V'")
            out.append(VectorHead(h["exp_W"], h["V"]))
        d = integer("d", data.get("d"), error=InvalidModelError)
        outputs = integer("outputs", data.get("outputs"), error=InvalidModelError)
        return cls(out, d=d, outputs=outputs)

    def __repr__(self) -> str:
        return f"VectorMultiHeadAttention(d={self._d}, outputs={self._outputs}, heads={len(self._heads)})"
