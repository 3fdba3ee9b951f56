"""The schedule's field seam for vector answers: ``Q^D`` (docs/algorithm.md section 10).

An answer is a ``D x 1`` ``fmpq_mat`` (a column vector); poles ``rho_h`` stay
rationals, residues ``C_h = V_h (x - z)`` and ``R(0)``, ``R(oo)`` are vectors,
and a head's "value vector" is the tuple of the ``d`` columns of ``V_h``. The
one schedule of :mod:`exactlearn.learn` runs over it unchanged; what differs is
said through the seam: copy functions are fitted with one common denominator
(:func:`~exactlearn.vector.fit.vector_copy_terms`), which needs only
``H + 2`` copy counts per configuration when ``D >= H`` (``sample_excess``), and
heads are labelled by their residue vectors after the first ``d``
configurations (``residues_label_heads``).

>>> from flint import fmpq
>>> F = VectorRationals(2)
>>> F.element((1, fmpq(1, 2))).entries(), F.sample_excess(2), F.sample_excess(3)
([1, 1/2], 1, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flint import fmpq_mat

from ..errors import ExactLearnError, OracleOutputError
from ..exact import Token, oracle_value
from ..exactfield import ExactField
from ..logspace import Base, power_product, rational_log_coordinates
from ..ratfun import CopyTerms
from ..states import Why
from .fit import vector_copy_terms

__all__ = ["VectorRationals", "VectorAnswers", "vector_answer"]


class VectorAnswers(ExactLearnError):
    """Raised by a field that expected scalars on the first vector answer: the run starts again over
    :class:`VectorRationals` of ``width`` (:func:`exactlearn.learn`)."""

    def __init__(self, width: int):
        super().__init__(f"the oracle answers vectors of length {width}")
        self.width = width


def vector_answer(raw: Any, width: int | None) -> tuple:
    """An oracle's vector answer as exact rationals, refusing one of another length than ``width``."""
    if not isinstance(raw, (tuple, list)):
        raise OracleOutputError(f"expected a vector answer (a tuple or list of {width} exact rationals), "
                                f"got {type(raw).__name__}")
    if width is not None and len(raw) != width:
        raise OracleOutputError(f"the oracle's answers are vectors of inconsistent length: {len(raw)} "
                                f"after {width}")
    if not raw:
        raise OracleOutputError("the oracle answered an empty vector")
    return tuple(oracle_value(x) for x in raw)


class VectorRationals(ExactField):
    """``Q^D``: answers are ``D``-vectors of ``fmpq``, compared with ``==``."""

    name = "exact rational vectors (python-flint fmpq_mat)"
    residues_label_heads = True

    def __init__(self, outputs: int):
        self.outputs = outputs
        self.width = outputs  # the same, typed int

    def element(self, raw: Any) -> fmpq_mat:
        if isinstance(raw, fmpq_mat):
            return raw
        if isinstance(raw, int) and raw == 0:
            return self.zero()
        return fmpq_mat(self.width, 1, list(vector_answer(raw, self.width)))

    def zero(self) -> fmpq_mat:
        return fmpq_mat(self.width, 1)

    def size_bits(self, a: fmpq_mat) -> int:
        return sum(x.p.bit_length() + x.q.bit_length() for x in a.entries())

    def equal(self, a: Any, b: Any, why: Why = Why.DISTINCT) -> bool:
        return bool(a == b)

    def dot(self, token: Token, vector: Sequence[Any]) -> Any:
        total = self.zero()
        for t, x in zip(token, vector):
            if t:
                total = total + x * t
        return total

    def sample_excess(self, heads: int) -> int:
        """1 when ``D >= H`` (``H + 2`` copy counts determine a copy function whose ``H`` residue vectors
        are independent), else ``H`` (the scalar schedule's ``2H + 1``)."""
        return 1 if self.width >= heads else heads

    def copy_terms(self, points, values, n, *, at_zero=None, at_infinity=None) -> CopyTerms:
        return vector_copy_terms(points, values, n, at_zero=at_zero, at_infinity=at_infinity)

    def link_terms(self, kind, prev, cur, points, values, n, *, at_zero, at_infinity):
        """No prediction (:mod:`exactlearn.fastlink` is scalar): the fit and the matching search decide."""
        return None

    def times_matrix(self, matrix: fmpq_mat, columns: Sequence[Sequence[Any]]) -> list[list[Any]]:
        """``matrix @ column`` for columns of vectors: one FLINT product per column."""
        out = []
        for column in columns:
            stacked = fmpq_mat(len(column), self.width, [x for v in column for x in v.entries()])
            product = matrix * stacked
            out.append([fmpq_mat(self.width, 1, [product[a, c] for c in range(self.width)])
                        for a in range(product.nrows())])
        return out

    def log_coordinates(self, rhos: Sequence[Any]) -> tuple[Base, list[tuple[int, ...]]]:
        return rational_log_coordinates(rhos)

    def power_product(self, base: Base, exponents: Sequence[int]) -> Any:
        return power_product(base, exponents)

    def row_values(self, rows: Sequence[Token], vectors: Sequence[Sequence[Any]]) -> list[list[Any]]:
        return [[self.dot(row, v) for row in rows] for v in vectors]
