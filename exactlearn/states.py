"""The named states of a learning run (docs/algorithm.md sections 3-6).

Every state the schedule passes around is a member of one of these enums. They
are ``str``-valued enum members, so they print, compare and serialise as their
readable value:

>>> LinkKind.X == "x", f"shared {LinkKind.A}", RedrawReason.AMBIGUOUS_PAIRING.value
(True, 'shared a', 'the head matching by poles and residues is not unique')
"""

from __future__ import annotations

from enum import Enum

__all__ = ["StrEnum", "ConfigKind", "Status", "LinkKind", "LinkOutcome", "RedrawReason", "Redraw",
           "LeanFallback", "Why"]


class StrEnum(str, Enum):
    """A ``str``-valued enum that prints and formats as its value (``enum.StrEnum`` is Python 3.11+)."""

    __str__ = str.__str__

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)


class ConfigKind(StrEnum):
    """What a configuration is for (docs/algorithm.md section 3)."""

    MEASUREMENT = "measurement"  # k = 0..2H, or k = 1..2H-1 once u is known
    MATCHING = "matching"  # one per link, matrix M_{j-1} + M_j, k = 1..2H-1


class Status(StrEnum):
    """Where a configuration is in the run."""

    PENDING = "pending"  # drawn, not queried
    MEASURED = "measured"  # queried, copy function read off
    USED = "used"  # its heads are labelled
    DEGENERATE = "degenerate"  # answered, then dropped (kept in the run's history)


class LinkKind(StrEnum):
    """What configuration ``j`` shares with configuration ``j - 1``."""

    X = "x"  # the query token x
    A = "a"  # the difference a = z - x
    REFLECT = "a, x reflected"  # the difference a, affine attention: x_C = 2 x_{j-1} - x_j (linked_tokens)


class LinkOutcome(StrEnum):
    """What matching the heads of a link gave."""

    OK = "ok"
    REDRAW = "redraw"  # degenerate: draw the configuration again
    RECOUNT = "recount"  # more poles than heads seen so far (bound mode): measure again


class RedrawReason(StrEnum):
    """Why a configuration was redrawn (or the run restarted)."""

    TOO_FEW_POLES = "fewer poles than heads"
    MATCHING_TOO_FEW_POLES = "its matching configuration has fewer poles than heads"
    AMBIGUOUS_PAIRING = "the head matching by poles and residues is not unique"
    RESTART = "restart"


class Linearity(StrEnum):
    """What the single tokens' answers say (:func:`~exactlearn.consistency.single_token_linearity`)."""

    LINEAR = "linear"  # more tokens than unknowns, of full rank, and one linear (affine) map fits them all
    NOT_LINEAR = "not linear"  # no linear (affine) map fits them: no attention answers like this
    UNDECIDED = "undecided"  # too few tokens, or not of full rank: nothing is ruled out yet


class LeanFallback(StrEnum):
    """Why a lean run matched its later configurations by queries, like the paper schedule."""

    SHARED_VALUES = "two heads share v, so residues cannot tell them apart"
    PREDICTION_DRAWS = "the predicted residues v_h^T (x - z) collided or vanished in every draw"


class Redraw(str):
    """One entry of a run's redraw list: the readable text, its :class:`RedrawReason` and ``detail``
    (the text without the configuration it names).

    >>> r = Redraw("configuration 2: 1 pole, fewer than the 2 heads", RedrawReason.TOO_FEW_POLES,
    ...            "1 pole, fewer than the 2 heads")
    >>> r, r.reason is RedrawReason.TOO_FEW_POLES, r.detail
    ('configuration 2: 1 pole, fewer than the 2 heads', True, '1 pole, fewer than the 2 heads')
    """

    reason: RedrawReason
    detail: str

    def __new__(cls, text: str, reason: RedrawReason, detail: str | None = None) -> Redraw:
        self = super().__new__(cls, text)
        self.reason = reason
        self.detail = text if detail is None else detail
        return self

    def __reduce__(self) -> tuple:
        return Redraw, (str(self), self.reason, self.detail)


class Why(StrEnum):
    """Why the schedule compares two field elements (``field.equal(a, b, why)``).

    The values are the kinds the symbolic ledger records when the answer is
    "different" (:data:`exactlearn.symbolic.ledger.KINDS`).
    """

    POLE_PRODUCT = "pole product"  # a link's pole product against a pole of its matching configuration
    RESIDUE_COMBINATION = "residue combination"  # residues (or sums of residues) read off copy functions
    DISTINCT = "distinct"  # any other check: learned v differ, predicted residues nonzero and distinct
    CONSISTENT = "consistent"  # a check that the answers agree with the learned model
