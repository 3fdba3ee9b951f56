"""Explicit size limits: refuse, before computing, what would not finish.

Every limit is a field of the frozen :class:`Limits`; the defaults are
:data:`DEFAULT_LIMITS`. A function that takes ``limits=`` checks its sizes
against them first and raises :class:`~exactlearn.InvalidArgumentError` with a
message that states the limit, the estimated cost and how to lift it, e.g.
``learn(..., limits=Limits(d=48))`` (on the command line ``--limit d=48``).
There is no mutable global: pass a new ``Limits`` to lift a limit for one call.
An admitted run estimated to take longer than :data:`SLOW_SECONDS` says so
before its first query, as a warning of the ``exactlearn`` logger (printed on
stderr unless logging is configured otherwise).

>>> check_learn(2, 2, 2, "paper").queries
29
>>> check_learn(10**6, 1, 2, "paper")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
exactlearn.errors.InvalidArgumentError: d = 1000000 is above the limit 32; ... to lift it
"""

from __future__ import annotations

import argparse
import logging
import math
import re
from dataclasses import dataclass, fields, replace
from typing import Any

from .errors import InvalidArgumentError
from .validate import LongIntegerError, argument_int, describe, integer, is_sequence
from .validate import seed as check_seed

__all__ = ["DEFAULT_LIMITS", "MAX_JSON_DEPTH", "MAX_OUTPUT_BITS", "SLOW_SECONDS", "Estimate", "Limits",
           "affordable_answer_bits", "announce_answers", "answer_too_large", "check_approx", "check_certify",
           "check_learn", "check_random_model", "check_transformer_learn", "check_transformer_random",
           "cli_remedy", "lift", "limit_argument", "limits_of", "add_limit_option"]

#: Default bound on the estimated bit size of one exact answer of a
#: :class:`~exactlearn.MultiHeadAttention` (numerator plus denominator, summed
#: over the power products a query needs). ``2^22`` bits is about 1.3 million
#: decimal digits, far above what the learner's own queries need (a few
#: thousand bits at token bound 2) and small enough to compute in well under a
#: second. Pass ``max_bits=`` to ``Oracle``/``MultiHeadAttention.__call__`` to change it.
MAX_OUTPUT_BITS = 1 << 22
#: Deepest nesting of arrays and objects in a model file (the model formats need 5).
MAX_JSON_DEPTH = 32
#: An admitted run whose estimate exceeds this many seconds logs the estimate before it starts.
SLOW_SECONDS = 5.0
#: No limit may be set above this (every message must be able to print it).
LIMIT_CEILING = 10**100

LOG = logging.getLogger("exactlearn")

# -- measured costs (benchmarks/limits.py, one core; docs/reliability.md has the table) --------------
#: learn(Oracle(random model)): CPU seconds ~ LEARN_SECONDS * queries * d * H * (1 + (B / 8)^2.5 * d / 8)
#: at token bound B (learner and oracle; fitted within 25% on d = 12..32, H = 4..51 at B = 2; the
#: factor of B from d = 4, 8 and B = 10, 30, 100, where it is rougher).
LEARN_SECONDS = 3.5e-6
#: One copy function from answers of b bits costs up to about ANSWER_SECONDS * (2H + 1)^2 * b^2 CPU
#: seconds when the answers fit no attention (the exact solve's worst case: measured on the truth plus
#: 10^-k, d = 2, H = 2, k = 10^3 .. 10^5); genuine answers of that size cost less (a quarter or less).
ANSWER_SECONDS = 5e-13
#: MultiHeadAttention.random + to_json: CPU seconds and peak bytes per exact entry, a + b * log10(height)
#: (26 us and 350 bytes at height 10^18, 17 us and 200 bytes at height 30).
RANDOM_ENTRY_SECONDS, RANDOM_ENTRY_BYTES = (1.5e-5, 6e-7), (180, 9)
#: exactlearn certify: measured CPU seconds and peak MB by (d, H); other sizes are extrapolated.
CERTIFY_MEASURED: dict[tuple[int, int], tuple[float, int]] = {
    (1, 1): (0.01, 30), (1, 2): (0.01, 30), (1, 3): (0.05, 31), (1, 4): (2.5, 40), (1, 5): (847.0, 600),
    (2, 1): (0.01, 30), (2, 2): (0.05, 31), (2, 3): (0.46, 34), (2, 4): (74.2, 358),
    (3, 1): (0.03, 30), (3, 2): (0.2, 32), (3, 3): (4.3, 59),
    (4, 1): (0.07, 31), (4, 2): (0.5, 34), (4, 3): (23.9, 145),
    (5, 1): (0.27, 37), (5, 2): (3.2, 52), (5, 3): (137.0, 456),
    (6, 1): (0.62, 39), (6, 2): (9.4, 73), (6, 3): (574.0, 1222),
}


@dataclass(frozen=True)
class Limits:
    """Maxima checked before any work starts (each overridable: ``Limits(d=48)``).

    Learners: ``d``, ``heads``, ``token_bound``, ``queries`` (the learner's token
    width, head count ``H`` or ``H0``, token range and planned query count,
    verification queries included), ``learn_seconds`` (the run's estimated CPU
    seconds, :data:`LEARN_SECONDS`), ``redraws`` (the largest ``max_redraws``),
    ``precision`` (bits of :func:`~exactlearn.approx.learn_approx`) and
    ``query_length`` (the longest query :func:`~exactlearn.transformer.learn_transformer`
    may ask, and the longest :func:`~exactlearn.approx.learn_approx`'s ``copy_counts`` may ask).
    Random models: ``model_d``, ``model_heads``, ``model_entries``
    (``heads * d^2`` exact entries), ``height`` and ``width`` (the FFN of
    :meth:`~exactlearn.transformer.Transformer.random`). ``certify_d``,
    ``certify_heads``, ``certify_seconds``: ``exactlearn certify`` (the symbolic
    run over ``Q(E, V)``, whose cost explodes with ``H``). Model files:
    ``file_bytes`` (read at most this much) and ``entry_digits`` (digits of one
    numerator or denominator). The command line's oracle: ``oracle_bits`` (its
    ``max_bits``, the largest exact answer it computes). Number fields: ``field_degree`` and ``field_bits``
    (the degree of a :class:`~exactlearn.NumberField` and the bits of each
    coefficient of its minimal polynomial), ``exp_bits`` (the largest size in bits
    of the coordinates of an ``exp(W)`` entry the learner searches for,
    docs/number-fields.md). Vector answers: ``outputs`` (the length ``D`` an oracle declares,
    checked before the first query). Every field is an integer (``bool`` refused) of at
    least 1 (``height`` 2, ``precision`` 16, ``redraws`` 0) and at most 10^100
    (``precision`` 2^30), checked when the ``Limits`` is made. docs/reliability.md
    gives the measured cost of the largest inputs the defaults admit.
    """

    d: int = 32
    heads: int = 64
    token_bound: int = 100
    queries: int = 100_000
    learn_seconds: int = 900
    redraws: int = 10_000
    precision: int = 1 << 14
    query_length: int = 10**6
    model_d: int = 256
    model_heads: int = 4096
    model_entries: int = 1 << 20
    height: int = 10**18
    width: int = 1024
    certify_d: int = 6
    certify_heads: int = 4
    field_degree: int = 8
    field_bits: int = 256
    exp_bits: int = 1024
    certify_seconds: int = 120
    file_bytes: int = 64 << 20
    entry_digits: int = 10_000
    oracle_bits: int = MAX_OUTPUT_BITS
    outputs: int = 4096

    def __post_init__(self) -> None:
        for f in fields(self):
            high, why = _HIGHEST.get(f.name, (LIMIT_CEILING, "no limit can be set above 10^100"))
            integer(f"Limits.{f.name}", getattr(self, f.name), _LOWEST.get(f.name, 1), high, lift=why)

    def lifted(self, **changes: Any) -> Limits:
        """A copy with some limits changed (each checked like the constructor's).

        >>> DEFAULT_LIMITS.lifted(d=48).d
        48
        """
        names = [f.name for f in fields(self)]
        for name in changes:
            if name not in names:
                raise InvalidArgumentError(f"Limits has no field {describe(name)}; the fields are "
                                           f"{', '.join(names)}")
        return replace(self, **changes)


_LOWEST = {"height": 2, "precision": 16, "redraws": 0}
_HIGHEST = {"precision": (1 << 30, "python-flint's working precision is a C int")}

DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Estimate:
    """What a learning run will cost at least: planned queries, design size, query length; and the
    estimated CPU seconds on one core (for a :class:`~exactlearn.Oracle` over a model)."""

    queries: int
    design: int
    max_length: int
    seconds: float = 0.0


def lift(field: str) -> str:
    """The remedy every limit message ends with (the command line shows ``--limit FIELD=...``)."""
    return f"pass limits=Limits({field}=...) to lift it"


def limit_argument(text: str) -> tuple[str, int]:
    """The argparse ``type`` of ``--limit NAME=VALUE``, the one way to lift a limit on every command line.

    >>> limit_argument("d=48")
    ('d', 48)
    """
    name, sep, value = text.partition("=")
    names = [f.name for f in fields(Limits)]
    if not sep or name.strip() not in names:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME one of {', '.join(names)}, "
                                         f"got {describe(text)}")
    try:
        number = argument_int(value.strip().replace("_", ""))
    except LongIntegerError as exc:
        raise argparse.ArgumentTypeError(f"{name.strip()}: expected an integer, got {exc}") from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name.strip()}: expected an integer, "
                                         f"got {describe(value)}") from None
    return name.strip(), number


def add_limit_option(parser: argparse.ArgumentParser) -> None:
    """``--limit NAME=VALUE`` on a command line: lift one field of :class:`Limits` for this run."""
    parser.add_argument("--limit", type=limit_argument, action="append", default=[], metavar="NAME=VALUE",
                        help="lift a size limit for this run, e.g. --limit d=48 (repeatable; NAME is a field "
                        "of exactlearn.Limits, docs/reliability.md)")


def limits_of(pairs: Any) -> Limits:
    """:data:`DEFAULT_LIMITS` with the ``--limit`` pairs of a command line applied."""
    return DEFAULT_LIMITS.lifted(**dict(pairs)) if pairs else DEFAULT_LIMITS


def cli_remedy(message: str) -> str:
    """A library message as the command line shows it: ``limits=Limits(d=...)`` becomes ``--limit d=...``.

    >>> cli_remedy(f"d = 40 is above the limit 32; {lift('d')}")
    'd = 40 is above the limit 32; pass --limit d=... to lift it'
    """
    return re.sub(r"limits=Limits\((\w+)=\.\.\.\)", r"--limit \1=...", message)


def _limits(limits: Any) -> Limits:
    if not isinstance(limits, Limits):
        raise InvalidArgumentError(f"limits must be an exactlearn.Limits, got {type(limits).__name__}")
    return limits


def _planned(d: int, heads: int, schedule: str, n: int) -> int:
    """The schedule's queries with ``n`` configurations (``d^2``, or ``d(d + 1)`` for affine attention)."""
    if schedule == "lean":
        return d * (2 * heads + 1) + (n - 1) * (2 * heads - 1)
    return 4 * heads * n - 2 * heads + 1


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 3.6e7 else f"{seconds / 3.15e7:.2g} years"


def _size(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:.0f} MB" if n_bytes < 2**30 else f"{n_bytes / 2**30:.1f} GB"


def _exponent(n: int) -> int:
    """The number of decimal digits of ``n > 0``, minus one (estimated beyond 3000 bits)."""
    return len(str(n)) - 1 if n.bit_length() < 3000 else int(n.bit_length() * math.log10(2))


def _magnitude(n: int) -> str:
    """``n`` itself up to 15 digits, else ``about 10^k``."""
    return str(n) if n < 10**15 else f"about 10^{_exponent(n)}"


def announce(what: str, seconds: float) -> None:
    """Log ``what`` with its estimate when an admitted run will take longer than :data:`SLOW_SECONDS`."""
    if seconds > SLOW_SECONDS:
        LOG.warning("%s: estimated %s of CPU time", what, _duration(seconds))


def check_learn(d: int, heads: int, token_bound: int, schedule: str,
                limits: Limits = DEFAULT_LIMITS, *, verify: int = 0,
                max_redraws: int | None = None, announce_slow: bool = True,
                affine: bool = False) -> Estimate:
    """Check a learning run's sizes against ``limits``; return its :class:`Estimate`.

    ``d``, ``heads``, ``token_bound`` (and ``verify``, ``max_redraws``) must
    already be validated integers; ``affine``: the schedule of affine attention
    (``d(d + 1)`` configurations). A run estimated above :data:`SLOW_SECONDS`
    is announced (``announce_slow``) with its estimate.
    """
    limits = _limits(limits)
    cost = _learn_cost(d, heads, schedule, affine)
    integer("d", d, 1, limits.d, lift=f"{cost}; {lift('d')}")
    integer("heads", heads, 1, limits.heads, lift=f"{cost}; {lift('heads')}")
    n = d * (d + 1) if affine else d * d
    queries = _planned(d, heads, schedule, n)
    est = Estimate(queries, (d + 1) ** 2 if affine else n, 2 * heads + 1,
                   _learn_seconds(queries + verify, d, heads, token_bound))
    if token_bound > limits.token_bound:
        raise InvalidArgumentError(
            f"token_bound = {describe(token_bound)} is too large (the limit is {limits.token_bound}): "
            f"exact answers grow "
            f"like token_bound^2 digits and the learner's time like token_bound^4 (about 6 s at 200 for "
            f"d = 2, H = 2); {lift('token_bound')}")
    if est.queries + verify > limits.queries:
        extra = f" and {describe(verify)} verification queries" if verify else ""
        raise InvalidArgumentError(
            f"{cost}{extra}, above the limit of {limits.queries} planned queries "
            f"(estimated {_duration(est.seconds)} on one core); {lift('queries')}")
    if est.seconds > limits.learn_seconds:
        raise InvalidArgumentError(
            f"learning d = {d}, H = {heads} with token_bound = {token_bound} ({est.queries + verify} planned "
            f"queries) is estimated at {_duration(est.seconds)} of CPU time on one core, above the limit of "
            f"{limits.learn_seconds} s; {lift('learn_seconds')}")
    if max_redraws is not None:
        integer("max_redraws", max_redraws, 0, limits.redraws,
                lift=f"each redraw costs up to {est.max_length - 1} queries; {lift('redraws')}")
    if announce_slow:
        announce(f"learning d = {d}, H = {heads}, {est.queries + verify} queries", est.seconds)
    return est


def affordable_answer_bits(d: int, heads: int, limits: Limits = DEFAULT_LIMITS) -> int:
    """The largest answer, in bits, a learning run at ``d``, ``H`` affords: the ``2d`` copy functions
    of its first ``d`` configurations and their links (by which answers that fit no attention are
    refused) at the worst-case cost (:data:`ANSWER_SECONDS`) stay within ``limits.learn_seconds``.

    >>> affordable_answer_bits(2, 2) > 10**6, affordable_answer_bits(32, 16) < affordable_answer_bits(2, 2)
    (True, True)
    """
    per_bit2 = ANSWER_SECONDS * 2 * d * (2 * heads + 1) ** 2
    return math.isqrt(int(_limits(limits).learn_seconds / per_bit2))


def announce_answers(bits: int, d: int, heads: int, announced: int) -> int:
    """Announce (:func:`announce`) the worst-case cost of a run whose answers have ``bits`` bits when it
    is above :data:`SLOW_SECONDS` and ``bits`` is above the size last ``announced``; the size now
    announced (``announced`` if none was).

    >>> announce_answers(100, 2, 2, 0), announce_answers(10**6, 2, 2, 10**7)
    (0, 10000000)
    """
    seconds = ANSWER_SECONDS * 2 * d * (2 * heads + 1) ** 2 * bits**2
    if bits <= announced or seconds <= SLOW_SECONDS:
        return announced
    announce(f"answers of {bits} bits at d = {d}, H = {heads}", seconds)
    return 2 * bits  # announced again only if answers double


def answer_too_large(bits: int, query: int, d: int, heads: int,
                     limits: Limits = DEFAULT_LIMITS) -> str | None:
    """Why an answer of ``bits`` bits (query number ``query``) is refused at ``d``, ``H``, or ``None``."""
    affordable = affordable_answer_bits(d, heads, limits)
    if bits <= affordable:
        return None
    return (f"the answer to query {query} has {bits} bits; at d = {d}, H = {heads} the learner affords "
            f"answers of at most {affordable} bits within learn_seconds = {limits.learn_seconds} "
            f"(reconstruction costs up to the square of the answers' size); {lift('learn_seconds')}")


def _learn_seconds(queries: int, d: int, heads: int, token_bound: int) -> float:
    """CPU seconds of a learning run by the measured fit (arguments capped so that floats cannot overflow)."""
    q, w, h, b = (float(min(n, 10**50)) for n in (queries, d, heads, token_bound))
    return LEARN_SECONDS * q * w * h * (1 + (b / 8) ** 2.5 * w / 8)


def _learn_cost(d: int, heads: int, schedule: str, affine: bool = False) -> str:
    n = d * (d + 1) if affine else d * d
    queries, design = _planned(d, heads, schedule, n), (d + 1) ** 2 if affine else n
    if design >= 10**6:
        side = f"10^{_exponent(design)}"
        return (f"the {schedule} schedule would ask {_magnitude(queries)} queries over a design of "
                f"{side} x {side} exact rationals")
    return (f"the {schedule} schedule would ask {_magnitude(queries)} queries of length up to "
            f"{_magnitude(2 * heads + 1)} over a {design} x {design} design")


def check_random_model(d: int, heads: int, height: int, limits: Limits = DEFAULT_LIMITS,
                       error: type = InvalidArgumentError) -> None:
    """Check the sizes of :meth:`~exactlearn.MultiHeadAttention.random` against ``limits``."""
    limits = _limits(limits)
    integer("d", d, 1, limits.model_d, error=error,
            lift=f"a model holds heads * d^2 exact entries; {lift('model_d')}")
    integer("heads", heads, 1, limits.model_heads, error=error, lift=lift("model_heads"))
    integer("height", height, 2, limits.height, error=error, lift=lift("height"))
    _entries(f"{heads} heads of {d} x {d}", heads * d * d, height, limits, error)


def _entries(what: str, entries: int, height: int, limits: Limits, error: type) -> None:
    """Refuse a random model of more than ``limits.model_entries`` exact entries, with its cost;
    announce an admitted one that takes longer than :data:`SLOW_SECONDS`."""
    digits = math.log10(height)
    seconds = entries * (RANDOM_ENTRY_SECONDS[0] + RANDOM_ENTRY_SECONDS[1] * digits)
    memory = entries * (RANDOM_ENTRY_BYTES[0] + RANDOM_ENTRY_BYTES[1] * digits)
    cost = f"about {_duration(seconds)} and {_size(memory)} to draw and write"
    if entries > limits.model_entries:
        raise error(f"a random model of {what} holds {entries} exact entries, above the limit of "
                    f"{limits.model_entries}: {cost}; {lift('model_entries')}")
    announce(f"drawing {what} ({entries} entries)", seconds)


def check_transformer_random(d: int, heads: int, width: int, height: int,
                             limits: Limits = DEFAULT_LIMITS, error: type = InvalidArgumentError) -> None:
    """Check the sizes of :meth:`~exactlearn.transformer.Transformer.random` against ``limits``."""
    limits = _limits(limits)
    check_random_model(d, heads, height, limits, error)
    integer("width", width, 1, limits.width, error=error,
            lift=f"the learner finds the FFN's lines one by one; {lift('width')}")
    _entries(f"{heads} heads of {d} x {d} and width {width}", 2 * heads * d * d + width * (d + 1), height,
             limits, error)


def check_transformer_learn(d: int, heads: int, verify: int, max_length: int,
                            limits: Limits = DEFAULT_LIMITS, *, seed: Any = 0) -> None:
    """Check the sizes and seed of :func:`~exactlearn.transformer.learn_transformer` against ``limits``."""
    limits = _limits(limits)
    check_seed(seed)
    est = check_learn(d, heads, 1, "paper", limits, announce_slow=False)
    if 2 * est.queries + verify > limits.queries:
        raise InvalidArgumentError(
            f"learning a Transformer asks 2 x {est.queries} queries for its attention (d = {d}, H = {heads}) "
            f"and verify = {describe(verify)} more, above the limit of {limits.queries} planned queries; "
            f"{lift('queries')}")
    integer("max_length", max_length, 1, limits.query_length,
            lift=f"a query of max_length tokens is a list of that many tuples; {lift('query_length')}")
    announce(f"learning a Transformer's attention, d = {d}, H = {heads}", 2 * est.seconds)


def check_approx(d: int, precision: int, limits: Limits = DEFAULT_LIMITS, *, seed: Any = 0,
                 guide: Any = None) -> None:
    """Check the precision, seed and guide of :func:`~exactlearn.approx.learn_approx` (``d`` validated)."""
    limits = _limits(limits)
    integer("precision", precision, 16, limits.precision,
            lift=f"ball arithmetic at p bits costs about p^1.6 per operation; {lift('precision')}")
    check_seed(seed)
    _check_guide(guide, d)


def _check_guide(guide: Any, d: int) -> None:
    """A guide of another token width is refused before any query (``'auto'``, ``'sketch'``, None pass)."""
    if guide is None or isinstance(guide, str):
        return
    try:
        width = guide.d  # a model or a recovery
    except Exception:  # noqa: BLE001 - no width (a list of pairs), or a property that fails
        width = None
    if isinstance(width, int) and not isinstance(width, bool):
        if width != d:
            raise InvalidArgumentError(f"the guide has token width d = {width}, but d = {d} was given; "
                                       f"pass a guide (a model or a recovery) of width {d}")
        return
    if not is_sequence(guide):
        raise InvalidArgumentError(f"guide must be a model, a recovery, a list of (W, v) pairs, 'auto', "
                                   f"'sketch' or None, got {type(guide).__name__}")
    for h, pair in enumerate(guide):
        square = (is_sequence(pair) and len(pair) == 2 and is_sequence(pair[0]) and len(pair[0]) == d
                  and all(is_sequence(row) and len(row) == d for row in pair[0])
                  and is_sequence(pair[1]) and len(pair[1]) == d)
        if not square:
            raise InvalidArgumentError(f"guide head {h}: expected a pair (W, v) with W of size {d} x {d} "
                                       f"and v of length {d}")


def certify_estimate(d: int, heads: int) -> tuple[float, int]:
    """Estimated CPU seconds and peak MB of ``exactlearn certify`` at ``(d, heads)``.

    Measured sizes are looked up; others are extrapolated from the nearest measured
    size below, by the measured growth (x 6 per step in ``d`` at H = 3; x 300 per head:
    H = 5 costs 340 times H = 4 at d = 1, docs/reliability.md).
    """
    if (d, heads) in CERTIFY_MEASURED:
        return CERTIFY_MEASURED[(d, heads)]
    h0 = min(heads, max(h for _, h in CERTIFY_MEASURED))
    d0 = max((dd for dd, hh in CERTIFY_MEASURED if hh == h0 and dd <= d), default=1)
    seconds, mb = CERTIFY_MEASURED.get((d0, h0), (0.01, 30))
    factor = 6.0 ** (d - d0) * 300.0 ** (heads - h0)
    return seconds * factor, int(mb * max(1.0, factor ** 0.6))


def check_certify(d: int, heads: int, limits: Limits = DEFAULT_LIMITS) -> tuple[float, int]:
    """Check the sizes of ``exactlearn certify`` against ``limits``; return its estimate (seconds, MB)."""
    limits = _limits(limits)
    integer("d", d, 1, limits.certify_d, lift=lift("certify_d"))
    integer("heads", heads, 1, limits.certify_heads, lift=lift("certify_heads"))
    seconds, mb = certify_estimate(d, heads)
    if seconds > limits.certify_seconds:
        raise InvalidArgumentError(
            f"certify at d = {d}, H = {heads} is estimated at {_duration(seconds)} of CPU time and "
            f"{_size(mb * 2**20)} of memory (the symbolic run's cost explodes with H), above the limit of "
            f"{limits.certify_seconds} s; {lift('certify_seconds')}")
    return seconds, mb
