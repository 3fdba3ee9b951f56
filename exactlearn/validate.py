"""Argument validation shared by every entry point.

One idiom, written once: an integer argument (``bool`` refused) within bounds,
with a message that names the argument, the limit and how to lift it; and the
checks every entry point shares: seeds (:func:`seed`), sequences that may be
matrix rows (:func:`is_sequence`), and messages that show any value safely
(:func:`describe`, which never raises and never prints a 5000-digit number),
counts with their noun in the right number (:func:`counted`), and the
command lines' parser (:class:`ArgumentParser`).

>>> integer("d", 3)
3
>>> integer("heads", 0)
Traceback (most recent call last):
...
exactlearn.errors.InvalidArgumentError: heads must be an integer >= 1, got 0
"""

from __future__ import annotations

import argparse
import math
import sys
import textwrap
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from .errors import ExactLearnError, InvalidArgumentError

__all__ = ["ARGUMENT_DIGITS", "ERROR_WIDTH", "SEED_BITS", "SEED_CHARS", "ArgumentParser", "LongIntegerError",
           "argument_int", "counted", "describe", "integer", "integer_argument", "is_sequence",
           "optional_integer", "seed", "seed_argument"]

#: The width an argparse error message is wrapped to (a report's width).
ERROR_WIDTH = 80

#: A seed is an int with ``|seed| < 2**SEED_BITS`` ...
SEED_BITS = 256
#: ... or a str of at most ``SEED_CHARS`` characters (see :func:`seed`).
SEED_CHARS = 256
#: Integers with more bits than this are shown by their size in messages, not their digits.
_SHOWN_BITS = 200


def describe(value: Any, limit: int = 60) -> str:
    """A short description of ``value`` for a message: never raises, never prints huge numbers.

    >>> describe(10**5000)
    'an integer of about 5001 digits'
    >>> describe("x" * 100, limit=10)
    "'xxxxxx..."
    """
    if isinstance(value, int) and not isinstance(value, bool) and abs(int(value)).bit_length() > _SHOWN_BITS:
        digits = int(abs(int(value)).bit_length() * math.log10(2)) + 1
        return f"an integer of about {digits} digits"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a user object whose repr raises is still described
        return f"a {type(value).__name__} object (its repr raised)"
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
        raise error(f"{name} must be an integer >= {low}, got {describe(value)}")
    if high is not None and value > high:
        hint = f"; {lift}" if lift else ""
        shown = value if value.bit_length() <= _SHOWN_BITS else describe(value)
        raise error(f"{name} = {shown} is above the limit {high}{hint}")
    return value


def optional_integer(name: str, value: Any, low: int = 1, high: int | None = None, *,
                     error: type[ExactLearnError] = InvalidArgumentError, lift: str = "") -> int | None:
    """Like :func:`integer`, but ``None`` passes through."""
    return None if value is None else integer(name, value, low, high, error=error, lift=lift)


def seed(value: Any, name: str = "seed") -> Any:
    """``value`` if it is a valid seed: an ``int`` (not ``bool``) with ``|value| < 2**SEED_BITS``, or a
    ``str`` of at most ``SEED_CHARS`` characters; else :class:`~exactlearn.InvalidArgumentError`.

    Every function that takes a seed checks it here before any work: a seed names a
    reproducible stream (its text is part of a ``random.Random`` key), so it must
    print, and briefly.

    >>> seed(7), seed("run-3")
    (7, 'run-3')
    >>> seed(10**100)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    exactlearn.errors.InvalidArgumentError: seed must be an int with |seed| < 2^256 ... about 101 digits
    """
    what = (f"{name} must be an int with |{name}| < 2^{SEED_BITS} or a str of at most {SEED_CHARS} "
            f"characters")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidArgumentError(f"{what}, got {describe(value)} ({type(value).__name__})")
    if isinstance(value, int) and abs(int(value)).bit_length() > SEED_BITS:
        raise InvalidArgumentError(f"{what}, got {describe(value)}")
    if isinstance(value, str) and len(value) > SEED_CHARS:
        raise InvalidArgumentError(f"{what}, got a str of {len(value)} characters")
    try:
        format(value, "")  # the seed's text keys the random stream; a subclass may break it
    except Exception as exc:  # noqa: BLE001 - any failure of the user's __str__/__format__
        raise InvalidArgumentError(f"{name}: formatting it raised {type(exc).__name__}; "
                                   f"pass a plain int or str") from None
    return value


def is_sequence(value: Any) -> bool:
    """True for a sized, indexable sequence (a list, tuple, array): not a str, bytes, set or mapping.

    Matrix rows and vectors must be sequences, so that their order is the one written.

    >>> is_sequence([1, 2]), is_sequence((1,)), is_sequence({1, 2}), is_sequence("12")
    (True, True, False, False)
    """
    if isinstance(value, (str, bytes, bytearray, Mapping, AbstractSet)):
        return False
    return hasattr(value, "__len__") and hasattr(value, "__getitem__")



#: Integers on a command line have at most this many digits (seeds are below 2^256, 78 digits); a
#: longer text is refused by its length, before Python's int() (whose own limit is 4300 digits).
ARGUMENT_DIGITS = 100


class LongIntegerError(ValueError):
    """An integer on a command line with more than :data:`ARGUMENT_DIGITS` digits (its message says so)."""


def argument_int(text: str) -> int:
    """``int(text)`` for a command line: :class:`LongIntegerError` (a ``ValueError``) for more than
    :data:`ARGUMENT_DIGITS` digits.

    >>> argument_int(" 12 ")
    12
    >>> argument_int("9" * 101)
    Traceback (most recent call last):
    ...
    exactlearn.validate.LongIntegerError: an integer of 101 digits: at most 100 are accepted
    """
    digits = len(text.strip().lstrip("+-").replace("_", ""))
    if digits > ARGUMENT_DIGITS:
        raise LongIntegerError(f"an integer of {digits} digits: at most {ARGUMENT_DIGITS} are accepted")
    return int(text)


def seed_argument(text: str) -> int:
    """The argparse ``type`` of ``--seed``: an integer of at most :data:`ARGUMENT_DIGITS` digits.

    >>> seed_argument("-3")
    -3
    """
    try:
        return argument_int(text)
    except LongIntegerError as exc:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {exc}") from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None


def integer_argument(low: int, what: str) -> Callable[[str], int]:
    """An argparse ``type`` accepting integers ``>= low`` with a clear message (shared by the CLIs).

    >>> integer_argument(1, "positive")("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a positive integer, got 0
    """

    def parse(text: str) -> int:
        try:
            value = argument_int(text)
        except LongIntegerError as exc:
            raise argparse.ArgumentTypeError(f"expected a {what} integer, got {exc}") from None
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {what} integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected a {what} integer, got {value}")
        return value

    return parse


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, in the singular for 1: ``counted(1, "head")`` is ``'1 head'``.

    >>> counted(1, "head"), counted(2, "head"), counted(0, "pole"), counted(1, "query", "queries")
    ('1 head', '2 heads', '0 poles', '1 query')
    """
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


class ArgumentParser(argparse.ArgumentParser):
    """The parser of every command line: errors wrapped to :data:`ERROR_WIDTH` columns, and a
    subcommand's unknown options reported with that subcommand's usage (add its parsers with
    ``add_subparsers(parser_class=ArgumentParser)``: each refuses what it does not know).
    """

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        lines = textwrap.wrap(f"{self.prog}: error: {message}", width=ERROR_WIDTH, subsequent_indent="  ",
                              break_on_hyphens=False)
        self.exit(2, "\n".join(lines) + "\n")

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and getattr(self, "_strict", False):
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    def add_subparsers(self, **kwargs):  # type: ignore[override]
        action = super().add_subparsers(parser_class=_Subcommand, **kwargs)
        return action


class _Subcommand(ArgumentParser):
    """A subcommand's parser: its unknown options are its own error (argparse leaves them to the parent)."""

    _strict = True
