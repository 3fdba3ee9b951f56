"""The seam between the query schedule and the numbers it computes with.

The schedule (:mod:`exactlearn.learn`) is written once. Everything it does with
the oracle's answers goes through the handful of operations below, so the same
schedule runs over

* the exact rationals ``Q`` (:class:`ExactRationals`, python-flint; the default),
* other fields supplied by sub-packages (high-precision reals for approximate
  oracles, rational functions in indeterminate weights for the generic
  certificate), which implement the same :class:`Field` protocol.

Token vectors and therefore every *design matrix* are always integer matrices,
so designs stay ``fmpq_mat`` whatever the field; only the oracle's answers and
what is computed from them live in the field.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from flint import fmpq, fmpq_mat, fmpz

from .errors import ReconstructionError
from .exact import Token, dot, oracle_value
from .logspace import LogMatrix, LogNumber, solve_log_system
from .ratfun import CopyTerms, copy_terms, reconstruct_nn
from .states import Why

__all__ = ["Field", "ExactRationals", "choose_independent_rows"]


class Field(Protocol):
    """What the schedule needs from a number field (ALGORITHM.md sections 3-4).

    Implementations raise :class:`~exactlearn.ReconstructionError` when the data
    admit no solution of the requested form; the learner turns that into an
    :class:`~exactlearn.InconsistentAnswersError` with context.
    """

    name: str

    def element(self, raw: Any) -> Any:
        """Turn an oracle answer into a field element (validating it)."""

    def copy_terms(self, points: Sequence[int], values: Sequence[Any], n: int, *,
                   at_zero: Any = None, at_infinity: Any = None) -> CopyTerms:
        """Reconstruct the type-(n, n) copy function and read off ``(rho_h, c_h)``."""

    def equal(self, a: Any, b: Any, why: Why) -> bool:
        """Equality used for matching heads (exact, or within tolerance); ``why`` says what is compared."""

    def dot(self, token: Token, vector: Sequence[Any]) -> Any:
        """``token^T vector`` for an integer token and a field vector."""

    def solve_values(self, rows: Sequence[Token], residues: Sequence[Sequence[Any]]) -> list[tuple]:
        """Solve ``rows @ v_h = residues[h]`` (overdetermined, consistency checked)."""

    def solve_weights(self, design: fmpq_mat, rhos: Sequence[Sequence[Any]]) -> list[Any]:
        """Solve ``design @ vec(W_h) = log rhos[h]`` for every head."""

    def rho(self, W: Any, left: Token, right: Token) -> Any:
        """``exp(left^T W right)`` as a field element (ReconstructionError if it is not in the field)."""


def choose_independent_rows(rows: Sequence[Token], rank: int) -> list[int]:
    """Indices of the first ``rank`` linearly independent rows (greedy), or fewer.

    One reduced row echelon form of the transposed rows: its pivot columns are
    exactly the rows the greedy scan would keep.
    """
    if not rows:
        return []
    n, width = len(rows), len(rows[0])
    echelon, found = fmpq_mat(width, n, [row[a] for a in range(width) for row in rows]).rref()
    chosen: list[int] = []
    column = 0
    for r in range(found):
        while echelon[r, column] == 0:
            column += 1
        chosen.append(column)
        column += 1
        if len(chosen) == rank:
            break
    return chosen


class ExactRationals:
    """The field ``Q`` with python-flint: every comparison is ``==`` on ``fmpq``."""

    name = "exact rationals (python-flint fmpq)"
    exact = True

    def element(self, raw: Any) -> fmpq:
        return oracle_value(raw)

    def copy_terms(self, points, values, n, *, at_zero=None, at_infinity=None) -> CopyTerms:
        rf = reconstruct_nn(points, values, n, at_zero=at_zero, at_infinity=at_infinity)
        if rf.type[1] > n:  # pragma: no cover - reconstruct guarantees the degree bound
            raise ReconstructionError("denominator degree exceeds the bound")
        return copy_terms(rf)

    def equal(self, a: fmpq, b: fmpq, why: Why = Why.DISTINCT) -> bool:
        return a == b

    def dot(self, token: Token, vector: Sequence[fmpq]) -> fmpq:
        return dot(token, vector)

    def solve_values(self, rows, residues) -> list[tuple[fmpq, ...]]:
        d = len(rows[0])
        chosen = choose_independent_rows(rows, d)
        if len(chosen) < d:
            raise ValueError("the value design has rank < d")  # prevented before querying
        square = fmpq_mat(d, d, [x for i in chosen for x in rows[i]])
        rhs = fmpq_mat(d, len(residues), [residues[h][i] for i in chosen for h in range(len(residues))])
        solution = square.solve(rhs)
        out = [tuple(solution[a, h] for a in range(d)) for h in range(len(residues))]
        for h, v in enumerate(out):
            for j, row in enumerate(rows):
                if dot(row, v) != residues[h][j]:
                    raise ReconstructionError(
                        f"the residues are not linear in the tokens: head {h} at measurement {j} "
                        f"breaks c = v^T (x - z)"
                    )
        return out

    def solve_weights(self, design: fmpq_mat, rhos) -> list[LogMatrix]:
        return solve_log_system(design, rhos)

    def rho(self, W: LogMatrix, left: Token, right: Token) -> fmpq:
        # left^T W right in log coordinates: one matrix product with W's coefficient matrix
        predicted = W._bilinear(left, right) if W.base else None
        numerator, denominator = fmpz(1), fmpz(1)
        for l, b in enumerate(W.base):
            e = predicted[0, l]
            if e.q != 1:
                # the base is free of perfect powers, so a non-integer exponent means an irrational exp
                raise ReconstructionError("exp(left^T W right) is not rational for the learned W")
            e = int(e.p)
            if e > 0:
                numerator *= b**e
            elif e < 0:
                denominator *= b ** (-e)
        return fmpq(numerator, denominator)  # pairwise coprime base: already reduced
