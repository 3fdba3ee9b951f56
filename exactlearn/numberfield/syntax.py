"""Reading polynomials in one generator from text: ``"a^3 - 2"``, ``"3/2 - a/5"``, ``"(1 + a)^2"``.

A small, safe reader (nothing is evaluated as Python): integers, the
generator's name, ``+ - * /``, powers ``^`` or ``**`` with an integer
exponent, and parentheses. What a name, a number, a division and a power
mean is the caller's (:class:`Ring`): :data:`POLYNOMIALS` reads a polynomial
over ``Q`` (division by nonzero constants only), a
:class:`~exactlearn.numberfield.NumberField` reads its elements. Every
mistake raises :class:`~exactlearn.NumberFieldError` naming the text.

>>> parse("a^3 - 2", POLYNOMIALS)
('a', x^3 + (-2))
>>> parse("3/2 - a/5", POLYNOMIALS, name="a")[1]
(-1/5)*x + 3/2
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flint import fmpq, fmpq_poly, fmpz

from ..errors import NumberFieldError

__all__ = ["Ring", "POLYNOMIALS", "parse", "MAX_TEXT", "MAX_EXPONENT"]

#: The longest text read (characters).
MAX_TEXT = 100_000
#: The largest ``|n|`` in a power ``x^n``.
MAX_EXPONENT = 10_000

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9]*)|(\*\*|[-+*/^()]))")


@dataclass(frozen=True)
class Ring:
    """What the reader builds: ``constant(q)``, the generator ``gen()``, ``divide(a, b)``; ``+ - *`` and
    ``**`` (a non-negative integer power; ``negative_powers``: any integer) are the values' own."""

    constant: Callable[[fmpq], Any]
    gen: Callable[[], Any]
    divide: Callable[[Any, Any], Any]
    negative_powers: bool = False


def _divide_polynomials(a: fmpq_poly, b: fmpq_poly) -> fmpq_poly:
    if b.degree() != 0:
        raise NumberFieldError("a polynomial can only be divided by a nonzero constant")
    return a / b.coeffs()[0]


#: Polynomials over ``Q`` in one variable (python-flint ``fmpq_poly``).
POLYNOMIALS = Ring(lambda q: fmpq_poly([q]), lambda: fmpq_poly([0, 1]), _divide_polynomials)


class _Reader:
    """Recursive descent over the tokens of one text."""

    def __init__(self, text: str, ring: Ring, name: str | None):
        self.text, self.ring, self.name = text, ring, name
        self.tokens: list[tuple[str, str]] = []
        position = 0
        stripped = text.rstrip()
        while position < len(stripped):
            match = _TOKEN.match(stripped, position)
            if match is None:
                self.fail(f"cannot read {stripped[position:position + 10]!r}")
            assert match is not None
            number, word, op = match.groups()
            self.tokens.append(("int", number) if number else ("name", word) if word else ("op", op))
            position = match.end()
        self.at = 0

    def fail(self, why: str) -> None:
        raise NumberFieldError(f"{self.text[:80]!r}: {why}; write e.g. '3/2 - a/5' or 'a^3 - 2'")

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, op: str) -> bool:
        if self.peek() == ("op", op):
            self.at += 1
            return True
        return False

    def expression(self) -> Any:
        value = self.term()
        while True:
            if self.take("+"):
                value = value + self.term()
            elif self.take("-"):
                value = value - self.term()
            else:
                return value

    def term(self) -> Any:
        value = self.factor()
        while True:
            if self.take("*"):
                value = value * self.factor()
            elif self.take("/"):
                divisor = self.factor()
                try:
                    value = self.ring.divide(value, divisor)
                except (NumberFieldError, ZeroDivisionError) as exc:
                    self.fail(str(exc))
            else:
                return value

    def factor(self) -> Any:
        if self.take("-"):
            return -self.factor()
        if self.take("+"):
            return self.factor()
        base = self.atom()
        if self.take("^") or self.take("**"):
            sign = -1 if self.take("-") else 1
            token = self.peek()
            if token is None or token[0] != "int":
                self.fail("a power needs an integer exponent")
            assert token is not None
            self.at += 1
            exponent = sign * int(token[1])
            if abs(exponent) > MAX_EXPONENT:
                self.fail(f"the exponent {exponent} is above {MAX_EXPONENT}")
            if exponent < 0 and not self.ring.negative_powers:
                self.fail("a polynomial has no negative powers")
            return base**exponent
        return base

    def atom(self) -> Any:
        token = self.peek()
        if token is None:
            self.fail("the text ends where a number, a name or '(' is expected")
        assert token is not None
        self.at += 1
        kind, text = token
        if kind == "int":
            return self.ring.constant(fmpq(fmpz(text)))
        if kind == "name":
            if self.name is None:
                self.name = text
            elif text != self.name:
                self.fail(f"unknown name {text!r}: the generator is {self.name!r}")
            return self.ring.gen()
        if text == "(":
            value = self.expression()
            if not self.take(")"):
                self.fail("a '(' is not closed")
            return value
        self.fail(f"unexpected {text!r}")


def parse(text: Any, ring: Ring, *, name: str | None = None) -> tuple[str | None, Any]:
    """``(name, value)``: the generator's name (``name``, or the one the text uses) and the value."""
    if not isinstance(text, str):
        raise NumberFieldError(f"expected a text such as '3/2 - a/5', got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise NumberFieldError(f"the text has {len(text)} characters, above {MAX_TEXT}")
    reader = _Reader(text, ring, name)
    if not reader.tokens:
        reader.fail("the text is empty")
    value = reader.expression()
    if reader.peek() is not None:
        reader.fail(f"unexpected {reader.peek()[1]!r}")  # type: ignore[index]
    return reader.name, value
