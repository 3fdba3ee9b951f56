"""Exact fields: the rationals, and the shared algebra of every exact field.

:class:`ExactField` holds what an exact field does the same way whatever its
elements are: solving for the value vectors (one rational inverse of an integer
design), for the weights (logs as exponent vectors over a base, one rational
solve) and evaluating ``rho = exp(left^T W right)`` of a learned ``W``
(:class:`~exactlearn.logspace.LogMatrix`). A subclass supplies ``zero``,
``log_coordinates`` and ``power_product``. :class:`ExactRationals` is ``Q``;
:class:`exactlearn.symbolic.field.SymbolicField` is ``Q(E, V)``.

>>> from flint import fmpq
>>> F = ExactRationals()
>>> F.solve_values([(1, 0), (0, 1), (1, 1)], [[fmpq(2), fmpq(3), fmpq(5)]])
[(2, 3)]
>>> F.equal(fmpq(1, 2), fmpq(2, 4), Why.DISTINCT)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flint import fmpq, fmpq_mat, fmpz_mat

from .errors import ReconstructionError
from .exact import Token, dot, oracle_value
from .fastlink import predicted_link_terms
from .field import Field, choose_independent_rows
from .logspace import (
    Base,
    LogMatrix,
    power_product,
    rational_log_coordinates,
    solve_log_coordinates,
)
from .ratfun import CopyTerms, copy_terms, reconstruct_nn
from .states import Why

__all__ = ["ExactField", "ExactRationals"]


class ExactField(Field):
    """The algebra shared by exact fields (see the module docstring)."""

    name = "an exact field"

    def log_coordinates(self, rhos: Sequence[Any]) -> tuple[Base, list[tuple[int, ...]]]:
        """A log base for the positive ``rhos`` and their exponent vectors over it."""
        raise NotImplementedError

    def power_product(self, base: Base, exponents: Sequence[int]) -> Any:
        """``prod base[l] ** exponents[l]`` as a field element."""
        raise NotImplementedError

    def _named_value(self, total: Any, head: int, a: int) -> Any:
        """Hook: name a solved entry ``v_h[a]`` (the symbolic field labels it)."""
        return total

    def times_matrix(self, matrix: fmpq_mat, columns: Sequence[Sequence[Any]]) -> list[list[Any]]:
        """``matrix @ column`` (a rational matrix, field elements) for every column."""
        out = []
        for column in columns:
            product = []
            for a in range(matrix.nrows()):
                total = self.zero()
                for col, x in enumerate(column):
                    coef = matrix[a, col]
                    if coef != 0:
                        total = total + x * coef
                product.append(total)
            out.append(product)
        return out

    def row_values(self, rows: Sequence[Token], vectors: Sequence[Sequence[Any]]) -> list[list[Any]]:
        """``[row^T v for row in rows]`` for every vector ``v``."""
        return [[self.dot(row, v) for row in rows] for v in vectors]

    def solve_values(self, rows: Sequence[Token], residues: Sequence[Sequence[Any]]) -> list[tuple]:
        """Solve ``rows @ v_h = residues[h]``: a full-rank square subsystem is inverted over ``Q``,
        every other row is checked exactly (``ReconstructionError`` if not)."""
        d = len(rows[0])
        chosen = choose_independent_rows(rows, d)
        if len(chosen) < d:
            raise ValueError("the value design has rank < d")  # prevented before querying
        inverse = fmpq_mat(d, d, [x for i in chosen for x in rows[i]]).inv()
        solved = self.times_matrix(inverse, [[res[i] for i in chosen] for res in residues])
        out = [tuple(self._named_value(t, h, a) for a, t in enumerate(v)) for h, v in enumerate(solved)]
        for h, predicted in enumerate(self.row_values(rows, out)):
            for j, value in enumerate(predicted):
                if not value == residues[h][j]:
                    raise ReconstructionError(
                        f"the residues are not linear in the tokens: head {h} at measurement {j} "
                        f"breaks c = v^T (x - z)"
                    )
        return out

    def solve_weights(self, design: fmpq_mat, rhos: Sequence[Sequence[Any]]) -> list[LogMatrix]:
        """Solve ``design @ vec(W_h) = log rho_h`` with logs as exponent vectors over a base.

        ``design`` is the invertible integer design matrix (checked before
        querying), so this is one rational solve; no field element is divided by.
        """
        n = design.nrows()
        for per_head in rhos:
            if len(per_head) != n:
                raise ValueError(f"expected {n} measurements per head, got {len(per_head)}")
        return solve_log_coordinates(design, [self.log_coordinates(per_head) for per_head in rhos])

    def rho(self, W: LogMatrix, left: Token, right: Token) -> Any:
        """``exp(left^T W right)`` for a learned ``W``; ``ReconstructionError`` if it is not in the field
        (a non-integer exponent over a base of independent logs)."""
        exponents = W.exponents(left, right)
        if any(e.q != 1 for e in exponents):
            raise ReconstructionError(f"exp(left^T W right) is not in {self.name} for the learned W")
        return self.power_product(W.base, [int(e.p) for e in exponents])


class ExactRationals(ExactField):
    """The field ``Q`` with python-flint: every comparison is ``==`` on ``fmpq``."""

    name = "exact rationals (python-flint fmpq)"

    def element(self, raw: Any) -> fmpq:
        return raw if type(raw) is fmpq else oracle_value(raw)

    def zero(self) -> fmpq:
        return fmpq(0)

    def size_bits(self, a: fmpq) -> int:
        return a.p.bit_length() + a.q.bit_length()

    def copy_terms(self, points, values, n, *, at_zero=None, at_infinity=None) -> CopyTerms:
        rf = reconstruct_nn(points, values, n, at_zero=at_zero, at_infinity=at_infinity)
        if rf.type[1] > n:  # pragma: no cover - reconstruct guarantees the degree bound
            raise ReconstructionError("denominator degree exceeds the bound")
        return copy_terms(rf)

    def link_terms(self, kind, prev, cur, points, values, n, *, at_zero, at_infinity):
        """The terms and pairing of a matching configuration predicted from its link and checked
        exactly, or ``None`` (then :meth:`copy_terms` decides): :mod:`exactlearn.fastlink`."""
        return predicted_link_terms(kind, prev, cur, points, values, n,
                                    at_zero=at_zero, at_infinity=at_infinity)

    def equal(self, a: fmpq, b: fmpq, why: Why = Why.DISTINCT) -> bool:
        return a == b

    def dot(self, token: Token, vector: Sequence[fmpq]) -> fmpq:
        return dot(token, vector)

    def times_matrix(self, matrix: fmpq_mat, columns: Sequence[Sequence[fmpq]]) -> list[list[fmpq]]:
        """One FLINT product for every column."""
        if not columns:
            return []
        product = matrix * fmpq_mat(len(columns[0]), len(columns), [x for xs in zip(*columns) for x in xs])
        return [[product[a, h] for a in range(product.nrows())] for h in range(len(columns))]

    def row_values(self, rows: Sequence[Token], vectors: Sequence[Sequence[fmpq]]) -> list[list[fmpq]]:
        """One FLINT product of the integer rows with every vector."""
        if not vectors:
            return []
        n, d = len(rows), len(rows[0])
        values = fmpq_mat(d, len(vectors), [x for xs in zip(*vectors) for x in xs])
        product = fmpq_mat(fmpz_mat(n, d, [x for row in rows for x in row])) * values
        return [[product[j, h] for j in range(n)] for h in range(len(vectors))]

    def log_coordinates(self, rhos: Sequence[fmpq]) -> tuple[Base, list[tuple[int, ...]]]:
        return rational_log_coordinates(rhos)

    def power_product(self, base: Base, exponents: Sequence[int]) -> fmpq:
        return power_product(base, exponents)
