"""The approximate path: float and noisy oracles, ball arithmetic, the sensitivity constant ``C``.

Floats (and other approximate numbers) appear here by design; the exact core
(:mod:`exactlearn`) stays float-free. The approximate learner is *the same
schedule* as :func:`exactlearn.learn`, run through the field seam
(:mod:`exactlearn.field`) over real balls (:class:`RealBalls`, python-flint
``arb``) instead of the rationals.

* :class:`NoisyOracle` -- exact output plus a reproducible, exactly known
  perturbation of size at most ``eps``; :class:`RealOracle` -- a model with
  real ``W`` evaluated in mpmath at a chosen precision (53 bits ~ float64);
  :class:`RealMultiHeadAttention` -- such a model.
* :func:`learn_approx` -- learn from any callable taking real token vectors and
  returning a real number; heads with ``W`` (the real matrix, mpmath numbers),
  ``v`` and error radii; from a vector oracle also the value matrices ``V_h``
  (:class:`VectorApproxRecovery`, :mod:`.values`). Refuses with :class:`AmbiguousAnswersError` when the
  noise leaves the head matching ambiguous.
* :func:`sensitivity` -- the first-order constant ``C`` of the recovery map at
  the exact data (exact rational for exp-parametrised models) and the
  conditions it needs; :func:`choose_scale` -- the query scale with the
  smallest ``C``.
* ``exactlearn approx`` prints the figures; :mod:`exactlearn.demos.evidence` (outside
  the library core) computes them.

The package has three layers, and imports only go down (``tests/test_imports.py``):

* :mod:`.core` -- balls, the field, copy functions, the schedule run, the learner
  over real balls without a guide, models and oracles;
* :mod:`.bounds` -- the Jacobian, the sensitivity constant ``C``, its thresholds (uses the core);
* :mod:`.guide` -- the sketch, the guided chain, low-rank weights (uses the core).

:func:`learn_approx` (:mod:`.learn`) sits above them: it is the core's learner
with the configurations a guide chooses.

>>> import mpmath
>>> from exactlearn import MultiHeadAttention
>>> E = [[["11/10", "9/10"], ["4/5", "6/5"]], [["6/5", 1], ["9/10", "4/3"]]]
>>> truth = MultiHeadAttention.from_lists(E, [[1, -2], [3, 1]])
>>> oracle = NoisyOracle(truth, eps="1e-20", seed=0)
>>> rec = learn_approx(oracle, 2, heads=2)
>>> sens = sensitivity(truth, recovery=rec)
>>> sens.exact                                   # C is an exact rational for this model
True
>>> parameter_error(rec, truth).max_abs <= sens.C_upper * mpmath.mpf("1e-20")
True
"""

from .bounds import (
    DEFAULT_SCALES,
    ScaleChoice,
    Sensitivity,
    choose_scale,
    sensitivity,
)
from .core.balls import DEFAULT_PRECISION, working_precision
from .core.field import RealBalls
from .core.learner import suggested_max_condition
from .core.models import NoisyOracle, RealMultiHeadAttention, RealOracle
from .core.recovery import (
    AmbiguousAnswersError,
    ApproxHead,
    ApproxRecovery,
    InexactModelWarning,
    ParameterError,
    parameter_error,
    truth_parameters,
)
from .learn import learn_approx
from .values import VectorApproxRecovery
from .valuetruth import RealVectorOracle, VectorParameterError, VectorParameters, vector_parameter_error

__all__ = [
    "learn_approx",
    "ApproxRecovery",
    "ApproxHead",
    "AmbiguousAnswersError",
    "InexactModelWarning",
    "NoisyOracle",
    "RealOracle",
    "RealMultiHeadAttention",
    "RealBalls",
    "ParameterError",
    "parameter_error",
    "truth_parameters",
    "VectorApproxRecovery",
    "RealVectorOracle",
    "VectorParameters",
    "VectorParameterError",
    "vector_parameter_error",
    "sensitivity",
    "Sensitivity",
    "choose_scale",
    "ScaleChoice",
    "DEFAULT_SCALES",
    "suggested_max_condition",
    "working_precision",
    "DEFAULT_PRECISION",
]
