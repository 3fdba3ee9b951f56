"""The tuning constants of exactlearn, gathered in one settings object.

Each field says what it controls. None of them changes what a run may return:
they trade time, queries and redraws against each other, and every decision
they feed is checked (docs/algorithm.md section 6). The defaults are
:data:`DEFAULT_SETTINGS`; the dataclasses are frozen, so there is no global
state to change (functions that take a setting as an argument default to the
value here).

>>> DEFAULT_SETTINGS.schedule.token_bound
2
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ScheduleSettings", "ApproxSettings", "GuideSettings", "Settings", "DEFAULT_SETTINGS"]


@dataclass(frozen=True)
class ScheduleSettings:
    """The exact schedule (:mod:`exactlearn.learn`, :mod:`exactlearn.chain`)."""

    #: Token entries are drawn uniformly from ``[-B, B]``. ``B = 2`` keeps the exponents
    #: ``(z - x)_a x_b`` (at most ``2B^2 = 8`` in size) and hence every exact number small;
    #: degenerate draws, ``O(1/B)`` per configuration, are redrawn and counted.
    token_bound: int = 2
    #: Draws of token vectors tried before giving up on the pre-query conditions (full-rank designs).
    pre_query_draws: int = 10_000
    #: Lean schedule: draws in a row of one later configuration whose predicted residues collide or
    #: vanish (no query spent) before the run falls back to matching queries.
    prediction_draws: int = 64


@dataclass(frozen=True)
class ApproxSettings:
    """The approximate path's core and its constant ``C`` (:mod:`exactlearn.approx.core`,
    :mod:`exactlearn.approx.bounds`)."""

    #: Working precision in bits of :func:`~exactlearn.approx.learn_approx` and the constant ``C``
    #: (about 77 decimal digits; it must exceed roughly ``log2(C / eps) + 64``).
    precision: int = 256
    #: Factor on the first-order radii ``|J^-1| r`` of a copy-function fit in the default (non-rigorous)
    #: mode: room for second-order terms and for the correlation the independent radii ignore.
    first_order_safety: int = 2
    #: Newton steps polishing a copy-function fit on the midpoints of the answers.
    newton_steps: int = 4
    #: Times the Krawczyk box of a rigorous copy-function fit is inflated before the fit is uncertified.
    krawczyk_inflations: int = 8
    #: Every fitted radius is at least ``2^(floor_bits - precision) (1 + |estimate|)``: room for the
    #: rounding of the estimate itself.
    floor_bits: int = 8
    #: Candidate query scales of :func:`~exactlearn.approx.choose_scale` (powers of two: exact float tokens).
    scales: tuple[str | int, ...] = ("1/4", "1/2", 1, 2, 4)


@dataclass(frozen=True)
class GuideSettings:
    """The guide layer (:mod:`exactlearn.approx.guide`): the sketch, the guided chain, low-rank weights.

    None of them enters a returned value: a guide only chooses which tokens are asked.
    """

    # -- when learn_approx sketches, and at which scale
    #: ``guide="auto"`` (the default) sketches first from this many heads on; with fewer, random
    #: configurations are mostly well conditioned and a sketch would cost more than it saves.
    sketch_min_heads: int = 3
    #: ... and up to this many: the sketch ranks every pairing of the heads (``H!``, 720 here), so it is
    #: bounded; with more heads the default learns without a sketch and ``guide="sketch"`` is refused.
    sketch_max_heads: int = 6
    #: The query scale of a run that sketches, unless ``scale=`` is given.
    sketch_scale: int = 2
    # -- the sketch (exactlearn.approx.guide.sketch)
    #: The sketch draws again every step-1 configuration whose condition
    #: (:func:`~exactlearn.approx.core.copyfun.condition`) exceeds this: with float64 answers its scores
    #: would be off by more than about 1e-4.
    sketch_max_condition: int = 10**13
    #: A later configuration is kept when its fitted residues agree with the predicted ones to this fraction
    #: of the largest (the residues are fitted freely; a fit that misses them has misplaced its poles too).
    residue_agreement: float = 1e-2
    #: Configurations the sketch may draw again (failed fits, unclear pairings) before it gives up.
    max_sketch_draws: int = 40
    #: Candidate token vectors per configuration of the sketch (the one with the smallest predicted
    #: condition is asked).
    sketch_candidates: int = 64
    #: Failed fits of a later configuration sharing a vector with its predecessor before it is drawn freely.
    chain_tries: int = 2
    #: Token entries of the sketch's later configurations lie in ``[-B, B]`` for this ``B``: smaller scores,
    #: fewer poles out of sight of ``k = 1..2H-1``.
    later_token_bound: int = 1
    #: Copy numbers at which a step-1 link's matching configuration is asked, in this order, until one
    #: pairing of the heads predicts its answers ``link_margin`` times better than every other.
    link_points: tuple[int, ...] = (1, 3, 2, 5, 4, 6, 7)
    #: How much better than every other the pairing of a step-1 link must predict its answers.
    link_margin: float = 100.0
    # -- the guided chain (exactlearn.approx.guide.chooser)
    #: Candidate token vectors drawn for every vector a guided configuration creates.
    candidates: int = 48
    #: Whole plans (every configuration's tokens) a guided chain draws before the first query; the one with
    #: the smallest predicted constant ``C`` is asked.
    plans: int = 16
    #: A vector offered for reuse (already answered, e.g. by a sketch) is kept when its predicted condition
    #: is at most this factor above the best fresh candidate's: its answers cost no query.
    reuse_factor: float = 10.0
    #: A configuration whose predicted scores exceed this in size counts as singular (its ``rho`` would
    #: overflow the float64 prediction).
    max_score: float = 40.0
    # -- low-rank weights (exactlearn.approx.guide.lowrank)
    #: A rank-``r`` fit is kept when it fits every score of a head to this fraction of the head's largest
    #: (at least 1).
    low_rank_agreement: float = 1e-3
    #: Rows beyond the fit's ``r (2d - r)`` parameters before a fit is tried (the test's degrees of freedom).
    low_rank_spare: int = 2
    #: Alternating least-squares sweeps per fit, at most.
    low_rank_iterations: int = 300
    #: A sweep that lowers the sum of squared misfits by less than this fraction ends the fit.
    low_rank_progress: float = 1e-9
    #: Random starts of the alternating least squares besides the least-norm one (a start can end in a
    #: local minimum).
    low_rank_restarts: int = 2
    #: The fit is identified when its Jacobian's smallest needed singular value is at least this fraction
    #: of its largest.
    low_rank_identified: float = 1e-4


@dataclass(frozen=True)
class Settings:
    """Every tuning constant, by the part of the library it tunes."""

    schedule: ScheduleSettings = field(default_factory=ScheduleSettings)
    approx: ApproxSettings = field(default_factory=ApproxSettings)
    guide: GuideSettings = field(default_factory=GuideSettings)


#: The settings every function uses unless given others.
DEFAULT_SETTINGS = Settings()
