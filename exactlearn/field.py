"""The seam between the query schedule and the numbers it computes with.

The schedule (:mod:`exactlearn.learn`) is written once. Everything it does with
the oracle's answers goes through the handful of operations of :class:`Field`,
so the same schedule runs over

* the exact rationals ``Q`` (:class:`exactlearn.exactfield.ExactRationals`,
  python-flint; the default),
* rational functions in indeterminate weights (:mod:`exactlearn.symbolic`, the
  generic certificate) and real balls (:mod:`exactlearn.approx`, approximate
  oracles), which derive from the same base class.

Token vectors and therefore every *design matrix* are always integer matrices,
so designs stay ``fmpq_mat`` whatever the field; only the oracle's answers and
what is computed from them live in the field.

>>> choose_independent_rows([(1, 0), (2, 0), (0, 1)], 2)
[0, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flint import fmpq_mat

from .exact import Token
from .fastlink import PredictedLink
from .ratfun import CopyTerms
from .schedule import matching_points, measurement_points
from .states import LinkKind, Why

__all__ = ["Field", "choose_independent_rows"]


class Field:
    """What the schedule needs from a number field (docs/algorithm.md sections 3-4).

    Every operation the schedule (:mod:`exactlearn.learn`), the matching
    (:mod:`exactlearn.matching`) and the checks (:mod:`exactlearn.consistency`)
    perform on answers is a method here; a field implements the abstract ones
    and may override the defaults. Implementations raise
    :class:`~exactlearn.ReconstructionError` when the data admit no solution of
    the requested form; the learner turns that into an
    :class:`~exactlearn.InconsistentAnswersError` with context.
    """

    name: str = "a field"
    #: True when heads can be labelled by their residues once the value vectors are known, without a
    #: matching query (vector answers, docs/algorithm.md section 10): the paper schedule then chains only
    #: the first ``d`` configurations, like the lean one, and checks every later one in full.
    residues_label_heads: bool = False
    #: True when the values are solved from every configuration's residues once all are labelled (least
    #: squares over inexact answers), not only from the first ``d`` (:meth:`ScheduleRun.run
    #: <exactlearn.learn.ScheduleRun.run>`); exact fields need only those
    least_squares_values: bool = False
    #: the length ``D`` of vector answers (docs/algorithm.md section 10); ``None``: scalar answers
    outputs: int | None = None

    def element(self, raw: Any) -> Any:
        """Turn an oracle answer into a field element (validating it)."""
        raise NotImplementedError

    def zero(self) -> Any:
        """The field's zero."""
        return self.element(0)

    def size_bits(self, a: Any) -> int | None:
        """The bits an exact element carries (numerators and denominators), or ``None`` where size does
        not govern the cost (balls, indeterminates). The learner bounds each answer's size by it."""
        return None

    def equal(self, a: Any, b: Any, why: Why) -> bool:
        """Equality (exact, or within tolerance); ``why`` says what the schedule compares."""
        raise NotImplementedError

    def for_labels(self, x: Any) -> Any:
        """``x`` as a residue label is decided with (:meth:`ScheduleRun._label_by_residues
        <exactlearn.learn.ScheduleRun._label_by_residues>`): itself on exact fields."""
        return x

    def dot(self, token: Token, vector: Sequence[Any]) -> Any:
        """``token^T vector`` for an integer token and a field vector."""
        total = self.zero()
        for t, x in zip(token, vector):
            if t:
                total = total + x * t
        return total

    def sample_excess(self, heads: int) -> int:
        """The copy counts beyond ``H + 1`` a measurement configuration asks: ``k = 0..H + e`` (and a
        matching one ``k = 1..H - 1 + e``). Scalar answers need ``e = H`` (``2H + 1`` samples)."""
        return heads

    def measurement_points(self, heads: int) -> list[int]:
        """Copy numbers a measurement configuration is asked at: the paper's ``0..2H``
        (:func:`~exactlearn.schedule.measurement_points`, ``0..H + e`` with :meth:`sample_excess`);
        an approximate field may ask more."""
        return measurement_points(heads, self.sample_excess(heads))

    def matching_points(self, heads: int) -> list[int]:
        """Copy numbers of a matching configuration (``R(0)``, ``R(oo)`` known): the paper's ``1..2H-1``
        (:func:`~exactlearn.schedule.matching_points`); an approximate field may ask more."""
        return matching_points(heads, self.sample_excess(heads))

    def copies(self, x: Token, z: Token, k: Any) -> list[Token]:
        """The query of copy number ``k``: ``k`` copies of ``z``, then ``x``
        (:func:`~exactlearn.schedule.copies_query`, as a list); an approximate field may ask other points."""
        return [z] * k + [x]

    def copy_terms(self, points: Sequence[int], values: Sequence[Any], n: int, *,
                   at_zero: Any = None, at_infinity: Any = None) -> CopyTerms:
        """Reconstruct the type-(n, n) copy function; ``.terms`` are its ``(rho_h, c_h)``."""
        raise NotImplementedError

    def link_terms(self, kind: LinkKind, prev: Sequence, cur: Sequence, points: Sequence[int],
                   values: Sequence[Any], n: int, *, at_zero: Any, at_infinity: Any) -> PredictedLink | None:
        """The terms and pairing of a matching configuration predicted from its link's ``prev`` and
        ``cur`` terms and checked against its samples, or ``None`` (then :meth:`copy_terms` decides and
        :func:`~exactlearn.matching.link_matchings` pairs). The default predicts nothing."""
        return None

    def solve_values(self, rows: Sequence[Token], residues: Sequence[Sequence[Any]]) -> list[tuple]:
        """Solve ``rows @ v_h = residues[h]`` (overdetermined, consistency checked)."""
        raise NotImplementedError

    def solve_weights(self, design: fmpq_mat, rhos: Sequence[Sequence[Any]]) -> list[Any]:
        """Solve ``design @ vec(W_h) = log rhos[h]`` for every head."""
        raise NotImplementedError

    def rho(self, W: Any, left: Token, right: Token) -> Any:
        """``exp(left^T W right)`` as a field element (ReconstructionError if it is not in the field)."""
        raise NotImplementedError


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
