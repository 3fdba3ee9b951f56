"""The approximate path: float and noisy oracles, ball arithmetic, the sensitivity constant."""

from .balls import working_precision
from .field import RealBalls
from .learn import (
    DEFAULT_PRECISION,
    AmbiguousAnswersError,
    ApproxHead,
    ApproxRecovery,
    ParameterError,
    learn_approx,
    parameter_error,
    suggested_max_condition,
    truth_parameters,
)
from .models import NoisyOracle, RealMultiHeadAttention, RealOracle

__all__ = [
    "learn_approx",
    "ApproxRecovery",
    "ApproxHead",
    "AmbiguousAnswersError",
    "NoisyOracle",
    "RealOracle",
    "RealMultiHeadAttention",
    "RealBalls",
    "ParameterError",
    "parameter_error",
    "truth_parameters",
    "working_precision",
    "DEFAULT_PRECISION",
    "suggested_max_condition",
]

from .sensitivity import DEFAULT_SCALES, ScaleChoice, Sensitivity, choose_scale, sensitivity  # noqa: E402

__all__ += ["sensitivity", "Sensitivity", "choose_scale", "ScaleChoice", "DEFAULT_SCALES"]
