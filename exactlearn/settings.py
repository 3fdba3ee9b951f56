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

__all__ = ["ScheduleSettings", "ApproxSettings", "GuideSettings", "UniformSliceSettings", "HeadSplitSettings",
           "TransformerSettings", "Settings", "DEFAULT_SETTINGS"]


@dataclass(frozen=True)
class ScheduleSettings:
    """The exact schedule (:mod:`exactlearn.learn`, :mod:`exactlearn.chain`)."""

    #: Token entries are drawn uniformly from ``[-B, B]``. ``B = 2`` keeps the exponents
    #: ``(z - x)_a x_b`` (at most ``2B^2 = 8`` in size) and hence every exact number small;
    #: degenerate draws, ``O(1/B)`` per configuration, are redrawn and counted.
    token_bound: int = 2
    #: Draws of token vectors tried before giving up on the pre-query conditions (full-rank designs).
    pre_query_draws: int = 10_000
    #: The prime modulo which a redrawn weight design's rank is certified (:mod:`exactlearn.design_rank`;
    #: a deficient rank modulo it falls back to the exact rank).
    rank_prime: int = 2_147_483_647
    #: Most rows a weight design may differ in from the last full-rank one to be checked by the update of
    #: that one's inverse modulo ``rank_prime`` (more: the exact rank of the whole design).
    rank_update_rows: int = 64
    #: Lean schedule: draws in a row of one later configuration whose predicted residues collide or
    #: vanish (no query spent) before the run falls back to matching queries.
    prediction_draws: int = 64
    #: ... of which the first this many check the predictions on the field's own elements, the rest on
    #: its labelling elements (:meth:`~exactlearn.field.Field.for_labels`: on exact fields the same; on
    #: balls, radii scaled to the answers' observed error).
    strict_prediction_draws: int = 32
    #: A redraw re-runs the check that the single-token answers are linear (affine) in ``x`` once the
    #: answered single tokens have grown by this factor since its last conclusive run (always before
    #: a redraw budget is declared spent), so the checks of a run cost a bounded multiple of its last one.
    linear_check_growth: int = 2
    #: A link whose matching configuration shows too few poles this many times in a row, with
    #: configuration ``j`` drawn again each time, draws configuration ``j - 1`` again instead: the vector
    #: ``j`` shares with ``j - 1`` may be what that configuration cannot resolve (float answers: torch
    #: ``d = 8, H = 8``, vector seed 0, redrew one configuration 15 times for one link).
    stuck_link_failures: int = 3


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
    #: Gauss-Newton steps of a least-squares copy-function fit (more answers than parameters), at most;
    #: it stops once a step moves no parameter by more than half the working precision's bits.
    gauss_newton_steps: int = 40
    #: Reweighted linearised least-squares solves that give that fit its first solution.
    linearised_sweeps: int = 4
    #: ... and the whole least-squares fit (that first solution, Gauss-Newton, the first-order error map) at
    #: this multiple of the working precision: its normal equations (in powers of ``k`` up to
    #: ``geometric_top^H`` for the first solution) square conditions that reach 1e40 at ``H = 8``, beyond
    #: 256 bits where precise answers still determine the fit.
    guess_precision_factor: int = 4
    #: Times the Krawczyk box of a rigorous copy-function fit is inflated before the fit is uncertified.
    krawczyk_inflations: int = 8
    #: Every fitted radius is at least ``2^(floor_bits - precision) (1 + |estimate|)``: room for the
    #: rounding of the estimate itself.
    floor_bits: int = 8
    #: A label by residues (vector answers: the configurations after the first ``d``) is decided on balls
    #: whose radii are the radii under ``eps`` scaled to the answers' error, this many times the largest
    #: root-mean-square error (in units of ``eps``) a least-squares copy-function fit showed, and never
    #: above the radii under ``eps`` (:meth:`~exactlearn.approx.core.field.RealBalls.for_labels`).
    label_noise_margin: int = 10
    #: The error estimate (:mod:`exactlearn.approx.bounds.estimate`) is this many standard deviations of
    #: the parameter that varies most (the largest of a few thousand normal errors is about 4 of theirs).
    estimate_deviations: int = 8
    #: :func:`~exactlearn.approx.learn_approx` warns (``InexactModelWarning``) when that estimate exceeds
    #: this fraction of the largest parameter, or of a ``W_h``'s or ``v_h``'s own largest entry.
    warn_relative: float = 1e-5
    #: An unguided default run (``guide="auto"`` without a sketch, ``scale=None``) whose estimate exceeds
    #: this fraction of the largest parameter (the warning level), or that refused, is learned again:
    #: guided by itself at the scale it predicts best (or at half the scale after a refusal). Default
    #: layers stay far below it.
    retry_relative: float = 1e-5
    #: A default run (``guide="auto"``, ``scale=None``) whose estimate exceeds this fraction of a matrix's
    #: own largest entry (``W_h``, ``v_h``; ``w_h`` and ``c0``: of the largest parameter) is first
    #: repaired: the configurations whose own answers would put the estimate above it
    #: (:func:`~exactlearn.approx.bounds.estimate.configuration_shares`) are asked again with new vectors,
    #: the rest of the run's answers reused (:mod:`exactlearn.approx.guide.repair`). The level of issue
    #: 24's target (a relative error of 1e-6 per matrix).
    repair_relative: float = 1e-6
    #: ... the fewest, the most blamed first, whose terms left out of the estimate would leave at most
    #: ``repair_relative`` (:func:`~exactlearn.approx.bounds.estimate.estimates_without`), and at most this
    #: fraction of the run's configurations (rounded, at least one). Each costs two measurements and three
    #: links, about 40 queries at ``H = 4`` where the run asks about 16 per configuration: a repair of a
    #: quarter of them costs about 0.6 of learning again. A run whose blamed configurations, left out,
    #: would still leave more than ``retry_relative`` is not repaired but learned again; a repaired run
    #: whose estimate still exceeds it is learned again too, and the run returned after that is repaired.
    repair_fraction: float = 0.25
    #: ... but when those left out would still leave more than ``retry_relative`` (the run is learned again
    #: whatever the repair does), only this fraction (rounded, at least one), the most blamed: the repair
    #: then serves the second run as its guide, at the cost of about 40 queries per configuration.
    repair_guide_fraction: float = 0.03
    #: :func:`~exactlearn.approx.learn_approx` warns that ``eps`` is below the answers' real error when the
    #: estimated noise exceeds ``eps`` by this factor (answers within ``eps`` have a root-mean-square error
    #: below it; the estimate scatters).
    noise_margin: float = 10.0
    #: A refusal names the answers' precision as its cause when the single-token answers carry fewer
    #: significant digits than this (:func:`~exactlearn.approx.core.noise.digits`; float64: about 16).
    precise_digits: float = 12.0
    #: Geometric copy counts (:mod:`exactlearn.approx.core.counts`): this many per head besides ``k = 0``
    #: (``3H``, where the paper asks ``2H``): a least-squares fit with room to average.
    geometric_points_per_head: int = 3
    #: ... from ``k = 1`` to this largest copy count (queries up to ``K + 1`` tokens long), evenly spaced on a
    #: log scale: poles ``-1/rho`` from ``-1`` to ``-1/K`` each get their own range of ``k``.
    geometric_top: int = 4096
    #: Rational copy ratios (``copy_counts="ratios"``): ``t = k/m`` (queries ``(z,)*k + (x,)*m``) from
    #: ``1/K`` to ``K`` for this ``K`` (queries up to ``K + 1`` tokens), as many as geometric counts, evenly
    #: spaced in ``log t``: poles ``-1/rho`` with ``rho`` from ``1/K`` to ``K`` each get their own range.
    ratio_top: int = 4096
    #: ... each ratio the fraction of smallest denominator within this distance of its place in ``log t``
    #: (short queries, simple fractions; the spacing in ``log t`` is ``2 log K / (3H - 1)``).
    ratio_tolerance: float = 0.05
    #: ``copy_counts="auto"`` takes rational copy ratios instead of geometric counts from this many heads on
    #: (``d = 8, H = 8`` from the true layer at scale 2: 46% of random configurations conditioned below
    #: 1e11 with ratios, 0.9% with geometric counts; docs/approximate.md, "Limits measured"). Not below:
    #: at 5 and 6 heads (sketched) ratios gave 100x smaller errors on two runs and stopped two others on
    #: a matching fit whose first-order ball missed by a hair.
    ratio_heads: int = 7
    #: ``copy_counts="auto"`` takes geometric counts from this many heads on (with ``k = 0..2H`` the ideal
    #: condition is above 1e8 for ``H = 5`` and 1e12 for ``H = 8``: float64 answers cannot resolve them) ...
    geometric_heads: int = 5
    #: ... and from this many heads on at token width ``geometric_width`` and beyond (``d^2`` configurations
    #: each conditioned like 1e6 to 1e9 at ``H = 4`` add up to errors above 1e-6 at ``d = 16``).
    geometric_heads_large: int = 4
    #: See ``geometric_heads_large``.
    geometric_width: int = 16
    #: ... and whenever the declared ``eps`` is at least this (float32 answers: ``eps`` about 5.4e-5, where
    #: the paper's counts leave every configuration unresolved).
    geometric_eps: float = 1e-6
    #: Candidate query scales of :func:`~exactlearn.approx.choose_scale` (powers of two: exact float tokens).
    scales: tuple[str | int, ...] = ("1/4", "1/2", 1, 2, 4)
    #: Vector answers (:mod:`exactlearn.approx.values`): the readout's entries are ``+-k/q`` for this ``q``
    #: and ``q/2 <= k <= q``, so that every output coordinate counts and none dominates.
    readout_denominator: int = 16
    #: Vector answers (and scalar ones, ``D = 1``): at most this many Gauss-Newton steps of the joint
    #: refinement of every parameter from every whole answer (:mod:`exactlearn.approx.joint`,
    #: :func:`~exactlearn.approx.values.refine_scalar`); it stops earlier when the residuals stop
    #: decreasing (from a staged start 1e-5 off, float64 answers reach their rounding floor in 2 or 3).
    joint_steps: int = 8
    #: ... whose normal equations are accumulated over blocks of answers, each about this many floats of
    #: intermediate products (answers x (Hd)^2; memory: 8 bytes each).
    joint_block: int = 4_000_000
    #: ... and it is not attempted when a step (its normal equations, about answers x (Hd)^2 (D + 2 d^2)
    #: multiply-adds) and the inverse of their matrix (parameters^3) exceed this: a few seconds of one core
    #: (``d = 16, H = 4``, 8200 answers: 2.7e10; ``d = 32, H = 4``, 33000 answers: 1.7e12, left to the
    #: staged fit).
    joint_work: float = 5e10


@dataclass(frozen=True)
class GuideSettings:
    """The guide layer (:mod:`exactlearn.approx.guide`): the sketch, the guided chain, low-rank weights.

    None of them enters a returned value: a guide only chooses which tokens are asked.
    """

    # -- when learn_approx sketches, and at which scale
    #: ``guide="auto"`` (the default) sketches first from this many heads on; with fewer, random
    #: configurations are mostly well conditioned and a sketch would cost more than it saves.
    sketch_min_heads: int = 3
    #: ... and up to this many: the sketch ranks every pairing of the heads (``H!``, 40320 here, in one
    #: numpy array), so it is bounded; with more heads the default learns without a sketch and
    #: ``guide="sketch"`` is refused.
    sketch_max_heads: int = 8
    #: From this many heads on the sketch predicts its later configurations with rank-``ceil(d/H)`` fits
    #: of its rows (a torch layer's ``d_head``; :func:`~exactlearn.approx.guide.lowrank.rank_guess`)
    #: instead of the least-norm ``W_h``: at ``d = 8, H = 8`` 2-8 of 14-21 later fits failed with it,
    #: 11-31 of 22-42 without (seeds 0-2, 0-1). Not below: at ``H = 4`` it cost 2-4% more queries, once 3x.
    sketch_rank_prior_heads: int = 7
    #: The query scale of a run that sketches, unless ``scale=`` is given.
    sketch_scale: int = 2
    #: ... the scale it runs at after the sketch, unless the sketch's heads predict a constant this many
    #: times smaller at another of ``ApproxSettings.scales`` (one plan each): then it runs there, without
    #: the sketch's answers (at another scale they are other queries, about as many as the run's). Torch
    #: layers with weights x3, ``H = 4`` seed 2: 1.9e18 at 2 against 1.8e10 at 1; default layers stay at 2.
    sketch_scale_gain: float = 100.0
    # -- the sketch (exactlearn.approx.guide.sketch)
    #: Step-1 configurations drawn again at one query scale before a sketch whose scale is the default
    #: changes it (halved when the scores fitted so far are large, doubled otherwise) and starts again;
    #: layers with default initialisation need at most a few draws (44 on 60 torch layers, d = H = 4).
    sketch_rescale_after: int = 10
    #: ... at most this many times.
    sketch_rescales: int = 3
    #: Median ``|log rho|`` of the step-1 fits below which the scale is doubled, not halved (crowded poles;
    #: default initialisation at scale 2: about 2 to 4).
    sketch_small_score: float = 0.5
    #: The sketch draws again every step-1 configuration whose condition
    #: (:func:`~exactlearn.approx.core.copyfun.condition`) exceeds this: with float64 answers its scores
    #: would be off by more than about 1e-4.
    sketch_max_condition: int = 10**13
    #: A later configuration is kept when its fitted residues agree with the predicted ones to this fraction
    #: of the largest (the residues are fitted freely; a fit that misses them has misplaced its poles too).
    residue_agreement: float = 1e-2
    #: Configurations the sketch may draw again (failed fits, unclear pairings) before it gives up.
    max_sketch_draws: int = 40
    #: ... or this fraction of the ``d^2`` configurations, if more (at ``d = 32`` about one later
    #: configuration in eight fails its fit; 40 draws end a sketch of 500 configurations early).
    sketch_draws_per_configuration: float = 0.25
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
    #: ... but at most this many configurations in all plans together (``plans`` up to ``d = 8``; 4 plans
    #: at ``d = 16``, one at ``d = 32``): each plan chooses every vector among ``candidates``, and with
    #: ``d^2`` configurations the best of a few plans differs little from one.
    plan_configurations: int = 1024
    #: A vector offered for reuse (already answered, e.g. by a sketch) is kept when its predicted condition
    #: is at most this factor above the best fresh candidate's: its answers cost no query.
    reuse_factor: float = 10.0
    #: A configuration whose predicted scores exceed this in size counts as singular (its ``rho`` would
    #: overflow the float64 prediction).
    max_score: float = 40.0
    # -- the repair of a run (exactlearn.approx.guide.repair)
    #: A redraw of a repair's chain (before its first query, or during its run) is drawn this many times
    #: and the draw whose whole plan the guide predicts best is kept (a redraw alone looks at the
    #: configurations using its vectors, not at the weight design they make together).
    repair_redraws: int = 4
    # -- low-rank weights (exactlearn.approx.guide.lowrank)
    #: A rank-``r`` fit is kept when it fits every score of a head to this fraction of the head's largest
    #: (at least 1).
    low_rank_agreement: float = 1e-3
    #: Rows beyond the fit's ``r (2d - r)`` parameters before a fit is tried (the test's degrees of freedom).
    low_rank_spare: int = 2
    #: A rank whose identified fits missed the rows this many times is not tried again in a sketch (more
    #: rows cannot bring a matrix of higher rank onto it; the tries bound the sketch's time at large ``d``).
    low_rank_tries: int = 4
    #: ... and is tried again only once the rows have grown by this fraction since its last miss: at
    #: ``d = 32`` a rank-8 fit misses two heads of four at 507 rows (local minima) and fits all at 522.
    low_rank_retry_growth: float = 0.02
    #: A rank-``r`` fit may leave out this fraction of its ``r (2d - r)`` parameters in rows (rounded down,
    #: at least ``low_rank_min_outliers``): a sketch's scores are rough, and at ``d = 16`` one or two of a
    #: hundred are off by 1e-2 where the rest are within 1e-8. The fit is tried from that many rows beyond
    #: ``r (2d - r) + low_rank_spare`` on, so the spare rows still test it.
    low_rank_outliers: float = 0.03
    #: ... and at least this many: a sketch row whose two heads' labels are swapped (close predicted
    #: residues) is wrong for both heads' fits, at any size (torch ``d = 8, H = 4`` vector seed 2: row 15
    #: of 35; a rank-2 fit that allowed none was never found, and the run asked 1921 queries, not 1361).
    low_rank_min_outliers: int = 1
    #: ... chosen again (the rows the last fit misses most; the first time, the one row whose leaving out
    #: lets the fit miss least, each row left out in turn) and refitted at most this many times: a few
    #: rough scores pull a least-squares fit off the others, so its worst rows need not be the rough ones.
    low_rank_trims: int = 3
    #: ... the first time by leaving out each row in turn only from at most this many rows (a fit per
    #: row: at ``d = 16, H = 4`` seed 0 with no limit, 48 s of CPU against 29 s for the same queries;
    #: at ``d = 32`` a rank-8 fit of 500 rows takes about a second). 64 is ``d^2`` at ``d = 8``.
    low_rank_leave_one_out: int = 64
    #: ... and beyond ``low_rank_spare``, this fraction of the parameters in further rows (rounded down: none
    #: at ``d = 4``): with rows barely above the parameters, the alternating fit of a rank-4 ``W_h`` at
    #: ``d = 16`` stops far from the truth (errors up to 1 at 120 rows; 1e-4 at 130).
    low_rank_extra: float = 0.1
    #: Each alternating step solves its least squares by the normal equations from this many unknowns on
    #: (``d r``; ten times faster than ``lstsq``, precise enough for a guide), by ``lstsq`` below.
    low_rank_normal_from: int = 24
    #: Alternating least-squares sweeps per fit, at most (they find the basin; the polish below converges).
    low_rank_iterations: int = 30
    #: Levenberg-Marquardt steps that polish each fit after the sweeps, at most (a synthetic rank-8 ``W`` at
    #: ``d = 32``, 507 rows: 300 sweeps leave it 4e-5 off, 3000 reach 4e-9; 30 sweeps and 9 steps do).
    low_rank_polish: int = 40
    #: The first Levenberg-Marquardt damping, as a fraction of the mean curvature (``J^T J``'s diagonal).
    low_rank_damping: float = 1e-3
    #: The damping is multiplied by this after a step that does not lower the misfits ...
    low_rank_damping_up: float = 4.0
    #: ... and divided by this after one that does.
    low_rank_damping_down: float = 3.0
    #: Damping beyond this multiple of the mean curvature: no step lowers the misfits, the fit is a minimum.
    low_rank_flat: float = 1e12
    #: A sweep or step that lowers the sum of squared misfits by less than this fraction ends the fit.
    low_rank_progress: float = 1e-9
    #: Random starts of the alternating least squares besides the least-norm one (a start can end in a
    #: local minimum).
    low_rank_restarts: int = 2
    #: The fit is identified when its Jacobian's smallest needed singular value is at least this fraction
    #: of its largest.
    low_rank_identified: float = 1e-4


@dataclass(frozen=True)
class UniformSliceSettings:
    """Step 2 of the Transformer learner: the merged lines on the uniform slice
    (:mod:`exactlearn.transformer.slice`, docs/transformer.md section 4)."""

    #: The corners ``p``, ``q`` of the half-loop ``p -> q -> -p`` have entries ``+-1 .. +-N``.
    corner_bound: int = 99
    #: Pairs of corners drawn before the slice is refused when every pair is parallel or has a
    #: corner whose region gradient cannot be fitted.
    corner_draws: int = 8
    #: Region gradients fitted (each ``d + 2`` queries) before the slice is refused (``LINES_ON_SLICE``).
    max_fits: int = 60
    #: A gradient at ``m`` is fitted from the points ``m + eps e_i`` with
    #: ``eps = 2^-E max_i |m_i|``; ``E`` is this exponent.
    step_exponent: int = 24
    #: The check point on the other side of ``m`` is ``m - eps (j_1, ..., j_d)``, each ``j_i`` random
    #: in ``1 .. J``; ``J`` is this.
    back_steps: int = 3
    #: Points tried for one region between two fitted ones (each after the first moved a little).
    fit_tries: int = 4
    #: A point whose gradient cannot be fitted moves ``j / nudge_denominator`` along the
    #: half-loop, ``j`` random in ``1 .. nudge_steps``.
    nudge_steps: int = 999
    #: The unit of those moves is ``1 / nudge_denominator``.
    nudge_denominator: int = 10**6
    #: An interval without an accepted kink is cut at ``j / bisection_denominator`` of its
    #: length, ``j`` random in this range (an interior point, away from both ends).
    bisection_range: tuple[int, int] = (300, 700)
    #: The unit of those cuts is ``1 / bisection_denominator`` of the interval.
    bisection_denominator: int = 1000
    #: A kink at ``t*`` is checked at ``t*`` and on both sides, ``2^-E`` of the way to either end;
    #: ``E`` is this exponent.
    kink_margin_exponent: int = 20


@dataclass(frozen=True)
class HeadSplitSettings:
    """Step 3 of the Transformer learner: the per-head split along copy-ratio families
    (:mod:`exactlearn.transformer.split`, docs/transformer.md section 5). Lengths are in
    tokens, places on a family's loop in ``log k`` (``k = a/b`` the copy ratio)."""

    #: More lines than this are refused before any query: regions are named by ``2^n`` sums.
    max_lines: int = 12
    #: The first pass over the tokens keeps every query at most this long; lines still unsplit
    #: get a second pass up to ``max_length``.
    first_cap: int = 1000
    #: Tokens swept per pass: ``tokens_per_dimension * d + extra_tokens`` (unless the caller
    #: gives ``max_tokens``); each line needs ``d`` independent ones.
    tokens_per_dimension: int = 3
    #: See ``tokens_per_dimension``: the tokens a pass may sweep beyond the multiple of ``d``.
    extra_tokens: int = 6
    #: Candidate tokens for ``d = 1, 2, ...``: every integer vector with entries in ``[-r, r]``,
    #: ``r`` the ``d``-th entry (so the candidates number at most a few hundred).
    candidate_bounds: tuple[int, ...] = (1, 6, 3, 2)
    #: Beyond ``len(candidate_bounds)`` dimensions: this many random candidates.
    random_candidates: int = 600
    #: The random candidates have entries in ``[-r, r]``, ``r`` this.
    random_candidate_bound: int = 2
    #: A candidate's cost is ``max_h |mu_h|`` plus ``crowding_weight`` times, over neighbouring
    #: switch points ``mu_h = 2 x^T W_h x`` (sorted), how much closer than this they are (heads
    #: that switch together hide the lines in a narrow range of ``k``).
    crowding_gap: float = 1.5
    #: The weight of that crowding against ``max_h |mu_h|`` (see ``crowding_gap``).
    crowding_weight: float = 3.0
    #: Relative width of the first window of copy ratios tried at one place.
    window_width: float = 0.25
    #: A window that straddles a kink is refused and one this many times narrower is tried.
    window_shrink: float = 4.0
    #: Windows tried at one place before the place is given up.
    windows: int = 5
    #: A window fitted inside a gap is at most the gap's width over this.
    windows_per_gap: float = 3.0
    #: The first fits of a token sit at its switch points' mean and this far beyond the extreme ones.
    start_margin: float = 0.5
    #: Beyond the outermost fitted region the loop is extended by this step.
    extend_step: float = 1.5
    #: With a residual (open loop) the loop is extended no further than this from the mean switch point.
    open_reach: float = 8.0
    #: A gap narrower than this is given up.
    min_gap: float = 1e-3
    #: A new fit closer than this to a fitted region adds nothing and ends its gap.
    same_place: float = 1e-12
    #: Gaps bisected per token before the sweep of that token ends.
    max_fits_per_token: int = 40
    #: With a residual: the families ``((-c x)^a, x^b)`` swept for each token, ``c`` in this order
    #: (``c = 3`` reaches further: the heads go to ``-3x`` while the residual stays at ``x``).
    residual_scales: tuple[int, ...] = (1, 3)


@dataclass(frozen=True)
class TransformerSettings:
    """The Transformer learner (:mod:`exactlearn.transformer`, docs/transformer.md)."""

    #: Longest query the learner may ask unless given ``max_length``.
    max_length: int = 10_000
    #: Fresh random sequences the learned model is checked on before it is returned, unless
    #: given ``verify``.
    verify: int = 16
    #: Verification tokens have entries in ``[-B, B]``, ``B`` this.
    verify_token_bound: int = 3
    #: Every other verification sequence is at most this long: beyond the queries of step 1
    #: (``2H + 1``) and of the slice (2), so that lengths those steps never ask are checked too.
    verify_long_length: int = 32
    #: The other verification sequences are at most ``2H + 1 + verify_short_extra`` long (step 1's
    #: longest query, plus this).
    verify_short_extra: int = 2
    #: The residual test asks ``g((0^k, x))`` with ``x``'s entries drawn from these (never zero).
    residual_test_entries: tuple[int, ...] = (-2, -1, 1, 2)
    #: Samples ``k`` of the residual test beyond the ``2H + 1`` that fix its type-``(H, H)``
    #: interpolant; each checks it. Its longest query is ``2H + 1 + residual_test_checks``.
    residual_test_checks: int = 2
    #: Step 2, the merged lines on the uniform slice.
    uniform_slice: UniformSliceSettings = field(default_factory=UniformSliceSettings)
    #: Step 3, the per-head split.
    head_split: HeadSplitSettings = field(default_factory=HeadSplitSettings)


@dataclass(frozen=True)
class Settings:
    """Every tuning constant, by the part of the library it tunes."""

    schedule: ScheduleSettings = field(default_factory=ScheduleSettings)
    #: The approximate path's core (:mod:`exactlearn.approx.core`).
    approx: ApproxSettings = field(default_factory=ApproxSettings)
    #: The guide that chooses configurations on the approximate path (:mod:`exactlearn.approx.guide`).
    guide: GuideSettings = field(default_factory=GuideSettings)
    #: The Transformer learner.
    transformer: TransformerSettings = field(default_factory=TransformerSettings)


#: The settings every function uses unless given others.
DEFAULT_SETTINGS = Settings()
