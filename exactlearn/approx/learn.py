"""``learn_approx``: the approximate learner, the one entry point above the three layers of approx/.

:func:`learn_approx` is the core's learner over real balls
(:func:`~exactlearn.approx.core.learner.learn_over_balls`) with the configurations
chosen as its ``guide=`` says (:func:`~exactlearn.approx.guide.choice.guidance`).
It lives above both layers it composes: the core knows no guide, and the
bounds layer (the constant ``C``), which runs the learner on exact answers, uses the core's
learner without a guide.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ..counter import affine_argument, declared
from ..errors import InvalidArgumentError
from ..learn import DEFAULT_TOKEN_BOUND
from ..limits import DEFAULT_LIMITS, Limits, check_approx
from ..validate import integer
from .core.balls import DEFAULT_PRECISION
from .core.learner import learn_over_balls
from .core.recovery import ApproxRecovery
from .guide.choice import GuideMode, guidance

__all__ = ["learn_approx"]


def learn_approx(oracle: Callable[[list[tuple[float, ...]]], Any], d: int, *, heads: int,
                 precision: int = DEFAULT_PRECISION, eps: Any = None, scale: Any = None, seed: Any = 0,
                 token_bound: int = DEFAULT_TOKEN_BOUND, max_redraws: int | None = None,
                 progress: Callable[[int, int], None] | None = None, rigorous: bool = False,
                 max_condition: Any = None, guide: Any = GuideMode.AUTO,
                 limits: Limits = DEFAULT_LIMITS, affine: bool | None = None) -> ApproxRecovery:
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
      6), ``None`` (random configurations) otherwise. ``None``: random configurations.
    * ``limits`` -- maxima checked before the first query, as in :func:`exactlearn.learn`.
    * ``affine`` -- learn affine attention (a layer with biases: scores
      ``x_i^T W_h x_N + w_h^T x_i``, output offset ``c0``; docs/algorithm.md
      section 9) with ``4H d(d+1) - 2H + 1`` queries; the heads carry ``w`` and the
      result ``c0``. Default ``None``: what the oracle declares (its ``affine``
      attribute: :func:`~exactlearn.targets.torch_attention` of a layer with biases),
      else ``False``. The guides do not model ``w_h`` yet: with ``affine``, ``guide``
      must be ``"auto"`` (then random configurations) or ``None``.

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
        raise InvalidArgumentError(f"learn_approx learns scalar answers; this oracle answers vectors of "
                                   f"length {outputs} (e.g. torch_attention(layer) without a readout). Pass "
                                   f"a readout (torch_attention(layer, readout)): vector outputs are learned "
                                   f"exactly by learn, not yet on the approximate path")
    if affine and not (guide is None or (isinstance(guide, str) and guide == GuideMode.AUTO)):
        raise InvalidArgumentError("affine=True takes guide='auto' (random configurations) or guide=None: "
                                   "the guides predict the conditioning of attention without the score "
                                   "term w_h")
    return learn_over_balls(oracle, d, heads=heads, precision=precision, eps=eps, scale=scale, seed=seed,
                            token_bound=token_bound, max_redraws=max_redraws, progress=progress,
                            rigorous=rigorous, max_condition=max_condition, limits=limits,
                            guidance=None if affine else partial(guidance, guide), affine=affine)
