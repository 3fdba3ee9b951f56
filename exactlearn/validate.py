"""Argument validation shared by every entry point.

One idiom, written once: an integer argument (``bool`` refused) within bounds,
with a message that names the argument, the limit and how to lift it.

>>> integer("d", 3)
3
>>> integer("heads", 0)
Traceback (most recent call last):
...
exactlearn.errors.InvalidArgumentError: heads must be an integer >= 1, got 0
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .errors import ExactLearnError, InvalidArgumentError

__all__ = ["integer", "optional_integer", "integer_argument", "affine_argument"]


def integer(
    name: str,
    value: Any,
    low: int = 1,
    high: int | None = None,
    *,
    error: type[ExactLearnError] = InvalidArgumentError,
    lift: str = "",
) -> int:
    """``value`` if it is an ``int`` (not ``bool``) in ``[low, high]``; else raise ``error``.

    ``lift`` is appended to the message when ``value > high`` (say how to raise the limit).
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise error(f"{name} must be an integer >= {low}, got {value!r}")
    if high is not None and value > high:
        hint = f"; {lift}" if lift else ""
        raise error(f"{name} = {value} is above the limit {high}{hint}")
    return value


def optional_integer(name: str, value: Any, low: int = 1, high: int | None = None, *,
                     error: type[ExactLearnError] = InvalidArgumentError, lift: str = "") -> int | None:
    """Like :func:`integer`, but ``None`` passes through."""
    return None if value is None else integer(name, value, low, high, error=error, lift=lift)


def affine_argument(oracle: Any, affine: Any) -> bool:
    """``affine`` of a learner: ``True``/``False`` as given, ``None`` for what the oracle declares (its
    ``affine`` attribute, as :class:`~exactlearn.Oracle` and the torch target have), else ``False``.

    >>> affine_argument(print, None), affine_argument(print, True)
    (False, True)
    """
    if affine is None:
        affine = getattr(oracle, "affine", False)
        if not isinstance(affine, bool):
            raise InvalidArgumentError(f"the oracle's attribute 'affine' must be True or False, got "
                                       f"{affine!r}; pass affine=True or affine=False")
    if not isinstance(affine, bool):
        raise InvalidArgumentError(f"affine must be True, False or None, got {affine!r}")
    return affine


def integer_argument(low: int, what: str) -> Callable[[str], int]:
    """An argparse ``type`` accepting integers ``>= low`` with a clear message (shared by the CLIs).

    >>> integer_argument(1, "positive")("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a positive integer, got 0
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {what} integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected a {what} integer, got {value}")
        return value

    return parse
