"""``learn_approx``: the approximate learner, the one entry point above the three layers of approx/.

:func:`learn_approx` is the core's learner over real balls
(:func:`~exactlearn.approx.core.learner.learn_over_balls`) with the configurations
chosen as its ``guide=`` says (:func:`~exactlearn.approx.guide.choice.guidance`).
It lives above both layers it composes: the core knows no guide, and the
bounds layer (the constant ``C``), which runs the learner on exact answers, uses the core's
learner without a guide.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
from flint import fmpq

from ..counter import affine_argument, declared
from ..errors import InvalidArgumentError, InvalidQueryError, OracleOutputError, RecoveryError
from ..exact import rational_str
from ..learn import DEFAULT_TOKEN_BOUND
from ..limits import DEFAULT_LIMITS, Limits, check_approx, lift
from ..settings import DEFAULT_SETTINGS, ApproxSettings
from ..validate import integer
from .bounds.estimate import configuration_shares, estimate_error, estimates_without
from .core.balls import DEFAULT_PRECISION, as_fmpq, to_arb
from .core.counts import CopyCounts
from .core.learner import learn_over_balls
from .core.recovery import AmbiguousAnswersError, ApproxRecovery, InexactModelWarning
from .guide.choice import GuideMode, guidance, pilot_scale
from .guide.repair import repair_guidance
from .joint import affordable
from .values import (
    Answered,
    ReadoutOracle,
    VectorApproxRecovery,
    draw_readout,
    fit_values,
    refine_scalar,
    refine_vector,
)

__all__ = ["learn_approx"]


def learn_approx(oracle: Callable[[list[tuple[float, ...]]], Any], d: int, *, heads: int,
                 precision: int = DEFAULT_PRECISION, eps: Any = None, scale: Any = None, seed: Any = 0,
                 token_bound: int = DEFAULT_TOKEN_BOUND, max_redraws: int | None = None,
                 progress: Callable[[int, int], None] | None = None, rigorous: bool = False,
                 max_condition: Any = None, guide: Any = GuideMode.AUTO,
                 limits: Limits = DEFAULT_LIMITS, copy_counts: Any = CopyCounts.AUTO,
                 affine: bool | None = None) -> ApproxRecovery:
    """Learn a multi-head attention from approximate (e.g. float) answers.

    Runs the paper schedule of :func:`exactlearn.learn` in python-flint ball
    arithmetic at ``precision`` bits and returns real parameters as mpmath
    numbers with certified radii.

    * ``oracle`` -- any callable taking a list of real token vectors (tuples of
      floats) and returning a real number (float, int, rational, ``mpf``, arb);
      ``d`` the token width, ``heads`` the known number ``H`` of canonical heads.
    * ``precision`` -- working precision in bits; it must exceed roughly
      ``log2(C / eps) + 64``.
    * ``eps`` -- bound on ``|answer - f(X)|`` (rational, float or string such as
      ``"1e-30"``); default: the oracle's ``eps`` attribute, otherwise required.
    * ``scale`` -- query scale ``s`` (tokens sent are ``s * t``), a positive
      binary fraction such as 1, 1/2, 1/4; see :func:`choose_scale`. Default:
      ``GuideSettings.sketch_scale`` (2) when the run sketches first, otherwise 1.
    * ``seed``, ``token_bound``, ``max_redraws``, ``progress`` -- as in :func:`exactlearn.learn`.
    * ``rigorous`` -- ``True``: every copy function is certified (Krawczyk), so
      the radii are rigorous bounds, at the price of refusing at lower noise;
      ``False`` (default): first-order error estimates.
    * ``max_condition`` -- redraw (and count) every configuration whose condition
      exceeds this number: fewer ill-conditioned configurations, a smaller ``C``.
    * ``guide`` -- an approximation of the heads (a model, or a pilot
      :class:`ApproxRecovery` of the same oracle): token vectors are then chosen,
      before querying, by the conditioning it predicts (:mod:`exactlearn.approx.guide`);
      it never enters the returned values. ``"sketch"``: the guide is a sketch
      of the same oracle (:mod:`exactlearn.approx.guide.sketch`, rough heads from few
      queries, counted), whose first configurations are reused. ``"auto"``
      (default): ``"sketch"`` from ``GuideSettings.sketch_min_heads`` to ``sketch_max_heads`` heads (3 to
      8), ``None`` (random configurations) otherwise. ``None``: random configurations.
    * ``limits`` -- maxima checked before the first query, as in :func:`exactlearn.learn`.
    * ``copy_counts`` -- the copy numbers ``k`` a measurement asks: ``"paper"`` (``0..2H``, queries of
      length ``<= 2H + 1``), ``"geometric"`` (``3H + 1`` counts up to ``ApproxSettings.geometric_top``,
      fitted by least squares: far better conditioned, queries that long), ``"ratios"`` (``3H + 1``
      rational copy ratios ``k/m`` from ``1/K`` to ``K``, asked as ``(z,)*k + (x,)*m``: poles on both
      sides of ``t = 1``), a sequence, or ``"auto"`` (default): the paper's up to ``H = 4`` heads and
      ``d = 8``, geometric beyond, ratios from ``ApproxSettings.ratio_heads`` (7) heads on
      (:mod:`exactlearn.approx.core.counts`).
    * ``affine`` -- learn affine attention (a layer with biases: scores
      ``x_i^T W_h x_N + w_h^T x_i``, output offset ``c0``; docs/algorithm.md
      section 9) with ``4H d(d+1) - 2H + 1`` queries; the heads carry ``w`` and the
      result ``c0``. Default ``None``: what the oracle declares (its ``affine``
      attribute: :func:`~exactlearn.targets.torch_attention` of a layer with biases),
      else ``False``. Guides (a sketch, a pilot, a model) predict the scores with ``w_h``.

    The result carries an error bound under ``eps`` (``error_bound``) and an estimate from the answers'
    own scatter (``error_estimate``, :mod:`exactlearn.approx.bounds.estimate`); ``summary()`` says both.
    An :class:`~exactlearn.approx.InexactModelWarning` is issued when the estimate exceeds
    ``ApproxSettings.warn_relative`` of the largest parameter or of a matrix's own largest entry
    (``matrix_error_estimate``), or the answers scatter by more than ``eps``.
    A default run (``guide="auto"``, no ``scale=``, not ``rigorous``) is refined jointly from every answer
    (:func:`~exactlearn.approx.values.refine_scalar`) when that is estimated better: ``error_estimate`` is
    then the refinement's, ``error_bound`` the staged bound plus each entry's change.

    Raises :class:`AmbiguousAnswersError` when the noise keeps configurations
    unresolved beyond the redraw budget (the learner refuses to guess), and
    :class:`~exactlearn.InconsistentAnswersError` when the answers contradict an
    attention with ``heads`` heads within ``eps``.

    >>> from exactlearn import MultiHeadAttention
    >>> from exactlearn.approx import NoisyOracle, learn_approx, parameter_error
    >>> E = [[["11/10", "9/10"], ["4/5", "6/5"]], [["6/5", 1], ["9/10", "4/3"]]]
    >>> truth = MultiHeadAttention.from_lists(E, [[1, -2], [3, 1]])   # W = log E, close to 0
    >>> oracle = NoisyOracle(truth, eps="1e-30", seed=1)
    >>> rec = learn_approx(oracle, 2, heads=2)
    >>> (rec.queries, oracle.queries, rec.max_length, rec.redraws)
    (29, 29, 5, 0)
    >>> parameter_error(rec, truth).max_abs < 1e-22      # C * eps, C of these queries
    True
    """
    integer("d", d)
    check_approx(d, precision, limits, seed=seed, guide=guide)  # before the core's checks: the guide's d
    affine = affine_argument(oracle, affine)
    outputs = declared(oracle, "outputs")
    if outputs is not None:
        width = integer("the oracle's outputs", outputs, 1, limits.outputs, lift=lift("outputs"))
        return _learn_vector(oracle, d, width, dict(
            heads=heads, precision=precision, eps=eps, scale=scale, seed=seed, token_bound=token_bound,
            max_redraws=max_redraws, progress=progress, rigorous=rigorous, max_condition=max_condition,
            guide=guide, limits=limits, copy_counts=copy_counts, affine=affine))
    # default runs whose estimate misses repair_relative are repaired, then (retry_relative) learned again
    retry = scale is None and isinstance(guide, str) and guide == GuideMode.AUTO
    memory = _Remembered(oracle) if retry else None
    run = partial(learn_over_balls, memory or oracle, d, heads=heads, precision=precision, eps=eps, seed=seed,
                  token_bound=token_bound, max_redraws=max_redraws, progress=progress, rigorous=rigorous,
                  max_condition=max_condition, limits=limits, copy_counts=copy_counts, affine=affine,
                  residue_labels=isinstance(oracle, ReadoutOracle))  # vector answers, as on the exact path
    refused: AmbiguousAnswersError | None = None
    refined = False
    try:
        rec: ApproxRecovery | None = run(scale=scale, guidance=partial(guidance, guide))
    except AmbiguousAnswersError as exc:
        if not retry:
            raise
        rec, refused = None, exc
    if rec is not None:
        _estimate(rec)
        if not rigorous and _settled(oracle, rec):  # vector answers: refined, it needs no repair nor retry
            retry = False
        elif not rigorous and _unrepaired(rec) and (trial := _refined(oracle, memory, rec)) is not None and (
                not _unrepaired(trial)):  # scalar answers: likewise
            rec, retry, refined = trial, False, True
    if retry and memory is not None and rec is not None and _unrepaired(rec):
        rec = _repair(run, rec, memory)
    if retry and (rec is None or _misses(rec, DEFAULT_SETTINGS.approx.retry_relative)):
        if rec is not None:
            rec = _again(run, rec, d, heads, seed, token_bound)
        else:
            assert refused is not None
            rec = _after_refusal(run, refused)
        if memory is not None and _unrepaired(rec):
            rec = _repair(run, rec, memory)  # the run learned again is repaired too (no third run)
    assert rec is not None
    if not refined and not rigorous:  # scalar answers: every parameter refined from every answer
        rec = _refined(oracle, memory, rec) or rec
    _warn(rec)
    return rec


def _learn_vector(oracle: Any, d: int, outputs: int, options: dict[str, Any]) -> VectorApproxRecovery:
    """A vector oracle: the scalar run on a readout of it (its configurations after the first ``d``
    labelled by their residues), then the value matrices from every answer
    (:mod:`exactlearn.approx.values`)."""
    if not callable(oracle):
        raise InvalidArgumentError(f"oracle must be callable (tokens -> {outputs} real numbers), "
                                   f"got {type(oracle).__name__}")
    eps = options.pop("eps")
    eps = declared(oracle, "eps") if eps is None else eps
    eps = None if eps is None else as_fmpq(eps, "eps")
    if eps is not None and eps < 0:  # checked here: the readout run sees eps |r|_1
        raise InvalidArgumentError(f"eps must be >= 0, got {rational_str(eps)}")
    readout = draw_readout(outputs, options["seed"])
    seen = ReadoutOracle(oracle, readout, eps, d=declared(oracle, "d"), affine=options["affine"])
    with warnings.catch_warnings(record=True) as caught:  # re-issued below, pointing at the caller
        warnings.simplefilter("always")
        try:
            scalar = learn_approx(seen, d, **options)
        except RecoveryError as exc:  # say that the run saw r . f: a readout can hide a head
            exc.args = (f"{exc.args[0] if exc.args else ''} [vector answers: this was the run on r . f for "
                        f"the readout r = ({', '.join(map(rational_str, readout))}) of seed "
                        f"{options['seed']!r}, with eps |r|_1; a head with V_h^T r = 0 is invisible to it: "
                        f"another seed draws another readout]",) + exc.args[1:]
            raise
    rec = VectorApproxRecovery.of(scalar, readout, fit_values(seen.log, scalar.heads, scalar.affine,
                                                              scalar.precision))
    refined = not options["rigorous"] and refine_vector(rec, seen.log)
    for caught_warning in caught:  # the readout run's estimate no longer describes a refined result
        if not (refined and str(caught_warning.message).startswith(f"inexact model: {_OFF}")):
            warnings.warn(caught_warning.message, caught_warning.category, stacklevel=3)
    if refined:  # the readout run's estimate describes the staged parameters, not these
        rec.notes = [note for note in rec.notes if not note.startswith(_OFF)]
    if refined and rec.relative_error_estimate is not None and (
            _worst(rec) > DEFAULT_SETTINGS.approx.warn_relative):  # per matrix, as _warn
        rec.notes.append(f"{_OFF}{rec.relative_error_estimate:.1e} of the largest ({rec.error_estimate:.1e})"
                         f"{_own(rec)}, more than {DEFAULT_SETTINGS.approx.warn_relative:.0e}")
        warnings.warn(f"inexact model: {rec.notes[-1]}", InexactModelWarning, stacklevel=3)
    top = max((abs(float(x)) for V in rec.V for row in V for x in row), default=0.0)
    if top and rec.value_error_estimate > DEFAULT_SETTINGS.approx.warn_relative * top:
        rec.notes.append(f"the value matrices' estimated error {rec.value_error_estimate:.1e} exceeds "
                         f"{DEFAULT_SETTINGS.approx.warn_relative:.0e} of their largest entry {top:.2g}")
        warnings.warn(f"inexact model: {rec.notes[-1]}", InexactModelWarning, stacklevel=3)
    return rec


_OFF = "the parameters are estimated to be off by "  # (as _warn says it)


def _settled(oracle: Any, rec: ApproxRecovery, settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> bool:
    """A run on the readout of a vector oracle (:class:`ReadoutOracle`) whose every parameter, refined from
    every whole answer (:func:`~exactlearn.approx.values.refine_vector`), is estimated within
    ``repair_relative`` per matrix: no repair or retry of the readout run can improve on that. (Only
    decided here, on a copy: :func:`_learn_vector` refines the returned run, over the same answers.)"""
    if not isinstance(oracle, ReadoutOracle) or not _unrepaired(rec, settings) or not affordable(
            len(oracle.log), rec.num_heads, rec.d, len(oracle.readout), rec.affine, settings):
        return False
    try:
        vector = VectorApproxRecovery.of(rec, oracle.readout, fit_values(oracle.log, rec.heads, rec.affine,
                                                                         rec.precision))
    except RecoveryError:
        return False
    vector.notes = []  # (its own: the run's stay as they are)
    if not refine_vector(vector, oracle.log):
        return False
    top = max((abs(float(x)) for V in vector.V for row in V for x in row), default=0.0)
    return not _unrepaired(vector, settings) and vector.value_error_estimate <= settings.repair_relative * top


def _refined(oracle: Any, memory: _Remembered | None, rec: ApproxRecovery) -> ApproxRecovery | None:
    """Scalar answers: a copy of ``rec`` refined from every answer ``memory`` holds
    (:func:`~exactlearn.approx.values.refine_scalar`), or ``None`` when that is not kept (or the answers
    are a vector oracle's readout, refined by :func:`_learn_vector`). ``rec`` is unchanged."""
    if memory is None or isinstance(oracle, ReadoutOracle) or not memory.answers or not affordable(
            len(memory.answers), rec.num_heads, rec.d, 1, rec.affine):  # (before the log is built)
        return None
    copy = replace(rec, notes=list(rec.notes))
    return copy if refine_scalar(copy, memory.log()) else None


class _Remembered:
    """The oracle of a default run: every answer is remembered, and while ``serving``, a query asked before
    is answered from memory (a repair's reused configurations); ``new`` counts the queries sent on while
    serving. Attributes are the oracle's (its ``eps``, ``d``, ...)."""

    def __init__(self, oracle: Callable[[list[tuple[float, ...]]], Any]):
        self.oracle = oracle
        self.answers: dict[tuple[tuple[float, ...], ...], Any] = {}
        self.serving = False
        self.new = 0

    def __call__(self, tokens: list[tuple[float, ...]]) -> Any:
        key = tuple(tuple(t) for t in tokens)
        if self.serving and key in self.answers:
            return self.answers[key]
        answer = self.oracle(tokens)
        self.answers[key] = answer
        self.new += self.serving
        return answer

    def log(self) -> list[Answered]:
        """Every answer remembered, as the joint refinement reads them (``[]`` if one is not a number)."""
        try:
            return [Answered.of(list(tokens), (float(to_arb(y).mid()),))
                    for tokens, y in self.answers.items()]
        except OracleOutputError:
            return []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.oracle, name)


def _misses(rec: ApproxRecovery, level: float) -> bool:
    return rec.relative_error_estimate is not None and rec.relative_error_estimate > level


def _worst(rec: ApproxRecovery) -> float:
    """The estimated relative error per matrix (relative to the largest parameter when there is no such
    estimate); ``inf`` without an estimate."""
    worst = rec.matrix_error_estimate
    worst = rec.relative_error_estimate if worst is None else worst
    return float("inf") if worst is None else worst


def _own(rec: ApproxRecovery) -> str:
    """The per-matrix estimate in words, when it is larger than the relative one."""
    rel, worst = rec.relative_error_estimate, _worst(rec)
    return "" if rel is None or worst <= rel else f" and {worst:.1e} of a matrix's own largest entry"


def _unrepaired(rec: ApproxRecovery, settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> bool:
    """Whether a run's estimate per matrix misses ``repair_relative`` (a run to repair)."""
    return rec.relative_error_estimate is not None and _worst(rec) > settings.repair_relative


def _repair(run: Callable[..., ApproxRecovery], first: ApproxRecovery, memory: _Remembered,
            settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> ApproxRecovery:
    """The configurations that carry ``first``'s estimate above ``repair_relative`` (:func:`_blamed`) asked
    again with new vectors, every other query answered from memory (:mod:`~exactlearn.approx.guide.repair`).
    The better of the two by the estimate is returned; ``queries`` counts what the oracle answered for
    both."""
    blamed = _blamed(first, settings)
    if not blamed:
        return first
    memory.serving, memory.new = True, 0
    try:
        second = run(scale=first.scale, guidance=repair_guidance(first, blamed))
    except RecoveryError:  # refused (or could not draw): the first run stands, its repair's queries counted
        first.queries += memory.new
        first.retry_queries += memory.new
        first.notes.append(f"a repair asking configurations {_listed(blamed)} again ({memory.new} queries) "
                           "refused")
        return first
    finally:
        memory.serving = False
    if memory.new == 0:  # the guide predicted no redraw of them to help: every answer was the first run's
        first.notes.append(f"not repaired: no new vectors for configurations {_listed(blamed)} are predicted "
                           "to condition them better")
        return first
    _estimate(second)
    total = first.queries + memory.new
    better = second if _worst(second) <= _worst(first) else first
    if better is second:  # what happened to the run before (a repair, a second run) stays said
        better.notes += [note for note in first.notes if note.startswith(_SAID)]
    better.notes.append(f"repaired: configurations {_listed(blamed)} of the run (estimated relative "
                        f"error {_both(first)}) asked again with new vectors, "
                        f"{memory.new} new queries ({_both(second)}); this is the "
                        + ("repaired run" if better is second else "run before the repair"))
    if better is second:  # its queries include the first run's, and so its sketch's
        better.sketch_queries = first.sketch_queries
    better.retry_queries = (max(0, total - better.queries) if better is second
                            else first.retry_queries + memory.new)
    better.queries = total
    better.max_length = max(first.max_length, second.max_length)
    return better


# The notes saying what happened to a run before (its repair, a second run): a run replacing it keeps them.
_SAID = ("repaired:", "a repair", "not repaired", "learned twice", "a second run")


def _blamed(rec: ApproxRecovery, settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> list[int]:
    """The configurations a repair asks again, the most blamed first (their shares per matrix above
    ``repair_relative``): the fewest whose terms left out of the estimate per matrix would leave at most
    ``repair_relative`` (:func:`~exactlearn.approx.bounds.estimate.estimates_without`), at most
    ``repair_fraction`` of the run's (at least one); but when even those would leave the estimate
    relative to the largest parameter above ``retry_relative``, the run is learned again whatever the
    repair does, and only ``repair_guide_fraction`` of them are asked: the repair then serves the second
    run as its guide."""
    shares = configuration_shares(rec, settings, per_matrix=True)
    if shares is None:
        return []
    n = len(rec.configurations)
    order = [int(j) for j in np.argsort(-shares)[: max(1, round(settings.repair_fraction * n))]
             if shares[j] > settings.repair_relative]
    left = estimates_without(rec, order, settings, per_matrix=True)
    if left is None:
        return order
    enough = [i for i in range(1, len(order) + 1) if left[i] <= settings.repair_relative]
    if enough:
        return order[: enough[0]]
    retried = estimates_without(rec, order, settings)  # the level of a retry: of the largest parameter
    if retried is not None and retried[-1] > settings.retry_relative:
        return order[: max(1, round(settings.repair_guide_fraction * n))]
    return order


def _listed(items: list[int]) -> str:
    return ", ".join(map(str, items))


def _after_refusal(run: Callable[..., ApproxRecovery], refused: AmbiguousAnswersError) -> ApproxRecovery:
    """A default run that refused is learned again at half the scale; the refused run's queries count."""
    try:
        rec = run(scale=fmpq(1, 2), guidance=partial(guidance, GuideMode.AUTO))
    except (AmbiguousAnswersError, InvalidQueryError):  # (an oracle of integer tokens refuses scale 1/2)
        raise refused from None
    _estimate(rec)
    first = refused.queries or 0
    rec.notes.append(f"learned twice: the first run, at the default scale, refused after {first} queries "
                     f"({type(refused).__name__}); this is the second, at scale 1/2")
    rec.queries += first
    rec.retry_queries = first
    return rec


def _again(run: Callable[..., ApproxRecovery], first: ApproxRecovery, d: int, heads: int, seed: Any,
           token_bound: int) -> ApproxRecovery:
    """A second run: at the scale a first recovery predicts best, guided by it
    (:func:`~exactlearn.approx.guide.choice.pilot_scale`).
    The better of the two by the error estimate is returned, with every query of both counted."""
    s = pilot_scale(first, d, heads, seed=seed, token_bound=token_bound,
                    points=first.copy_counts or ())
    try:
        second = run(scale=s, guidance=partial(guidance, first))
    except (AmbiguousAnswersError, InvalidQueryError) as exc:  # (an integer-token oracle refuses scale 1/2)
        asked = getattr(exc, "queries", None) or 0  # (the oracle answered them: counted)
        first.queries += asked
        first.retry_queries += asked
        first.notes.append(f"a second run, guided by this one at scale {rational_str(s)}, refused "
                           f"({type(exc).__name__}, {asked} queries)")
        return first
    _estimate(second)
    better, other = (second, first) if (second.relative_error_estimate or float("inf")) <= (
        first.relative_error_estimate or float("inf")) else (first, second)
    if better is second:  # what happened to the first run before (its repair) stays said
        better.notes += [note for note in first.notes if note.startswith(_SAID)]
    better.notes.append(f"learned twice: first at scale {rational_str(first.scale)} (estimated relative "
                        f"error {_brief(first.relative_error_estimate)}), then at scale {rational_str(s)} "
                        f"guided by it ({_brief(second.relative_error_estimate)}); this is the "
                        + ("second" if better is second else "first"))
    better.queries += other.queries
    better.retry_queries = other.queries
    return better


def _brief(value: float | None) -> str:
    return "none" if value is None else f"{value:.1e}"


def _both(rec: ApproxRecovery) -> str:
    """The relative estimate, and the per-matrix one when it is larger (the one a repair looks at)."""
    per = rec.matrix_error_estimate
    rel = rec.relative_error_estimate
    more = per is not None and rel is not None and per > rel
    return _brief(rel) + (f", {per:.1e} per matrix" if more else "")


def _estimate(rec: ApproxRecovery, settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> None:
    """Attach the error estimate (:mod:`exactlearn.approx.bounds.estimate`)."""
    estimate = estimate_error(rec, settings)
    if estimate is None:
        return
    rec.noise_estimate, rec.error_estimate = estimate.noise, estimate.error
    rec.noise_floor = estimate.floor
    rec.relative_error_estimate = estimate.relative
    rec.matrix_error_estimate = estimate.per_matrix


def _warn(rec: ApproxRecovery, settings: ApproxSettings = DEFAULT_SETTINGS.approx) -> None:
    """Warn (:class:`InexactModelWarning`, and a note) when the estimate (per matrix) says the model is
    inexact."""
    if rec.noise_estimate is None or rec.error_estimate is None or rec.relative_error_estimate is None:
        return
    eps = float(rec.eps.p) / float(rec.eps.q)
    problems = []
    if rec.noise_estimate > settings.noise_margin * max(eps, rec.noise_floor):
        problems.append(f"the answers scatter by about {rec.noise_estimate:.1e}, more than the declared "
                        f"eps = {eps:.1e}: eps is below the answers' real error (increase it)")
    if _worst(rec) > settings.warn_relative:  # per matrix: a matrix of small entries is measured by its own
        problems.append(f"{_OFF}{rec.relative_error_estimate:.1e} of the largest ({rec.error_estimate:.1e})"
                        f"{_own(rec)}, more than {settings.warn_relative:.0e}")
    for problem in problems:
        rec.notes.append(problem)
        warnings.warn(f"inexact model: {problem}", InexactModelWarning, stacklevel=3)
