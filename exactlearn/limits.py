"""Explicit size limits: refuse, before computing, what would not finish.

Every limit is a field of the frozen :class:`Limits`; the defaults are
:data:`DEFAULT_LIMITS`. A function that takes ``limits=`` checks its sizes
against them first and raises :class:`~exactlearn.InvalidArgumentError` with a
message that states the limit, the estimated cost and how to lift it, e.g.
``learn(..., limits=Limits(d=48))``. There is no mutable global: pass a new
``Limits`` to lift a limit for one call.

>>> check_learn(2, 2, 2, "paper").queries
29
>>> check_learn(10**6, 1, 2, "paper")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
exactlearn.errors.InvalidArgumentError: d = 1000000 is above the limit 32; ... to lift it
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .errors import InvalidArgumentError
from .validate import integer

__all__ = ["DEFAULT_LIMITS", "MAX_OUTPUT_BITS", "Estimate", "Limits", "check_certify", "check_learn",
           "check_random_model"]

#: Default bound on the estimated bit size of one exact answer of a
#: :class:`~exactlearn.MultiHeadAttention` (numerator plus denominator, summed
#: over the power products a query needs). ``2^22`` bits is about 1.3 million
#: decimal digits, far above what the learner's own queries need (a few
#: thousand bits at token bound 2) and small enough to compute in well under a
#: second. Pass ``max_bits=`` to ``Oracle``/``MultiHeadAttention.__call__`` to change it.
MAX_OUTPUT_BITS = 1 << 22


@dataclass(frozen=True)
class Limits:
    """Maxima checked before any work starts (each overridable: ``Limits(d=48)``).

    ``d``, ``heads``, ``token_bound``, ``queries``: the learner's token width,
    head count (``H`` or ``H0``), token range and planned query count
    (verification queries included); ``redraws``: the largest ``max_redraws``.
    ``model_d``, ``model_heads``, ``height``: sizes of
    :meth:`~exactlearn.MultiHeadAttention.random`. ``certify_d``,
    ``certify_heads``: sizes of ``exactlearn certify`` (the symbolic run over
    ``Q(E, V)``; H = 4 takes about a minute at d = 2, H = 5 over ten minutes
    at d = 1, docs/generic-certificate.md).

    The defaults, measured on one core (docs/performance.md, docs/reliability.md):
    d = 16, H = 8 (8177 queries) takes about 4 s; the learner's time grows like
    token_bound^4 (0.5 s at token_bound = 100, 6 s at 200, d = 2, H = 2).
    """

    d: int = 32
    heads: int = 64
    token_bound: int = 100
    queries: int = 100_000
    redraws: int = 10_000
    model_d: int = 256
    model_heads: int = 4096
    height: int = 10**18
    certify_d: int = 6
    certify_heads: int = 4

    def lifted(self, **changes: int) -> Limits:
        """A copy with some limits changed."""
        return replace(self, **changes)


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Estimate:
    """What a learning run will cost at least: planned queries, design size, query length."""

    queries: int
    design: int
    max_length: int


def _lift(field: str) -> str:
    return f"pass limits=Limits({field}=...) to lift it"


def _planned(d: int, heads: int, schedule: str, n: int) -> int:
    """The schedule's queries with ``n`` configurations (``d^2``, or ``d(d + 1)`` for affine attention)."""
    if schedule == "lean":
        return d * (2 * heads + 1) + (n - 1) * (2 * heads - 1)
    return 4 * heads * n - 2 * heads + 1


def check_learn(d: int, heads: int, token_bound: int, schedule: str,
                limits: Limits = DEFAULT_LIMITS, *, verify: int = 0,
                max_redraws: int | None = None, affine: bool = False) -> Estimate:
    """Check a learning run's sizes against ``limits``; return its :class:`Estimate`.

    ``d``, ``heads``, ``token_bound`` (and ``verify``, ``max_redraws``) must
    already be validated integers; ``affine``: the schedule of affine attention.
    """
    if not isinstance(limits, Limits):
        raise InvalidArgumentError(f"limits must be an exactlearn.Limits, got {type(limits).__name__}")
    n = d * (d + 1) if affine else d * d
    est = Estimate(_planned(d, heads, schedule, n), (d + 1) ** 2 if affine else n, 2 * heads + 1)
    cost = (f"the {schedule} schedule would ask {est.queries} queries over a design of "
            f"10^{len(str(est.design)) - 1} x 10^{len(str(est.design)) - 1} exact rationals"
            if est.design >= 10**6 else
            f"the {schedule} schedule would ask {est.queries} queries of length up to {est.max_length} "
            f"over a {est.design} x {est.design} design")
    integer("d", d, 1, limits.d, lift=f"{cost}; {_lift('d')}")
    integer("heads", heads, 1, limits.heads, lift=f"{cost}; {_lift('heads')}")
    if token_bound > limits.token_bound:
        raise InvalidArgumentError(
            f"token_bound = {token_bound} is too large (the limit is {limits.token_bound}): "
            f"exact answers grow "
            f"like token_bound^2 digits and the learner's time like token_bound^4 (about 6 s at 200 for "
            f"d = 2, H = 2); {_lift('token_bound')}")
    if est.queries + verify > limits.queries:
        extra = f" and {verify} verification queries" if verify else ""
        raise InvalidArgumentError(
            f"{cost}{extra}, above the limit of {limits.queries} planned queries; {_lift('queries')}")
    if max_redraws is not None:
        integer("max_redraws", max_redraws, 0, limits.redraws,
                lift=f"each redraw costs up to {est.max_length - 1} queries; {_lift('redraws')}")
    return est


def check_random_model(d: int, heads: int, height: int, limits: Limits = DEFAULT_LIMITS,
                       error: type = InvalidArgumentError) -> None:
    """Check the sizes of :meth:`~exactlearn.MultiHeadAttention.random` against ``limits``."""
    if not isinstance(limits, Limits):
        raise InvalidArgumentError(f"limits must be an exactlearn.Limits, got {type(limits).__name__}")
    integer("d", d, 1, limits.model_d, error=error,
            lift=f"a model holds heads * d^2 exact entries; {_lift('model_d')}")
    integer("heads", heads, 1, limits.model_heads, error=error, lift=_lift("model_heads"))
    integer("height", height, 2, limits.height, error=error, lift=_lift("height"))


def check_certify(d: int, heads: int, limits: Limits = DEFAULT_LIMITS) -> None:
    """Check the sizes of ``exactlearn certify`` against ``limits`` (the command line's guard)."""
    lift = ("the symbolic run's time grows steeply with d and H (seconds at d = 3, H = 3, about a minute at "
            "d = 2, H = 4); exactlearn.symbolic.certify(...) from Python has no such limit")
    integer("d", d, 1, limits.certify_d, lift=lift)
    integer("heads", heads, 1, limits.certify_heads, lift=lift)
