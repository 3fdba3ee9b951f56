"""Which guide a run gets: :func:`~exactlearn.approx.learn_approx`'s ``guide=`` as a :class:`Guidance`.

* a model or a pilot :class:`~exactlearn.approx.ApproxRecovery`: its heads guide
  the chain (:func:`~exactlearn.approx.guide.chooser.guided_chain`);
* :attr:`GuideMode.SKETCH` (``"sketch"``): a sketch of the same oracle
  (:func:`~exactlearn.approx.guide.sketch.sketch_heads`, its queries counted)
  guides the chain and offers its configurations for reuse;
* :attr:`GuideMode.AUTO` (``"auto"``, the default): a sketch from
  ``SKETCH_MIN_HEADS`` to ``SKETCH_MAX_HEADS`` heads, random configurations otherwise;
* ``None``: random configurations.

>>> [(g.remember, g.scale) for g in (guidance("auto", 2), guidance(GuideMode.AUTO, 3), guidance(None, 3))]
[(False, None), (True, 2), (False, None)]
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ...errors import InvalidArgumentError, RecoveryError
from ...states import StrEnum
from ..core.learner import Guidance, Plan, RunSetup
from .chooser import guide_heads, guided_chain
from .sketch import SKETCH_MAX_HEADS, SKETCH_MIN_HEADS, SKETCH_SCALE, sketch_heads

__all__ = ["GuideMode", "guidance"]


class GuideMode(StrEnum):
    """The guides :func:`~exactlearn.approx.learn_approx` makes itself (``guide=`` also takes a model)."""

    AUTO = "auto"  # a sketch from SKETCH_MIN_HEADS to SKETCH_MAX_HEADS heads, random configurations otherwise
    SKETCH = "sketch"  # a sketch of the oracle (at most SKETCH_MAX_HEADS heads)


def _sketches(guide: Any, H: int) -> bool:
    """Whether the run sketches first: ``guide="sketch"`` (at most ``SKETCH_MAX_HEADS`` heads, refused
    before any query otherwise), or ``"auto"`` from ``SKETCH_MIN_HEADS`` to ``SKETCH_MAX_HEADS`` heads."""
    if isinstance(guide, str) and guide == GuideMode.SKETCH:
        if H > SKETCH_MAX_HEADS:
            raise InvalidArgumentError(f"guide='sketch' takes at most {SKETCH_MAX_HEADS} heads (the sketch "
                                       f"tries every pairing of the heads), got {H}; pass guide=None")
        return True
    return isinstance(guide, str) and guide == GuideMode.AUTO and SKETCH_MIN_HEADS <= H <= SKETCH_MAX_HEADS


def guidance(guide: Any, heads: int) -> Guidance:
    """The :class:`~exactlearn.approx.core.learner.Guidance` of ``guide=`` for ``heads`` heads (a sketch
    for more than ``SKETCH_MAX_HEADS`` is refused here, before any query)."""
    sketching = _sketches(guide, heads)
    return Guidance(plan=partial(_plan, guide, sketching), remember=sketching,
                    scale=SKETCH_SCALE if sketching else None)


def _plan(guide: Any, sketching: bool, setup: RunSetup) -> Plan:
    """The chain of the run: guided by a sketch, by ``guide``'s heads, or random.

    A sketch that fails (too many failed fits) leaves random configurations, with a note: it
    cost queries (counted by the oracle), never correctness.
    """
    if sketching:
        try:
            sketch = sketch_heads(setup.counter, setup.d, setup.heads, seed=setup.seed,
                                  token_bound=setup.token_bound)
        except RecoveryError as exc:
            setup.notes.append(f"no sketch: {exc}")
            return Plan()
        return Plan(partial(guided_chain, guide=sketch.guide(setup.scale), scale=setup.scale,
                            reuse=sketch.plan), sketch.queries)
    if guide is None or isinstance(guide, str):
        if guide not in (None, GuideMode.AUTO):
            raise InvalidArgumentError(f"guide must be a model, a recovery, 'auto', 'sketch' or None, "
                                       f"got {guide!r}")
        return Plan()
    return Plan(partial(guided_chain, guide=guide_heads(guide), scale=setup.scale))
