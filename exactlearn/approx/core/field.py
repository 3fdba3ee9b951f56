"""The approximate field: real balls (python-flint ``arb``) behind the schedule's seam.

:class:`RealBalls` implements :class:`exactlearn.field.Field` so that the one
schedule of :mod:`exactlearn.learn` runs unchanged on approximate answers.
Every oracle answer becomes a ball of radius ``eps`` (the declared bound on the
oracle's output error). In the rigorous mode every later number is a ball that
contains the exact value the exact path would have computed, *provided* the
oracle is a multi-head attention with ``H`` canonical heads answering within
``eps``; in the default first-order mode the radii of the copy-function
parameters are linearised error estimates (see :class:`RealBalls`).

What "equal" means here: two balls are equal when they **overlap** -- the
exact values could coincide. The schedule uses equality for three decisions,
and each becomes conservative:

* head pairing along the chain: link ``j`` pairs head ``h`` of configuration
  ``j - 1`` with head ``h'`` of configuration ``j`` through a term ``t`` of the
  link's matching configuration when the pole product ball
  ``rho_{j-1,h} * rho_{j,h'}`` overlaps ``rho_{C,t}`` **and** the residue
  combination overlaps ``c_{C,t}`` (``c_{j-1,h} + c_{j,h'}`` for a shared
  ``x``; ``c_{j-1,h}``, itself overlapping ``c_{j,h'}``, for a shared ``a``).
  Every candidate edge whose balls overlap is kept, and the schedule accepts
  only a *unique* perfect matching (:func:`exactlearn.matching.perfect_matchings`),
  so a pairing that the noise leaves ambiguous is never guessed -- it is
  redrawn (counted), and when the noise keeps the pairings ambiguous the run
  ends with :class:`~exactlearn.approx.AmbiguousAnswersError`;
* distinct / nonzero numbers: overlapping balls count as equal, so a decision
  that cannot be made at this noise level is not made;
* consistency checks (``R(oo) = u^T z``; the learned heads against every answer
  of a configuration the schedule dropped, through :meth:`RealBalls.rho`): a
  check fails only if the balls are disjoint, i.e. only if the answers
  certainly contradict the assumptions.

Linear algebra differs from the exact field in one place: the value vectors
are the least-squares solution over all ``d^2`` measurement rows (the exact
field solves a square subsystem and checks the rest); with exact data both are
the same vector, with noise least squares averages the errors.
:mod:`exactlearn.approx.bounds` differentiates exactly this map.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mpmath
from flint import arb, arb_mat, fmpq_mat

from ...errors import ReconstructionError
from ...exact import Token
from ...field import Field
from ...ratfun import CopyTerms, known_value_at_zero
from ...settings import DEFAULT_SETTINGS
from ...states import Why
from .balls import eps_ball, recenter, to_arb
from .copyfun import Uncertified, certify_copy_function
from .counts import ratio_query
from .linsolve import values_first_order, weights_first_order

__all__ = ["RealBalls"]


class RealBalls(Field):
    """Real numbers as arb balls; answers carry the radius ``eps``.

    Parameters
    ----------
    eps:
        Bound on the absolute error of every oracle answer (exact rational,
        float, or string such as ``"1e-30"``); ``0`` for exact answers.
    rigorous:
        ``True``: the copy-function balls are certified (Krawczyk test), so every
        ball provably contains the exact value (if the oracle is an attention with
        ``H`` heads answering within ``eps``) and every decision is certified.
        ``False`` (default): they are first-order error estimates
        (:data:`~exactlearn.approx.copyfun.FIRST_ORDER_SAFETY` times the
        linearised propagation of ``eps``), which stay usable at noise levels
        where the certificate no longer closes; decisions are then as reliable as
        the first-order picture (checked afterwards by the schedule's consistency
        checks).
    residue_labels:
        ``True``: the heads of the configurations after the first ``d`` are labelled by their residues
        ``v_h^T (x - z)``, predicted from the values the first ``d`` give (each measured residue's ball
        must overlap exactly one prediction), not by matching queries, as the exact path does with vector
        answers (:attr:`~exactlearn.field.Field.residues_label_heads`; docs/approximate.md, "Labels by
        residues"). :func:`~exactlearn.approx.learn_approx` sets it for vector answers.
    copy_counts:
        The copy numbers ``k`` a measurement configuration is asked at (``0`` first; a matching
        configuration: the rest), integers or ``Fraction`` copy ratios; ``None``: the paper's ``0..2H``.
        More than ``2H + 1`` are fitted by least squares (:mod:`~exactlearn.approx.core.counts`; not with
        ``rigorous``).
    max_condition:
        Optional limit on a configuration's condition (the first-order
        amplification of answer errors into its residues and scores, see
        :func:`~exactlearn.approx.copyfun.condition`). Configurations above it
        are treated as degenerate -- redrawn and counted -- so that the
        constant ``C`` of the run stays small. It applies to measured copy
        functions (no known ``R(oo)``), whose residues and poles enter the
        solve; the matching configurations only decide which head is which,
        which their balls already guard. ``None``: no limit.

    Notes
    -----
    The working precision is python-flint's ``flint.ctx.prec``, set by the
    caller (:func:`exactlearn.approx.learn_approx` sets it for a run).
    ``notes`` collects why configurations could not be resolved.
    """


    #: the values are the least-squares solution over every configuration's residues, not the first
    #: ``d``'s alone (when later configurations are labelled by their residues)
    least_squares_values = True

    def __init__(self, eps: Any = 0, *, rigorous: bool = False, max_condition: Any = None,
                 copy_counts: Sequence[Any] | None = None, residue_labels: bool = False):
        self.eps = eps
        self.residues_label_heads = bool(residue_labels)
        self.rigorous = bool(rigorous)
        self.max_condition = max_condition
        self.copy_counts = None if copy_counts is None else tuple(copy_counts)
        self._eps_ball = eps_ball(eps)
        kind = "certified enclosures" if self.rigorous else "first-order error estimates"
        self.name = f"real balls (python-flint arb, {kind}; answers within eps = {eps})"
        self.notes: list[str] = []
        #: the largest root-mean-square answer error, in units of eps, that a least-squares fit showed
        self.observed_noise: mpmath.mpf | None = None

    # -- numbers ----------------------------------------------------------------
    def element(self, raw: Any) -> arb:
        """An oracle answer (real number or arb ball) widened by ``eps``."""
        return to_arb(raw) + self._eps_ball

    def equal(self, a: arb, b: arb, why: Why = Why.DISTINCT) -> bool:
        """Could ``a`` and ``b`` be the same number (do the balls overlap)?"""
        return bool(a.overlaps(b))

    def for_labels(self, x: arb) -> arb:
        """``x`` with its radius under ``eps`` scaled to the answers' error as the least-squares fits so
        far show it (their largest root-mean-square error in units of ``eps``), times
        ``ApproxSettings.label_noise_margin``, and never above the radius under ``eps``: first-order radii
        are linear in the answers' radius. Unchanged without such a fit. A label by residues is decided
        on these (``eps`` is declared with a margin: 1e-13 for float64 answers off by 1e-16)."""
        if self.observed_noise is None:
            return x
        scale = min(mpmath.mpf(1), DEFAULT_SETTINGS.approx.label_noise_margin * self.observed_noise)
        return arb(x.mid(), x.rad() * to_arb(scale))

    def dot(self, token: Token, vector: Sequence[arb]) -> arb:
        total = arb(0)
        for t, x in zip(token, vector):
            if t:
                total += t * x
        return total

    # -- the copy function ------------------------------------------------------
    def measurement_points(self, heads: int) -> list[int]:
        """``copy_counts`` if given (:mod:`~exactlearn.approx.core.counts`), else the paper's ``0..2H``."""
        return super().measurement_points(heads) if self.copy_counts is None else list(self.copy_counts)

    def matching_points(self, heads: int) -> list[int]:
        """``copy_counts`` without ``0`` if given, else the paper's ``1..2H-1``."""
        return super().matching_points(heads) if self.copy_counts is None else list(self.copy_counts[1:])

    def copies(self, x: Token, z: Token, k: Any) -> list[Token]:
        """The query of copy number ``k``, or of copy ratio ``k = p/m`` (a ``Fraction``): ``p`` copies of
        ``z``, then ``m`` copies of ``x`` (:func:`~exactlearn.approx.core.counts.ratio_query`)."""
        return list(ratio_query(x, z, k))

    def copy_terms(self, points, values, n, *, at_zero=None, at_infinity=None) -> CopyTerms:
        """Certified ``(rho_h, c_h)`` balls, or no terms when ``n`` heads cannot be certified.

        Returning fewer than ``n`` terms makes the schedule treat the
        configuration as degenerate (redrawn and counted), exactly as a
        configuration with fewer poles on the exact path. ``at_infinity`` of
        the result is the fitted ``R(oo)`` ball, sharper than ``R(0) - sum_h c_h``
        (whose radius adds every residue's); the configuration keeps it.
        """
        try:
            # the limit applies to measured copy functions (no known values); those derived for
            # matching only decide which head is which, and their balls already guard that
            limit = self.max_condition if at_infinity is None else None
            cert = certify_copy_function(points, values, n, at_zero=at_zero, at_infinity=at_infinity,
                                         rigorous=self.rigorous, max_condition=limit)
        except Uncertified as exc:
            self.notes.append(str(exc))
            zero_value = known_value_at_zero(points, values, at_zero)
            return CopyTerms(zero_value, at_infinity, ())
        if cert.noise is not None:
            self.observed_noise = max(cert.noise, self.observed_noise or cert.noise)
        zero_value = cert.at_infinity
        for _, c in cert.terms:
            zero_value = zero_value + c
        return CopyTerms(zero_value, cert.at_infinity, cert.terms)

    # -- linear algebra ---------------------------------------------------------
    def solve_values(self, rows: Sequence[Token], residues: Sequence[Sequence[arb]]) -> list[tuple]:
        """Least squares ``v_h = (A^T A)^-1 A^T c_h`` over all rows, then a consistency check."""
        if not self.rigorous:  # first-order radii |A^+| r (exactlearn.approx.core.linsolve)
            by_head = values_first_order(rows, residues)
            out = [tuple(column) for column in by_head]
            self._check_values(rows, residues, out)
            return out
        m, d = len(rows), len(rows[0])
        A = arb_mat(m, d, [x for r in rows for x in r])
        At = A.transpose()
        normal = At * A
        C = arb_mat(m, len(residues), [residues[h][j] for j in range(m) for h in range(len(residues))])
        try:
            solution = normal.solve(At * C)
            center = normal.solve(At * C.mid())  # the estimate at full precision (see balls.recenter)
        except ZeroDivisionError:
            raise ValueError("the value design has rank < d") from None  # prevented before querying
        out = [tuple(recenter(solution[a, h], center[a, h]) for a in range(d)) for h in range(len(residues))]
        self._check_values(rows, residues, out)
        return out

    def _check_values(self, rows: Sequence[Token], residues: Sequence[Sequence[arb]],
                      out: list[tuple]) -> None:
        """Every residue must overlap ``v_h^T (x - z)`` (ReconstructionError otherwise)."""
        for h, v in enumerate(out):
            for j, row in enumerate(rows):
                if not self.dot(row, v).overlaps(residues[h][j]):
                    raise ReconstructionError(
                        f"the residues are not linear in the tokens within the error bound: head {h} at "
                        f"measurement {j} breaks c = v^T (x - z)"
                    )

    def solve_weights(self, design: fmpq_mat, rhos: Sequence[Sequence[arb]]) -> list[list[list[arb]]]:
        """``design @ vec(W_h) = log rho_h`` for every head; ``W_h`` as a d x d list of balls."""
        n = design.nrows()
        d = int(round(n**0.5))
        logs = []
        for h, column in enumerate(rhos):
            out = []
            for j, rho in enumerate(column):
                if not rho > 0:
                    raise ReconstructionError(f"head {h}, configuration {j}: "
                                              f"rho = {rho} is not certainly positive")
                out.append(recenter(rho.log(), rho.mid().log()))
            logs.append(out)
        if not self.rigorous:  # first-order radii |D^-1| r (exactlearn.approx.core.linsolve)
            columns = weights_first_order(design, logs)
            if columns is not None:
                return [[[columns[h][a * d + b] for b in range(d)] for a in range(d)]
                        for h in range(len(logs))]
        D = arb_mat(n, n, [design[i, j] for i in range(n) for j in range(n)])
        rhs = arb_mat(n, len(logs), [logs[h][j] for j in range(n) for h in range(len(logs))])
        try:
            solution = D.solve(rhs)
            center = D.solve(rhs.mid())
        except ZeroDivisionError:
            raise ValueError("the weight design is singular") from None  # prevented before querying
        return [[[recenter(solution[a * d + b, h], center[a * d + b, h]) for b in range(d)] for a in range(d)]
                for h in range(len(logs))]

    def rho(self, W, left: Token, right: Token) -> arb:
        """``exp(left^T W right)`` as a ball, for ``W`` a d x d list of balls (from :meth:`solve_weights`).

        The schedule uses it to predict the answers of configurations it dropped
        (redrawn measurements, stale or degenerate matching configurations) from
        the learned heads and compares them with :meth:`equal`, i.e. by overlap:
        the check fails only if the prediction's ball and the answer's ball are
        disjoint. The prediction's radius comes from the radii of ``W``.
        """
        score = arb(0)
        for a, la in enumerate(left):
            if la:
                for b, rb in enumerate(right):
                    if rb:
                        score += la * rb * W[a][b]
        return score.exp()
