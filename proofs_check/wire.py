"""What crosses the pipes between the judge, the learner and the oracle: plain values.

The judge's messages start with a :class:`Tag`. The learner's pipe carries
nothing but queries (a tuple of tuples) one way and answers (:func:`encode`d,
or ``("!", error type, message)`` for a query the model raised on) the other.

python-flint numbers pickle slowly (about 0.25 ms each), so exact rationals
travel as ``("q", p, q)`` with Python integers and are rebuilt on arrival. An
element of a number field travels as ``("k", polynomial, root interval,
coordinates)``: a pickled element would rebuild its field on arrival (a few
milliseconds each), and elements of equal but distinct field objects are slower
to mix, so :func:`decode` builds each field once per ``fields`` cache (the
asker keeps one per session). A token entry that is an ``int`` or a ``float``
travels as itself; anything else (an mpmath number, a ``Fraction``) is pickled
as it is.

>>> value = decode(encode(fmpq(-3, 7)))
>>> value, type(value).__name__
(-3/7, 'fmpq')
>>> from exactlearn import NumberField
>>> K, fields = NumberField("a^2 - 2", root=("1", "2")), {}
>>> x, y = (decode(encode(K(t)), fields) for t in ("3/2 - a/5", "a"))
>>> x, x == K("3/2 - a/5"), x.field is y.field
(3/2 - a/5, True, True)
>>> decode_tokens(encode_tokens([(1, fmpq(1, 2)), (0, 2)]))
((1, 1/2), (0, 2))
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from flint import fmpq, fmpz

__all__ = ["Role", "Tag", "decode", "decode_tokens", "encode", "encode_tokens"]


class Role(enum.Enum):
    """Where code runs: the judge (the claims), the learner's process, the oracle's process."""

    JUDGE = "judge"
    LEARNER = "learner"
    ORACLE = "oracle"


class Tag(enum.Enum):
    """The kind of a message on a pipe (the first element of every message)."""

    READY = "ready"  # a process started (with the error of a hook that failed, or None)
    LOAD = "load"  # judge -> oracle: build the model of a recipe, start a session
    REVEAL = "reveal"  # judge -> oracle: end the session, send the truth and the log
    REVEALED = "revealed"  # oracle -> judge: the truth, the log, the counts, the protocol problems
    LEARN = "learn"  # judge -> learner: run a job against the oracle
    RESULT = "result"  # learner -> judge: the learner's summary and the queries its stub sent
    FAILED = "failed"  # a recipe or a job could not even start (message)
    STOP = "stop"  # judge -> a process: exit


def encode(value: Any) -> Any:
    """One number as a plain value (exact rationals as ``("q", p, q)``, elements of a number field as
    ``("k", polynomial, (lo, hi), ((p, q), ...))``)."""
    from exactlearn.numberfield import NumberFieldElement

    if isinstance(value, fmpq):
        return ("q", int(value.p), int(value.q))
    if isinstance(value, fmpz):
        return ("q", int(value), 1)
    if isinstance(value, NumberFieldElement):
        field = value.field.to_dict()
        coordinates = tuple((int(c.p), int(c.q)) for c in value.coordinates())
        return ("k", field["polynomial"], tuple(field["root_interval"]), coordinates)
    return ("o", value)


def decode(value: Any, fields: dict | None = None) -> Any:
    """The inverse of :func:`encode`; a number field is built once per ``fields`` cache (a dict)."""
    if value[0] == "q":
        return fmpq(value[1], value[2])
    if value[0] == "k":
        from exactlearn.numberfield import NumberField

        _, polynomial, interval, coordinates = value
        fields = {} if fields is None else fields
        K = fields.get((polynomial, interval))
        if K is None:
            K = fields[polynomial, interval] = NumberField.from_dict(
                {"polynomial": polynomial, "root_interval": list(interval)})
        return K.from_coordinates([fmpq(p, q) for p, q in coordinates])
    return value[1]


def _entry(e: Any) -> Any:
    return e if type(e) is int or type(e) is float else encode(e)


def _unentry(e: Any) -> Any:
    return decode(e) if type(e) is tuple else e


def _plain(t: Sequence[Any]) -> bool:
    return all(type(e) is int for e in t)


def encode_tokens(tokens: Sequence[Sequence[Any]]) -> tuple[tuple, ...]:
    """A query as a tuple of tuples of plain values."""
    return tuple(tuple(t) if _plain(t) else tuple(_entry(e) for e in t) for t in tokens)


def decode_tokens(tokens: Sequence[Sequence[Any]]) -> tuple[tuple, ...]:
    """The inverse of :func:`encode_tokens`: a query as a tuple of tuples."""
    return tuple(t if _plain(t) else tuple(_unentry(e) for e in t) for t in tokens)
