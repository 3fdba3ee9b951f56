"""The guide layer: configurations chosen before querying by what a guide predicts.

* :mod:`.chooser` -- predicted conditioning and the guided chain (:class:`~.chooser.GuidedChooser`);
* :mod:`.sketch` -- a sketch: rough heads from few answers, the default guide;
* :mod:`.lowrank` -- the sketch's low-rank weights;
* :mod:`.repair` -- a finished run's chain with its blamed configurations asked again;
* :mod:`.choice` -- which guide a run gets from :func:`~exactlearn.approx.learn_approx`'s ``guide=``.

A guide only chooses *which* tokens are asked; it never enters a returned value.
It uses the core (:mod:`exactlearn.approx.core`), never the bounds layer.
"""

from .chooser import (
           Guide,
           GuidedChooser,
           amplifications,
           guide_heads,
           guided_chain,
           predicted_condition,
           predicted_constant,
)

__all__ = ["Guide", "GuidedChooser", "guided_chain", "guide_heads", "predicted_condition",
           "predicted_constant", "amplifications"]
