"""The bounds layer: the sensitivity constant ``C``, how much an output error can move the parameters.

* :mod:`.jacobian` -- the Jacobian of the recovery map at the exact data and the constant ``C``;
* :mod:`.thresholds` -- the conditions that come with ``C`` and the first-order noise thresholds;
* :mod:`.constant` -- :func:`sensitivity` (``C`` with its conditions for a model and the queries
  of a run) and :func:`choose_scale`.

It uses the core (:mod:`exactlearn.approx.core`: balls, the field, the models and
the learner without a guide), never the guide layer. (It is not named
``sensitivity``: ``exactlearn.approx.sensitivity`` is the function.)
"""

from .constant import DEFAULT_SCALES, ScaleChoice, Sensitivity, choose_scale, sensitivity

__all__ = ["sensitivity", "Sensitivity", "choose_scale", "ScaleChoice", "DEFAULT_SCALES"]
