"""The ledger of everything a symbolic run relies on being nonzero.

A run over ``Q(E, V)`` makes decisions exactly as a numeric run does: it divides
by elements, compares degrees, and treats ``equal(a, b) == False`` as "distinct"
(which is how it rejects a candidate pairing of two linked configurations'
heads: a product of poles, or a residue combination, that does not match).
Each such decision is *generic*: it stays the same after substituting numbers
for the indeterminates unless a certain polynomial vanishes there. The ledger
keeps that polynomial (the numerator of the element in question) together with
*why* it was needed (:data:`KINDS`) and *where* (which copy function or check).

The zero sets of the recorded polynomials together form the exceptional set of
the generic certificate (:mod:`exactlearn.symbolic.certificate`). Nonzero
rational constants cannot vanish, so they are counted (``trivial``) but not kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Record", "Ledger", "KINDS", "SCHEDULE"]

#: The place of a record the schedule itself makes (outside any copy function).
SCHEDULE = "schedule"

#: Why a polynomial had to be nonzero.
KINDS = {
    "pivot": "pivot of the fraction-free (Bareiss) elimination of a copy function's interpolation system",
    "degree": "leading coefficient whose nonvanishing fixes a degree the run branches on",
    "sample denominator": "denominator of the reconstructed copy function at a sample k",
    "normalisation": "value used to normalise a denominator (q(0), or a leading coefficient)",
    "pole": "coefficient of a linear factor a k + b of the denominator (pole -b/a, rho = a/b)",
    "simple pole": "q'(k0) at a pole k0 (the residue divides by it)",
    "residue": "residue c_h of a copy function (a vanishing one hides its head)",
    "pole difference": "rho_h - rho_h' of two heads in one copy function (coinciding poles merge the heads)",
    "pole product": "rho_{j-1,h} rho_{j,h'} - rho_{C,t}: a pairing candidate (h, h', t) of link j "
                    "rejected because the product of the linked poles is not the pole of term t of the "
                    "matching configuration",
    "residue combination": "difference of two residues (or sums of residues) found different: "
                           "a shared-a link rejecting h ~ h' by c_{j-1,h} != c_{j,h'}, or (lean) "
                           "a measured vs a predicted residue",
    "distinct": "a - b for any other comparison equal(a, b) == False the schedule relied on",
    "division": "any other divisor",
}


@dataclass(frozen=True)
class Record:
    """One polynomial that must not vanish: ``poly`` (an ``fmpq_mpoly``), ``kind``, ``where``."""

    poly: Any
    kind: str
    where: str


@dataclass
class Ledger:
    """The records of one symbolic run (owned by its :class:`SymbolicField`; no global state)."""

    records: list[Record] = field(default_factory=list)
    trivial: int = 0  # nonzero constants met (they cannot vanish)

    def add(self, poly: Any, kind: str, where: str) -> None:
        """Record ``poly != 0``; a zero polynomial is a bug in the caller and is refused."""
        if kind not in KINDS:
            raise ValueError(f"unknown ledger kind {kind!r}")
        if poly.is_zero():
            raise ZeroDivisionError(f"{kind} at {where}: the element is identically zero")
        if poly.is_constant():
            self.trivial += 1
            return
        self.records.append(Record(poly, kind, where))

    def __len__(self) -> int:
        return len(self.records)
