"""The one exact number layer: conversions into python-flint types, with clear errors.

Everything on the exact path is ``flint.fmpz`` / ``flint.fmpq``. This module is
the only place where user-supplied numbers (``int``, ``fractions.Fraction``,
sympy ``Rational``, ``"p/q"`` strings) are turned into flint numbers, and where
floats are refused with a message that says why.

>>> as_rational("3/4")
3/4
>>> as_rational(Fraction(-2, 6))
-1/3
>>> rational_str(as_rational(5))
'5'
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from flint import fmpq, fmpz

from .errors import InvalidQueryError, OracleOutputError

__all__ = ["PRIME_61", "as_rational", "rational_str", "brief", "as_token", "as_tokens", "oracle_value",
           "Token"]

Token = tuple[int, ...]

#: The prime ``2^61 - 1``: exact computations are screened modulo it (the copy function's candidate
#: poles in :mod:`exactlearn.ratfun`, a link's predicted pairing in :mod:`exactlearn.fastlink`); every
#: result is then checked exactly, so the choice of prime affects speed only.
PRIME_61 = 2**61 - 1

_INT_ONLY = {int}

#: ``"p"`` or ``"p/q"``: ASCII digits only, an optional sign (``"+2"`` is 2, as for ``int``),
#: spaces around the numbers.
_RATIONAL_STRING = re.compile(r"[ \t]*([+-]?)([0-9]+)[ \t]*(?:/[ \t]*([0-9]+)[ \t]*)?", re.ASCII)


def _exact_or_none(value: Any) -> fmpq | None:
    """Return ``value`` as an fmpq if it is an exact rational of a known kind."""
    if isinstance(value, bool):
        return None
    if isinstance(value, fmpq):
        return value
    if isinstance(value, fmpz):
        return fmpq(value)
    if isinstance(value, numbers.Integral):
        return fmpq(int(value))
    if isinstance(value, Fraction):
        return fmpq(value.numerator, value.denominator)
    if isinstance(value, numbers.Rational) and not isinstance(value, float):
        return fmpq(int(value.numerator), int(value.denominator))
    # sympy.Rational / sympy.Integer (without importing sympy here)
    if type(value).__module__.startswith("sympy") and getattr(value, "is_Rational", False):
        return fmpq(int(value.p), int(value.q))
    return None


def as_rational(value: Any, what: str = "value", error: type[Exception] = ValueError) -> fmpq:
    """Convert an exact rational given in any common form to ``flint.fmpq``.

    Accepted: ``int``, ``fmpz``, ``fmpq``, ``fractions.Fraction``, sympy
    ``Rational``, and strings ``"p"`` or ``"p/q"`` (ASCII digits, an optional
    ``+`` or ``-`` before ``p``; digits of other scripts are refused). Floats are refused: a float
    is not the number its decimal literal shows, so it has no place on the exact
    path. ``what`` names the value in the error message.
    """
    exact = _exact_or_none(value)
    if exact is not None:
        return exact
    if isinstance(value, str):
        match = _RATIONAL_STRING.fullmatch(value)
        if match is None:
            raise error(f"{what}: {value[:60]!r} is not a rational number of the form 'p' or 'p/q' "
                        f"(ASCII digits 0-9)")
        sign, p, q = match.groups()
        numerator = fmpz(p)  # fmpz parses any length (int() stops at 4300 digits)
        numerator = -numerator if sign == "-" else numerator
        denominator = fmpz(q) if q is not None else fmpz(1)
        if denominator == 0:
            raise error(f"{what}: {value[:60]!r} has denominator zero")
        return fmpq(numerator, denominator)
    if isinstance(value, float):
        raise error(
            f"{what}: got the float {value!r}; exact arithmetic needs an exact rational "
            f"(an int, a fractions.Fraction, or a string such as '1/2')"
        )
    raise error(f"{what}: expected an exact rational number, got {type(value).__name__} {value!r}")


def rational_str(value: fmpq) -> str:
    """Format an fmpq as ``"p"`` or ``"p/q"`` (the JSON form used throughout)."""
    return str(value.p) if value.q == 1 else f"{value.p}/{value.q}"


def brief(value: Any, limit: int = 48) -> str:
    """``str(value)``, or a short description when it is longer than ``limit`` characters.

    Error messages use this so that a 3000-digit rational does not bury the message.

    >>> brief(fmpq(2, 3))
    '2/3'
    >>> brief(fmpq(10**80 + 1, 3))
    '3.333e+79 (a rational with 81-digit numerator, 1-digit denominator)'
    """
    text = str(value)
    if len(text) <= limit:
        return text
    if isinstance(value, fmpq):
        p, q = int(value.p), int(value.q)
        try:
            approx = f"{float(Fraction(p, q)):.4g}"
        except OverflowError:
            approx = "a huge number"
        # str(fmpz) has no digit limit (str(int) stops at 4300 digits)
        digits_p, digits_q = len(str(abs(value.p))), len(str(value.q))
        return f"{approx} (a rational with {digits_p}-digit numerator, {digits_q}-digit denominator)"
    return text[: limit - 3] + "..."


def as_token(token: Any, d: int | None, position: int | None = None) -> Token:
    """Validate one integer token vector and return it as a tuple of Python ints."""
    if type(token) is tuple and (d is None or len(token) == d) and set(map(type, token)) == _INT_ONLY:
        return token  # fast path: already a tuple of Python ints (type(True) is bool, not int)
    where = "token" if position is None else f"token {position}"
    if isinstance(token, (str, bytes)) or not hasattr(token, "__len__"):
        raise InvalidQueryError(f"{where}: expected a sequence of integers, "
                                f"got {type(token).__name__} {token!r}")
    if d is not None and len(token) != d:
        raise InvalidQueryError(f"{where}: has length {len(token)}, but the model width is d = {d}")
    out = []
    for entry in token:
        if isinstance(entry, bool) or not isinstance(entry, (numbers.Integral, fmpz)):
            raise InvalidQueryError(
                f"{where}: entry {entry!r} ({type(entry).__name__}) is not an integer; "
                f"exact queries use integer token vectors"
            )
        out.append(int(entry))
    return tuple(out)


_NOTHING = object()  # is no token
#: ``as_tokens(..., trusted=NOTHING_TRUSTED)``: every token is checked.
NOTHING_TRUSTED = (_NOTHING, _NOTHING)


def as_tokens(tokens: Any, d: int | None, trusted: tuple = NOTHING_TRUSTED) -> tuple[Token, ...]:
    """Validate a query: a non-empty sequence of integer token vectors of length ``d``.

    ``trusted``: two objects this function returned as tokens before (for this
    ``d``); a token that *is* one of them (identity, not equality: tuples of
    ints are immutable) is not checked again.
    """
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__len__"):
        raise InvalidQueryError(f"a query is a sequence of token vectors, got {type(tokens).__name__}")
    if len(tokens) == 0:
        raise InvalidQueryError("a query must contain at least one token "
                                "(the empty sequence has no final token)")
    checked: list[Token] = []
    last: Any = _NOTHING  # a copy query repeats one token object; a valid tuple passes as itself
    first_trusted, second_trusted = trusted
    for t in tokens:
        if t is not last:
            last = t if t is first_trusted or t is second_trusted else as_token(t, d, len(checked))
        checked.append(last)
    out = tuple(checked)
    if d is None and len({len(t) for t in out}) != 1:
        raise InvalidQueryError("all tokens of a query must have the same length")
    return out


def oracle_value(value: Any) -> fmpq:
    """Turn what a black-box oracle returned into an fmpq, or say clearly why not."""
    exact = _exact_or_none(value)
    if exact is not None:
        return exact
    if isinstance(value, float) or type(value).__module__.startswith(("mpmath", "numpy", "torch")):
        raise OracleOutputError(
            f"the oracle returned {type(value).__name__} {value!r}; the exact learner needs an exact "
            f"rational (flint.fmpq, fractions.Fraction or int). For float oracles use exactlearn.approx."
        )
    if type(value).__name__ == "NumberFieldElement":
        raise OracleOutputError(
            f"the oracle returned an element of a number field ({value!r}) where this run learns over the "
            f"rationals: number fields are learned by exactlearn.learn (not with affine=True, which is "
            f"learned over Q only)"
        )
    raise OracleOutputError(
        f"the oracle returned {type(value).__name__} {value!r}; "
        "expected flint.fmpq, fractions.Fraction or int"
    )


def dot(left: Sequence, right: Sequence) -> fmpq:
    """Exact inner product of two vectors of integers or rationals (zero entries of ``left`` skipped).

    >>> dot((1, 0, -2), (fmpq(1, 2), fmpq(5), fmpq(3)))
    -11/2
    """
    total = fmpq(0)
    for a, b in zip(left, right):
        if a:
            total += a * b
    return total
