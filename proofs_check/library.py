"""The one place where proofs_check depends on exactlearn beyond its documented API.

The learner's process calls the learners through this module
(``library.learn(...)``, ``library.learn_approx(...)``,
``library.learn_transformer(...)``; :mod:`proofs_check.learners`), looked up at
call time, so that the self-test (:mod:`proofs_check.selftest`) can wrap them
in one place. Everything in proofs_check that reads a library internal is
listed in :data:`INTERNALS`; after a refactoring of exactlearn's internals only
the places named there (and the plants, :mod:`proofs_check.plants`) need
retargeting.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import exactlearn

__all__ = ["FIELD_ARITHMETIC", "INTERNALS", "LibraryEvaluationCalled", "field_arithmetic_disabled",
           "is_ambiguous_pairing", "learn", "learn_approx", "learn_symbolic", "learn_transformer",
           "library_evaluation_disabled", "reasons_of", "symbolic_model"]

#: what proofs_check reads below the public API, where, and why
INTERNALS = {
    "redraw reasons": "is_ambiguous_pairing: a redraw entry's .reason (exactlearn.states.Redraw, "
                      "RedrawReason.AMBIGUOUS_PAIRING)",
    "symbolic schedule": "learn_symbolic: exactlearn.learn.run_schedule over a SymbolicField "
                         "(the run certify makes); symbolic_model: SymbolicModel, SymbolicField.ctx "
                         "(claim 40 builds its own conditions in the certificate's ring)",
    "model evaluation entry points": "library_evaluation_disabled: MultiHeadAttention.__call__, "
                                     "MultiHeadAttention.evaluate, Head.score",
    "number-field arithmetic": "field_arithmetic_disabled: NumberFieldElement's arithmetic "
                               "(FIELD_ARITHMETIC)",
    "approximate result": "learners: ApproxRecovery.links[j].link and .measurements (the summary "
                          "claim 20 passes back to exactlearn.approx.sensitivity through its "
                          "Recovered stand-in, which offers scale, num_heads, measurements and "
                          "links[j].link)",
}


def learn(oracle: Any, d: int, **kwargs: Any) -> exactlearn.Recovery:
    """:func:`exactlearn.learn` (the self-test wraps this name)."""
    return exactlearn.learn(oracle, d, **kwargs)


def learn_approx(oracle: Any, d: int, **kwargs: Any) -> Any:
    """:func:`exactlearn.approx.learn_approx` (the self-test wraps this name)."""
    from exactlearn.approx import learn_approx as real

    return real(oracle, d, **kwargs)


def learn_transformer(oracle: Any, d: int, **kwargs: Any) -> Any:
    """:func:`exactlearn.transformer.learn_transformer` (the self-test wraps this name)."""
    from exactlearn.transformer import learn_transformer as real

    return real(oracle, d, **kwargs)


def symbolic_model(d: int, heads: int) -> Any:
    """A model with indeterminate weights ``E``, ``V``: ``SymbolicModel(SymbolicField(d, heads))``."""
    from exactlearn.symbolic import SymbolicField, SymbolicModel

    return SymbolicModel(SymbolicField(d, heads))


def learn_symbolic(oracle: Any, d: int, heads: int, *, field: Any, seed: Any) -> list:
    """The chained schedule over ``field`` (the run :func:`exactlearn.symbolic.certify` makes), asking
    ``oracle``; returns the recovered ``[(W_h, v_h)]`` as field elements."""
    from exactlearn.learn import run_schedule

    return run_schedule(oracle, d, heads, field=field, seed=seed).result


def is_ambiguous_pairing(redraw: Any) -> bool:
    """Was this redraw (an entry of ``Recovery.redraw_reasons`` or ``RecoveryError.reasons``, each an
    :class:`exactlearn.states.Redraw`) made because a link's head pairing was not unique?

    Decided by the entry's ``reason``, never by its text: a plain string is not a redraw entry.
    """
    from exactlearn.states import RedrawReason

    return getattr(redraw, "reason", None) is RedrawReason.AMBIGUOUS_PAIRING


def reasons_of(error: BaseException) -> list:
    """The redraw reasons a RecoveryError carries (empty if it carries none)."""
    return list(getattr(error, "reasons", None) or [])


class LibraryEvaluationCalled(RuntimeError):
    """exactlearn's model evaluation was called inside :func:`library_evaluation_disabled`."""


#: the arithmetic of exactlearn's number-field elements (disabled by :func:`field_arithmetic_disabled`)
FIELD_ARITHMETIC = ("__add__", "__radd__", "__sub__", "__rsub__", "__neg__", "__mul__", "__rmul__",
                    "__truediv__", "__rtruediv__", "__pow__", "inverse")


@contextlib.contextmanager
def _refused(names: list[tuple[Any, str]]) -> Iterator[None]:
    """Inside the block each ``owner.name`` raises :class:`LibraryEvaluationCalled`."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise LibraryEvaluationCalled(
            "exactlearn's model evaluation was called from the independent evaluator")

    originals = [(owner, name, owner.__dict__.get(name)) for owner, name in names if hasattr(owner, name)]
    try:
        for owner, name, _ in originals:
            setattr(owner, name, refuse)
        yield
    finally:
        for owner, name, value in originals:
            if value is None:  # inherited: the class's own entry goes again
                delattr(owner, name)
            else:
                setattr(owner, name, value)


@contextlib.contextmanager
def library_evaluation_disabled() -> Iterator[None]:
    """Inside the block every way exactlearn evaluates a model raises :class:`LibraryEvaluationCalled`.

    Claim 9 evaluates its control case inside this block: an evaluator that is
    secretly the library's own evaluation fails there.
    """
    from exactlearn.model import Head, MultiHeadAttention

    with _refused([(MultiHeadAttention, "__call__"), (MultiHeadAttention, "evaluate"), (Head, "score")]):
        yield


@contextlib.contextmanager
def field_arithmetic_disabled() -> Iterator[None]:
    """:func:`library_evaluation_disabled`, and every arithmetic operation of exactlearn's number-field
    elements (:data:`FIELD_ARITHMETIC`) raises too: claim 21's evaluator control runs inside it."""
    from exactlearn.numberfield import NumberFieldElement

    with library_evaluation_disabled(), _refused([(NumberFieldElement, n) for n in FIELD_ARITHMETIC]):
        yield
