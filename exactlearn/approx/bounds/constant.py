"""The sensitivity constant ``C``: how much an output error can move the parameters.

The learner is a map ``F`` from the vector ``y`` of all oracle answers to the
parameters ``theta = (W_h, v_h)_h``. If every answer is off by at most ``eps``
then, to first order, ``max |theta_hat - theta| <= C * eps`` with
``C = ||DF(y)||_{inf -> inf}``, computed at the exact data for the
configurations the learner used (:mod:`.jacobian`), together with the
conditions that make the bound meaningful and a first-order noise threshold
(:mod:`.thresholds`). The derivation is in docs/approximate.md ("The constant
C"); docs/algorithm.md section 7 states the approximate setting.

>>> from exactlearn import MultiHeadAttention
>>> E = [[["11/10", "9/10"], ["4/5", "6/5"]], [["6/5", 1], ["9/10", "4/3"]]]
>>> sens = sensitivity(MultiHeadAttention.from_lists(E, [[1, -2], [3, 1]]))
>>> sens.exact, str(sens.binding)
(True, 'residue vs zero')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mpmath
from flint import fmpq

from ...errors import InvalidArgumentError
from ...exactfield import ExactRationals
from ...learn import DEFAULT_TOKEN_BOUND, run_schedule
from ...model import MultiHeadAttention
from ...settings import DEFAULT_SETTINGS
from ...states import LinkKind
from ..core.balls import DEFAULT_PRECISION, abs_upper, as_fmpq, working_precision
from ..core.learner import ScaledQueries, learn_over_balls
from ..core.models import NoisyOracle, RealMultiHeadAttention, exact_tokens
from ..core.recovery import ApproxRecovery
from .jacobian import Jacobian, ModelKind, Parameter, ParameterKind
from .thresholds import ConditionName, Threshold, conditions

__all__ = ["sensitivity", "Sensitivity", "choose_scale", "ScaleChoice", "DEFAULT_SCALES"]


@dataclass
class Sensitivity:
    """The first-order constant ``C`` and the conditions it comes with.

    ``C`` is exact (``fmpq``) for exp-parametrised models with an integer scale,
    an arb ball otherwise; ``C_upper`` is an mpf upper bound of it. ``C_W`` /
    ``C_v`` split it into the weight and value parts. All figures refer to the
    learner's parameters ``W`` (the real matrix) and ``v``, with the output
    error measured in absolute value and the parameter error as the maximum
    over all entries of all heads.

    ``conditions`` (mpf numbers):

    * ``min_pole_gap`` -- smallest ``|1/rho_h - 1/rho_h'|`` in a measurement configuration;
    * ``min_score_gap`` -- smallest ``|log rho_h - log rho_h'|`` (scores, scale-aware);
    * ``min_residue`` -- smallest ``|c_h|`` (a head's share in a configuration);
    * ``rho_min`` / ``rho_max`` -- the range of ``rho`` (poles at ``-1/rho``);
    * ``copy_condition`` -- largest ``||J_j||_inf`` (answers -> ``(a, c, rho)``);
    * ``weight_design_condition`` -- ``||D||_inf ||D^-1||_inf``;
    * ``value_design_condition`` -- ``||A||_inf ||(A^T A)^-1 A^T||_inf``;
    * ``link_score_gap`` -- smallest ``|log(rho_{j-1,h} rho_{j,h'}) - log rho_{C,t}|``
      over the wrong edges ``(h, h', t)`` of every link (pole products, in score units);
    * ``link_residue_gap`` -- smallest residue gap over the wrong edges: ``|c_{j-1,h} +
      c_{j,h'} - c_{C,t}|`` for a shared ``x``, ``max(|c_{j-1,h} - c_{j,h'}|, |c_{j-1,h} -
      c_{C,t}|)`` for a shared ``a`` (0 when two heads share ``v``: the poles must then
      separate them). A single wrong edge is harmless; the threshold below asks when a
      whole wrong perfect matching could fit;
    * ``noise_threshold`` -- the first-order threshold described in the module doc,
      with ``binding`` naming the condition that sets it: the smallest ``eps`` at
      which the learner's balls could make a residue vanish, two poles meet, a pole
      leave the negative axis (in a measurement or a matching configuration), or a
      wrong perfect pairing of two linked configurations fit. Each gap is divided by
      the sum of the first-order ball radii per unit ``eps`` of the quantities
      compared: ``FIRST_ORDER_SAFETY`` times the first-order error of a copy-function
      output, radii added as arb adds them (no correlation), products by
      ``|x| r_y + |y| r_x``;
    * ``linearity_threshold`` -- the ``eps`` at which second-order terms could
      reach half the first-order error (worst case over signs, componentwise;
      measured second-order terms are usually orders of magnitude smaller).

    All thresholds are conservative estimates (absolute values summed as if all
    errors conspired); ``thresholds`` lists each one. They describe the exact
    data; the learner does not use them -- it decides from its balls at run time.
    """

    C: Any
    C_upper: mpmath.mpf
    C_W: mpmath.mpf
    C_v: mpmath.mpf
    exact: bool
    scale: fmpq
    heads: int
    d: int
    conditions: dict[ConditionName, mpmath.mpf]
    binding: Threshold
    thresholds: dict[Threshold, mpmath.mpf]
    measurements: list[tuple[tuple[int, ...], tuple[int, ...]]]
    worst_parameter: Parameter  # the parameter whose row of DF attains C
    links: list[tuple[int, LinkKind]] = field(default_factory=list)  # (j, shared vector): link (j-1, j)
    _predict: Callable | None = field(repr=False, default=None)
    _worst_pattern: dict = field(repr=False, default_factory=dict)

    @property
    def noise_threshold(self) -> mpmath.mpf:
        return self.conditions[ConditionName.NOISE_THRESHOLD]

    def predict(self, noise: Callable[[list], Any]) -> list[tuple[list[list[mpmath.mpf]], list[mpmath.mpf]]]:
        """First-order parameter deviations ``DF . n`` for a known noise function.

        ``noise(tokens)`` gives the output error of a query (real tokens, as the
        oracle received them), e.g. :meth:`NoisyOracle.noise`. Returns
        ``(dW, dv)`` per canonical head of the model, in the model's canonical order.
        """
        if self._predict is None:
            raise ValueError("this Sensitivity carries no first-order map")
        return self._predict(noise)

    def worst_case_pattern(self, tokens: Sequence[Sequence[Any]]) -> fmpq:
        """The sign (-1, 0 or 1) of the answer error that attains ``C``, for query ``tokens``.

        ``C`` is attained by the parameter :attr:`worst_parameter` (a
        :class:`~exactlearn.approx.bounds.jacobian.Parameter` of a canonical head) when every
        measurement answer is
        off by ``eps`` times this sign (other queries: 0). Use it as the
        ``pattern`` of a :class:`~exactlearn.approx.NoisyOracle` to see that ``C``
        is sharp: that parameter's error is then ``C * eps`` to first order.
        """
        return self._worst_pattern.get(exact_tokens(tokens, self.d), fmpq(0))

    def summary(self) -> str:
        """A few lines for reports (numbers printed with 4 significant digits)."""
        def f(x):
            return mpmath.nstr(x, 4)
        kind = "exact rational" if self.exact else "arb enclosure"
        lines = [
            f"C = {f(self.C_upper)} ({kind}; weights {f(self.C_W)}, values {f(self.C_v)}), "
            f"query scale s = {self.scale}",
            "conditions: " + ", ".join(f"{k} = {f(v)}" for k, v in self.conditions.items()
                                       if not k.endswith("threshold")),
            f"noise threshold (first order) = {f(self.noise_threshold)}, set by {self.binding}; "
            f"linearity threshold (second order, worst case) = "
            f"{f(self.conditions[ConditionName.LINEARITY_THRESHOLD])}",
        ]
        return "\n".join(lines)


#: Why the bounds refuse affine attention (docs/algorithm.md section 9): their Jacobian has no w_h, c0.
AFFINE_REFUSAL = ("the sensitivity constant C is computed for attention without biases; this model is affine "
                  "attention (score terms w_h, offset c0), which the bounds do not model yet")


def _true_heads(model, precision: int):
    if getattr(model, "is_affine", False):
        raise InvalidArgumentError(AFFINE_REFUSAL)
    if isinstance(model, MultiHeadAttention):
        canon = model.canonical()
        return ModelKind.EXP, [(h.exp_W, h.v) for h in canon.heads]
    if isinstance(model, RealMultiHeadAttention):
        real = model.canonical()
        return ModelKind.REAL, ([] if real is None else real.heads)
    raise InvalidArgumentError(
        f"sensitivity needs a MultiHeadAttention or RealMultiHeadAttention, got {type(model).__name__}"
    )


def _links(links) -> list[tuple[int, LinkKind]]:
    """``[(j, kind)]`` for the matching configurations ``{j: Configuration}`` of a run."""
    return sorted((j, cfg.link) for j, cfg in links.items())


def _configurations(model, kind, H, d, s, seed, token_bound, precision):
    """The measurement tokens and the links of a noise-free run of the learner on ``model``."""
    if kind is ModelKind.EXP and s.q == 1:
        def exact_answer(tokens):
            return model.evaluate(tuple(tuple(int(t) for t in tok) for tok in tokens))

        oracle = ScaledQueries(exact_answer, s)
        run = run_schedule(oracle, d, H, field=ExactRationals(), seed=seed, token_bound=token_bound)
        return [(c.x, c.z) for c in run.configs], _links(run.links)
    real = model if kind is ModelKind.REAL else RealMultiHeadAttention.from_exp_model(model, 2 * precision)
    rec = learn_over_balls(NoisyOracle(real, 0, precision=2 * precision), d, heads=H, precision=precision,
                           scale=s, seed=seed, token_bound=token_bound)
    return rec.measurements, _links(rec.links)


def sensitivity(
    model: MultiHeadAttention | RealMultiHeadAttention,
    *,
    recovery: ApproxRecovery | None = None,
    seed: Any = 0,
    scale: Any = None,
    token_bound: int = DEFAULT_TOKEN_BOUND,
    precision: int = DEFAULT_PRECISION,
) -> Sensitivity:
    """The first-order constant ``C`` of the recovery map at ``model``'s exact data.

    The constant depends on the queries. With ``recovery`` (a result of
    :func:`learn_approx` on this model) it is computed for the configurations
    and the scale that run used. Without it, the configurations are those of a
    noise-free run with ``seed``, ``scale`` (default 1) and ``token_bound``:
    the exact learner for an exp-parametrised model and an integer scale
    ("computed exactly from the exact run"), otherwise the approximate learner
    on exact answers.

    >>> from exactlearn import MultiHeadAttention
    >>> E = [[["11/10", "9/10"], ["4/5", "6/5"]], [["6/5", 1], ["9/10", "4/3"]]]
    >>> sens = sensitivity(MultiHeadAttention.from_lists(E, [[1, -2], [3, 1]]))
    >>> sens.exact, type(sens.C).__name__, 10**6 < sens.C < 10**7   # C is an exact rational here
    (True, 'fmpq', True)
    """
    kind, heads = _true_heads(model, precision)
    H, d = len(heads), model.d
    if H == 0:
        raise InvalidArgumentError("the model's canonical form has no heads")
    if recovery is not None:
        if getattr(recovery, "affine", False):  # (a recovery read back from a summary has no flag)
            raise InvalidArgumentError(AFFINE_REFUSAL)
        s = recovery.scale
        if scale is not None and as_fmpq(scale, "scale") != s:
            raise InvalidArgumentError("scale differs from the recovery's scale")
        if recovery.num_heads != H:
            raise InvalidArgumentError(f"the recovery has {recovery.num_heads} heads, the model {H}")
        counts = getattr(recovery, "copy_counts", None)
        if counts is not None:
            raise InvalidArgumentError("C is computed for the paper's copy counts 0..2H; this recovery asked "
                                       f"{len(counts)} others (its error estimate is "
                                       "recovery.error_estimate)")
        measurements, links = recovery.measurements, _links(recovery.links)
    else:
        s = as_fmpq(1 if scale is None else scale, "scale")
        if s <= 0:
            raise InvalidArgumentError("scale must be positive")
        measurements, links = _configurations(model, kind, H, d, s, seed, token_bound, precision)
    with working_precision(precision):
        return _compute(kind, heads, H, d, s, measurements, links)


def _compute(kind, heads, H, d, s, measurements, links) -> Sensitivity:
    jac = Jacobian(kind, heads, d, s, measurements)
    worst, rows = jac.constant()
    labels = jac.labels()
    found, thresholds, binding = conditions(jac, links)
    return Sensitivity(
        C=rows[worst], C_upper=abs_upper(rows[worst]),
        C_W=max(abs_upper(rows[lab]) for lab in labels if lab.kind is ParameterKind.WEIGHT),
        C_v=max(abs_upper(rows[lab]) for lab in labels if lab.kind is ParameterKind.VALUE),
        exact=jac.exact, scale=s, heads=H, d=d, conditions=found, binding=binding, thresholds=thresholds,
        measurements=list(measurements), links=list(links), _predict=jac.predictor(),
        worst_parameter=worst, _worst_pattern=jac.worst_pattern(worst),
    )


#: Candidate query scales tried by :func:`choose_scale` (:attr:`~exactlearn.settings.ApproxSettings.scales`).
DEFAULT_SCALES = DEFAULT_SETTINGS.approx.scales


@dataclass
class ScaleChoice:
    """The result of :func:`choose_scale`: the best scale and ``C`` for every candidate."""

    scale: fmpq
    C: mpmath.mpf
    table: list[tuple[fmpq, mpmath.mpf | None, str]]  # (scale, C or None, note)

    def summary(self) -> str:
        lines = [f"{'scale':>8}  {'C':>10}  note"]
        for s, C, note in self.table:
            lines.append(f"{str(s):>8}  {mpmath.nstr(C, 3) if C is not None else '-':>10}  {note}")
        lines.append(f"chosen scale s = {self.scale} (smallest C)")
        return "\n".join(lines)


def choose_scale(
    model: MultiHeadAttention | RealMultiHeadAttention | ApproxRecovery,
    scales: Sequence[Any] = DEFAULT_SCALES,
    *,
    seed: Any = 0,
    token_bound: int = DEFAULT_TOKEN_BOUND,
    max_condition: Any = None,
    max_redraws: int | None = None,
    precision: int = DEFAULT_PRECISION,
    eps: Any = 0,
) -> ScaleChoice:
    """Pick the query scale ``s`` with the smallest sensitivity constant ``C``.

    For each candidate ``s`` the learner is run on the model's exact answers
    (same ``seed``, ``token_bound``, ``max_condition`` as the real run will use,
    so the same configurations) and ``C`` of that run is computed. ``model`` is
    a known model or -- for a black box -- a pilot :class:`ApproxRecovery`,
    whose recovered heads stand in for the truth (``C`` depends on the model
    continuously, so a rough pilot suffices). Candidates where the noise-free
    run cannot resolve the heads are skipped (noted in the table). With
    ``eps`` (the error bound the real oracle declares) the trial runs get
    simulated noise of that size, so their redraw decisions -- and hence their
    configurations -- resemble the real run's.

    No query is sent to the real oracle here.
    """
    real: RealMultiHeadAttention
    if isinstance(model, ApproxRecovery):
        real = model.model()
    elif isinstance(model, MultiHeadAttention):
        real = RealMultiHeadAttention.from_exp_model(model, 2 * precision)
    else:
        real = model
    if real.is_affine:
        raise InvalidArgumentError(AFFINE_REFUSAL)
    H = real.num_canonical_heads
    table: list[tuple[fmpq, mpmath.mpf | None, str]] = []
    for value in scales:
        s = as_fmpq(value, "scale")
        try:
            rec = learn_over_balls(NoisyOracle(real, eps, seed=seed, precision=2 * precision), real.d,
                                   heads=H, precision=precision, scale=s, seed=seed, token_bound=token_bound,
                                   max_condition=max_condition, max_redraws=max_redraws)
        except Exception as exc:  # an unusable scale is a finding, not a failure
            table.append((s, None, f"not resolved: {type(exc).__name__}"))
            continue
        sens = sensitivity(real, recovery=rec, precision=precision)
        table.append((s, sens.C_upper, f"{rec.queries} queries, {rec.redraws} redraws"))
    usable: list[tuple[fmpq, mpmath.mpf]] = [(s, C) for s, C, _ in table if C is not None]
    if not usable:
        raise InvalidArgumentError("no candidate scale lets the learner resolve the heads; try other scales")
    best = min(usable, key=lambda t: t[1])
    return ScaleChoice(best[0], best[1], table)
