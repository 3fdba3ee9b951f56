"""Models over a number field: their entries, exact evaluation, random draws (docs/number-fields.md).

:class:`exactlearn.MultiHeadAttention` and :class:`exactlearn.Head` call these
when a model lives in a :class:`~exactlearn.NumberField` ``K``: ``exp(W_h)``
entries are elements of ``K`` positive in its real embedding (decided exactly),
``v_h`` is in ``K^d``. With integer tokens every score ratio
``exp((x_i - x_N)^T W x_N) = prod E[a][b]^((x_i - x_N)[a] x_N[b])`` is an
element of ``K``, so ``f(X)`` is exact.

>>> from exactlearn import NumberField, MultiHeadAttention
>>> K = NumberField("a^2 - 2", root=1.414)
>>> m = MultiHeadAttention.from_lists([[["1 + a"]]], [["a"]], field=K)
>>> m([(1,), (0,)])         # scores exp(0) = 1 for both tokens: (a * 1 + a * 0) / 2
a/2
>>> m([(0,), (1,)])         # scores 1 and 1 + a: a (1 + a) / (2 + a) = (a + 2) / (2 + a)
1
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from flint import fmpq

from ..errors import InvalidModelError, NumberFieldError
from ..evaluation import query_too_large
from ..exact import Token
from .element import NumberFieldElement
from .field import NumberField

__all__ = ["field_in", "field_matrix", "field_vector", "evaluate", "random_heads", "ratio_bits",
           "power_product"]


def field_in(*nested: Any) -> NumberField | None:
    """The number field of the first element found in nested lists (``None`` if there is none)."""
    stack = list(nested)
    while stack:
        item = stack.pop()
        if isinstance(item, NumberFieldElement):
            return item.field
        if isinstance(item, (list, tuple)):
            stack.extend(item)
    return None


def _entry(K: NumberField, value: Any, what: str) -> NumberFieldElement:
    try:
        return K(value)
    except NumberFieldError as exc:
        raise InvalidModelError(f"{what}: {exc}") from None


def _rows(value: Any, what: str, expected: str) -> Sequence:
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__"):
        raise InvalidModelError(f"{what}: expected {expected}, got {type(value).__name__}")
    return value


def field_matrix(K: NumberField, rows: Any, what: str = "exp_W") -> tuple[tuple[Any, ...], ...]:
    """A square matrix of elements of ``K``, each positive in the real embedding."""
    rows = _rows(rows, what, "a d x d matrix (a list of rows)")
    n = len(rows)
    if n == 0:
        raise InvalidModelError(f"{what}: the matrix is empty (d must be at least 1)")
    out = []
    for a, row in enumerate(rows):
        if isinstance(row, (str, bytes)) or not hasattr(row, "__len__") or len(row) != n:
            raise InvalidModelError(f"{what}: row {a} must have {n} entries (the matrix must be square)")
        entries = []
        for b, value in enumerate(row):
            e = _entry(K, value, f"{what}[{a}][{b}]")
            if e.sign() <= 0:
                raise InvalidModelError(
                    f"{what}[{a}][{b}] = {e} is not positive in the real embedding ({K.name} ~ "
                    f"{K.root.approximation(6)}); exp_W holds exp(W) entrywise, so every entry must be "
                    f"positive")
            entries.append(e)
        out.append(tuple(entries))
    return tuple(out)


def field_vector(K: NumberField, entries: Any, d: int, what: str = "v") -> tuple[NumberFieldElement, ...]:
    entries = _rows(entries, what, f"a vector of {d} elements")
    if len(entries) != d:
        raise InvalidModelError(f"{what}: has length {len(entries)}, expected d = {d}")
    return tuple(_entry(K, e, f"{what}[{i}]") for i, e in enumerate(entries))


def ratio_bits(exp_W: Sequence[Sequence[Any]], left: Sequence[int], right: Sequence[int]) -> int:
    """About the bits of ``prod E[a][b]^(left[a] right[b])``: each factor's bits plus the growth of a product
    reduced modulo the minimal polynomial (its degree times its coefficients' bits), times the exponent."""
    K = exp_W[0][0].field
    growth = K.degree * (1 + max(int(c.height_bits()) for c in K.polynomial.coeffs()))
    total = 0
    for la, row in zip(left, exp_W):
        if la:
            total += sum(abs(la * rb) * K.degree * (e.bits() + growth) for rb, e in zip(right, row) if rb)
    return total


def power_product(exp_W: Sequence[Sequence[NumberFieldElement]], left: Sequence[int],
                  right: Sequence[int]) -> NumberFieldElement:
    """``exp(left^T W right) = prod E[a][b]^(left[a] right[b])`` for ``E = exp(W)`` over a number field."""
    total = exp_W[0][0].field(1)
    for la, row in zip(left, exp_W):
        if la:
            for rb, e in zip(right, row):
                if rb:
                    total = total * e ** (la * rb)
    return total


def _ratio(head: Any, token: Token, last: Token, max_bits: int, used: int) -> NumberFieldElement:
    left = [t - s for t, s in zip(token, last)]
    bound = ratio_bits(head.exp_W, left, last)
    if used + bound > max_bits:
        raise query_too_large(used + bound, max_bits)
    return power_product(head.exp_W, left, last)


def evaluate(K: NumberField, heads: Sequence[Any], tokens: Sequence[Token], max_bits: int,
             cache: dict) -> NumberFieldElement:
    """``f(X)`` over ``K``: each head's weights relative to the final token's (ratios kept in ``cache``)."""
    last = tokens[-1]
    counts = Counter(tokens)
    m_last = counts.pop(last)
    total, bits = K.zero(), 0
    for index, head in enumerate(heads):
        weight_sum = K(m_last)
        weighted = _dot(last, head.v) * m_last
        for token, mult in counts.items():
            key = (index, token, last)
            rho = cache.get(key)
            if rho is None:
                rho = cache[key] = _ratio(head, token, last, max_bits, bits)
            bits += rho.bits()
            if bits > max_bits:
                raise query_too_large(bits, max_bits)
            weight_sum = weight_sum + rho * mult
            weighted = weighted + rho * (_dot(token, head.v) * mult)
        total = total + weighted / weight_sum
    return total


def _dot(token: Token, v: Sequence[NumberFieldElement]) -> Any:
    out: Any = fmpq(0)
    for t, x in zip(token, v):
        if t:
            out = out + x * t
    return out


def _element(K: NumberField, rng: random.Random, height: int) -> NumberFieldElement:
    while True:
        x = K.from_coordinates([fmpq(rng.randint(-height, height), rng.randint(1, height))
                                for _ in range(K.degree)])
        if x:
            return x


def random_heads(K: NumberField, d: int, heads: int, seed: Any, height: int) -> list[tuple[list, list]]:
    """``heads`` pairs ``(exp_W, v)`` over ``K``: coordinates ``p/q`` with ``|p|, q <= height``; ``exp_W``
    entries positive (a negative draw is negated), pairwise different ``exp_W``, nonzero ``v``."""
    rng = random.Random(f"exactlearn.model.random:{K.polynomial_text()}:{K.root.index}:{d}:{heads}:"
                        f"{seed}:{height}")
    out: list[tuple[list, list]] = []
    seen: set = set()
    while len(out) < heads:
        exp_W = [[_element(K, rng, height) for _ in range(d)] for _ in range(d)]
        exp_W = [[e if e.sign() > 0 else -e for e in row] for row in exp_W]
        v = [_element(K, rng, height) for _ in range(d)]
        key = tuple(e for row in exp_W for e in row)
        if key not in seen:
            seen.add(key)
            out.append((exp_W, v))
    return out
