"""Exact evaluation of multi-head attention: weight ratios as power products, with a bit-size bound.

:class:`exactlearn.model.MultiHeadAttention` delegates ``evaluate`` here; the
per-model tables (``prepare_heads``) and the ratio cache stay on the model.

>>> _power_product([[2]], [[3]], [2], [1])
4/9
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from flint import fmpq, fmpz

from .errors import InvalidQueryError
from .exact import Token
from .validate import integer

__all__ = ["query_too_large", "cached_ratio", "evaluate_heads", "prepare_heads"]


def _int_dot(token: Token, values: Sequence[int]) -> int:
    total = 0
    for t, v in zip(token, values):
        if t:
            total += t * v
    return total


def _bits(e: fmpq) -> int:
    """Bits of ``e``'s numerator and denominator, not counting a 1 (whose powers cost nothing)."""
    return (e.p.bit_length() if e.p != 1 else 0) + (e.q.bit_length() if e.q != 1 else 0)


def _power_bits(bit_rows, left: Sequence[int], right: Sequence[int]) -> int:
    """An upper bound on the bits of :func:`_power_product`:
    ``sum |left[a] right[b]| * bits(exp_W[a][b])``."""
    total = 0
    for ta, row in zip(left, bit_rows):
        if ta:
            total += abs(ta) * sum(abs(yb) * bits for yb, bits in zip(right, row) if yb)
    return total


def _about(bits: int) -> str:
    """``bits`` for a reader: exact below a million, else in scientific notation.

    >>> _about(4096), _about(4 * 10**30)
    ('4096', '4.0e+30')
    """
    return str(bits) if bits < 10**6 else f"{float(bits):.1e}"


def query_too_large(bits: int, max_bits: int) -> InvalidQueryError:
    """The refusal of a query whose exact answer would need about ``bits`` bits, above ``max_bits``."""
    return InvalidQueryError(
        f"this query's exact answer is too large: it would need about {_about(bits)} bits, above "
        f"the oracle's limit "
        f"max_bits = {max_bits}: answers grow with the token entries and with the model's entries. A "
        f"smaller token_bound keeps them small (command line: --token-bound); or lift the limit: "
        f"Oracle(..., max_bits=...) in Python, --limit oracle_bits=... on the command line"
    )


def _power_product(num_rows, den_rows, left: Sequence[int], right: Sequence[int]) -> fmpq:
    """``prod_{a,b} (num_rows[a][b] / den_rows[a][b]) ** (left[a] * right[b])`` as one reduced fmpq.

    Numerator and denominator are accumulated as integers; a single gcd (in the
    ``fmpq`` constructor) reduces the result.
    """
    num = fmpz(1)
    den = fmpz(1)
    for ta, p_row, q_row in zip(left, num_rows, den_rows):
        if not ta:
            continue
        for yb, p, q in zip(right, p_row, q_row):
            e = ta * yb
            if e > 0:
                if p != 1:
                    num *= p**e
                if q != 1:
                    den *= q**e
            elif e < 0:
                if q != 1:
                    num *= q ** (-e)
                if p != 1:
                    den *= p ** (-e)
    return fmpq(num, den)


def _score_rows(head) -> tuple:
    """``exp_W``, with ``exp_w`` as a last column for a head of affine attention (``[exp_W | exp_w]``: the
    score of ``x`` against ``last`` is then the power product with ``[last; 1]``)."""
    if head.exp_w is None:
        return head.exp_W
    return tuple((*row, e) for row, e in zip(head.exp_W, head.exp_w))


def prepare_heads(heads) -> tuple[list[tuple], list]:
    """Per head: numerators and denominators of ``exp_W`` (``[exp_W | exp_w]``) as ``fmpz`` rows, ``v`` over
    a common denominator; and the bit sizes of those entries (for the size bound)."""
    prepared = []
    for head in heads:
        rows = _score_rows(head)
        num_rows = tuple(tuple(e.p for e in row) for row in rows)
        den_rows = tuple(tuple(e.q for e in row) for row in rows)
        v_den = fmpz(1)
        for e in head.v:
            v_den = v_den.lcm(e.q)
        v_int = tuple(int(e.p * (v_den // e.q)) for e in head.v)
        prepared.append((num_rows, den_rows, v_int, v_den))
    bit_rows = [tuple(tuple(_bits(e) for e in row) for row in _score_rows(head)) for head in heads]
    return prepared, bit_rows


def cached_ratio(cache: dict, limit: int, bit_rows, key: tuple, num_rows, den_rows, max_bits: int,
                 used: int = 0) -> fmpq:
    """``exp((token - last)^T W last)`` exactly for ``key = (index, token, last)``, kept in ``cache``
    (emptied when it holds ``limit`` entries). Refused before computing if its size bound and the
    ``used`` bits of the query so far exceed ``max_bits``."""
    rho = cache.get(key)
    if rho is None:
        _, token, last = key
        left = [t - s for t, s in zip(token, last)]
        right = last if len(num_rows[0]) == len(last) else (*last, 1)  # [last; 1] against [exp_W | exp_w]
        bound = _power_bits(bit_rows, left, right)
        if used + bound > max_bits:
            raise query_too_large(used + bound, max_bits)
        rho = _power_product(num_rows, den_rows, left, right)
        if len(cache) >= limit:
            cache.clear()
        cache[key] = rho
    return rho


def evaluate_heads(prepared: list[tuple], ratio: Callable[..., fmpq], tokens: Sequence[Token],
                   max_bits: int) -> fmpq:
    """``f(X)`` from the prepared heads; ``ratio(index, token, last, num_rows, den_rows, max_bits, used)``
    gives each weight relative to the final token's. More than ``max_bits`` bits in total raises
    :class:`~exactlearn.InvalidQueryError`."""
    max_bits = integer("max_bits", max_bits, 1, error=InvalidQueryError)
    last = tokens[-1]
    counts = Counter(tokens)
    m_last = counts.pop(last)
    total = fmpq(0)
    bits = 0
    for index, (num_rows, den_rows, v_int, v_den) in enumerate(prepared):
        # weights relative to the final token; value dots scaled by v_den (integers)
        weight_sum = fmpq(m_last)
        weighted_value = fmpq(m_last * _int_dot(last, v_int))
        for token, mult in counts.items():
            rho = ratio(index, token, last, num_rows, den_rows, max_bits, bits)
            bits += rho.p.bit_length() + rho.q.bit_length()
            if bits > max_bits:
                raise query_too_large(bits, max_bits)
            w = rho * mult if mult != 1 else rho
            weight_sum += w
            weighted_value += w * _int_dot(token, v_int)
        total += weighted_value / (weight_sum * v_den)
    return total
