"""The errors exactlearn raises, so that callers can catch exactly what went wrong.

Every error derives from :class:`ExactLearnError`. Errors about bad *input* also
derive from :class:`ValueError` or :class:`TypeError`, so ordinary Python code that
catches those keeps working.

Learning failures derive from :class:`RecoveryError`:

* :class:`RedrawBudgetExceeded` -- too many degenerate configurations in a row;
* :class:`InconsistentAnswersError` -- the oracle's answers are not those of any
  multi-head attention with at most the stated number of heads (a wrong bound
  ``H0 < H``, or an oracle that is not attention at all);
* :class:`VerificationError` -- the optional verification phase found a sequence
  on which the learned model and the oracle disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Self

    from .counter import Counts

__all__ = [
    "ExactLearnError",
    "InvalidArgumentError",
    "InvalidModelError",
    "InvalidQueryError",
    "OracleOutputError",
    "OracleError",
    "QueryBudgetExceeded",
    "NotRationalError",
    "ReconstructionError",
    "UndeterminedFitError",
    "RecoveryError",
    "RedrawBudgetExceeded",
    "InconsistentAnswersError",
    "VerificationError",
    "NumberFieldError",
    "SweepError",
]


class ExactLearnError(Exception):
    """Base class of every error raised on purpose by exactlearn.

    An error raised while a learner runs carries what the oracle answered
    before it: ``queries`` (answered), ``max_length`` (the longest answered
    query) and ``redraws`` (``None`` when not known, e.g. outside a run).
    """

    queries: int | None = None
    max_length: int | None = None
    redraws: int | None = None

    def with_counts(self, counts: Counts) -> Self:
        """Record a run's counts (:class:`~exactlearn.counter.Counts`) where this error has none; returns
        ``self``. The one way counts reach an error: the counter nearest the oracle records first."""
        for name in ("queries", "max_length", "redraws"):
            if getattr(self, name) is None:
                setattr(self, name, getattr(counts, name))
        return self


class InvalidArgumentError(ExactLearnError, ValueError, TypeError):
    """An argument to an exactlearn function is of the wrong kind or out of range."""


class InvalidModelError(ExactLearnError, ValueError):
    """A model's parameters are malformed (shape, sign, or not exact rationals)."""


class InvalidQueryError(ExactLearnError, ValueError):
    """A query is malformed: empty, wrong token length, or non-integer entries."""


class NumberFieldError(ExactLearnError, ValueError):
    """A number field or one of its elements is given wrongly: a reducible polynomial, a root
    specification that isolates no real root or several, elements of two different fields mixed, an
    element that cannot be read, or a field above the size limits (:mod:`exactlearn.numberfield`)."""


class OracleOutputError(ExactLearnError, TypeError):
    """The black box returned something that is not an exact rational number."""


class OracleError(ExactLearnError):
    """The user's oracle (or progress callback) raised; the original is chained (``__cause__``).

    Carries what was asked before the failure: ``queries`` (answered),
    ``max_length`` (longest answered query) and ``redraws``.
    """


class QueryBudgetExceeded(ExactLearnError):
    """A query budget (``Oracle(budget=...)`` or ``learn(max_queries=...)``) is spent.

    ``queries``, ``max_length`` and ``redraws`` are the counts so far (``None``
    when the budget belongs to an :class:`~exactlearn.Oracle` used on its own).
    """


class NotRationalError(ExactLearnError, ValueError):
    """An exact real number (a product of rational powers) is not rational."""


class ReconstructionError(ExactLearnError, ValueError):
    """The data admit no solution of the requested form.

    Raised when no rational function of the requested type takes the given
    values, when a copy function is not of the attention form (a non-rational,
    multiple or non-negative pole), or when an overdetermined linear system is
    inconsistent.
    """


class UndeterminedFitError(ReconstructionError):
    """The samples admit more than one copy function of the requested type (a vector fit with too few
    copy counts for its residues): more samples are needed, the data are not inconsistent."""


class RecoveryError(ExactLearnError):
    """The learner could not recover the model and refuses to guess.

    Carries what the oracle answered before the failure: ``queries``,
    ``max_length`` and ``redraws`` (``None`` until the run that raised it fills
    them in, see :meth:`~ExactLearnError.with_counts`) and ``reasons``, every
    redraw's reason.

    >>> err = RecoveryError("no", queries=7, reasons=["configuration 1: 1 pole, fewer than the 2 heads"])
    >>> err.queries, err.max_length, len(err.reasons)
    (7, None, 1)
    """

    def __init__(self, message: str = "", *, queries: int | None = None, max_length: int | None = None,
                 redraws: int | None = None, reasons: Sequence[str] = ()):
        super().__init__(message)
        self.queries = queries
        self.max_length = max_length
        self.redraws = redraws
        self.reasons = list(reasons)


class RedrawBudgetExceeded(RecoveryError):
    """Degenerate random configurations were redrawn more often than allowed."""


class InconsistentAnswersError(RecoveryError):
    """The answers fit no multi-head attention with at most the assumed number of heads."""


class VerificationError(RecoveryError):
    """The learned model disagrees with the oracle on a fresh verification query."""


class SweepError(ExactLearnError):
    """A sweep (:func:`exactlearn.sweep.map_tasks`) could not run every task.

    ``results`` holds every finished task's result in task order (``None`` where a task
    did not finish), ``failures`` maps the index of each failed task to its exception
    (the first one is also chained as ``__cause__``). The message says what to change.
    """

    def __init__(self, message: str, *, results: Sequence = (), failures: dict | None = None):
        super().__init__(message)
        self.results = list(results)
        self.failures = dict(failures or {})
