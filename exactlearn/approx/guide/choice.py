"""Which guide a run gets: :func:`~exactlearn.approx.learn_approx`'s ``guide=`` as a :class:`Guidance`.

* a model or a pilot :class:`~exactlearn.approx.ApproxRecovery`: its heads guide
  the chain (:func:`~exactlearn.approx.guide.chooser.guided_chain`);
* :attr:`GuideMode.SKETCH` (``"sketch"``): a sketch of the same oracle
  (:func:`~exactlearn.approx.guide.sketch.sketch_heads`, its queries counted)
  guides the chain and offers its configurations for reuse;
* :attr:`GuideMode.AUTO` (``"auto"``, the default): a sketch from
  ``sketch_min_heads`` to ``sketch_max_heads`` heads
  (:class:`~exactlearn.settings.GuideSettings`), random configurations otherwise;
* ``None``: random configurations.

>>> [(g.remember, g.scale) for g in (guidance("auto", 2), guidance(GuideMode.AUTO, 3), guidance(None, 3))]
[(False, None), (True, 2), (False, None)]
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from flint import fmpq

from ...errors import InvalidArgumentError, RecoveryError
from ...exact import rational_str
from ...schedule import TokenSampler, configuration_count
from ...settings import DEFAULT_SETTINGS, GuideSettings
from ...states import StrEnum
from ..core.balls import as_fmpq
from ..core.learner import Guidance, Plan, RunSetup
from .chooser import Guide, guide_heads, guided_chain, predicted_constant
from .sketch import sketch_heads

__all__ = ["GuideMode", "guidance", "pilot_scale"]


class GuideMode(StrEnum):
    """The guides :func:`~exactlearn.approx.learn_approx` makes itself (``guide=`` also takes a model)."""

    AUTO = "auto"  # a sketch from sketch_min_heads to sketch_max_heads heads, random configurations otherwise
    SKETCH = "sketch"  # a sketch of the oracle (at most sketch_max_heads heads)


def _sketches(guide: Any, H: int, settings: GuideSettings) -> bool:
    """Whether the run sketches first: ``guide="sketch"`` (at most ``sketch_max_heads`` heads, refused
    before any query otherwise), or ``"auto"`` from ``sketch_min_heads`` to ``sketch_max_heads`` heads."""
    if isinstance(guide, str) and guide == GuideMode.SKETCH:
        if H > settings.sketch_max_heads:
            raise InvalidArgumentError(f"guide='sketch' takes at most {settings.sketch_max_heads} heads (the "
                                       f"sketch tries every pairing of the heads), got {H}; pass guide=None")
        return True
    return (isinstance(guide, str) and guide == GuideMode.AUTO
            and settings.sketch_min_heads <= H <= settings.sketch_max_heads)


def guidance(guide: Any, heads: int, settings: GuideSettings = DEFAULT_SETTINGS.guide) -> Guidance:
    """The :class:`~exactlearn.approx.core.learner.Guidance` of ``guide=`` for ``heads`` heads (a sketch
    for more than ``sketch_max_heads`` is refused here, before any query)."""
    sketching = _sketches(guide, heads, settings)
    return Guidance(plan=partial(_plan, guide, sketching, settings), remember=sketching,
                    scale=settings.sketch_scale if sketching else None)


def _plan(guide: Any, sketching: bool, settings: GuideSettings, setup: RunSetup) -> Plan:
    """The chain of the run: guided by a sketch, by ``guide``'s heads, or random.

    A sketch that fails (too many failed fits) leaves random configurations, with a note: it
    cost queries (counted by the oracle), never correctness.
    """
    if sketching:
        scale = [setup.scale]

        def rescale(shrink: bool) -> bool:
            new = None if setup.rescale is None else setup.rescale(shrink)
            if new is not None:
                scale[0] = new
            return new is not None

        try:
            sketch = sketch_heads(setup.counter, setup.d, setup.heads, seed=setup.seed,
                                  token_bound=setup.token_bound, settings=settings, points=_counts(setup),
                                  rescale=rescale)
        except RecoveryError as exc:
            setup.notes.append(f"no sketch: {exc}")
            return Plan(scale=scale[0])
        guide, reuse = sketch.guide(scale[0]), sketch.plan
        if _moved(guide, setup, scale, rescale, settings):
            reuse = ()  # the sketch's answers are other queries at the new scale
        return Plan(partial(guided_chain, guide=guide, scale=scale[0], reuse=reuse, settings=settings,
                            points=_counts(setup)),
                    sketch.queries, scale[0])
    if guide is None or isinstance(guide, str):
        if guide not in (None, GuideMode.AUTO):
            raise InvalidArgumentError(f"guide must be a model, a recovery, 'auto', 'sketch' or None, "
                                       f"got {guide!r}")
        return Plan()
    return Plan(partial(guided_chain, guide=guide_heads(guide), scale=setup.scale, settings=settings,
                        points=_counts(setup)))


def _moved(guide: Guide, setup: RunSetup, scale: list[float], rescale: Callable[[bool], bool],
           settings: GuideSettings) -> bool:
    """Whether the run moved (``rescale``, ``scale[0]`` updated) to the query scale whose plan the sketch's
    heads predict best (:func:`_scale_costs`), which they do when it predicts a constant
    ``settings.sketch_scale_gain`` times smaller than at the sketch's own scale."""
    if setup.rescale is None:  # scale= given
        return False
    costs = _scale_costs(guide, setup.d, setup.seed, setup.token_bound, _counts(setup), settings)
    if not costs:
        return False
    best = min(costs, key=costs.__getitem__)
    here = costs.get(_exact(scale[0]))
    if here is not None and not costs[best] * settings.sketch_scale_gain < here:
        return False
    moved = False
    while _exact(scale[0]) > best and rescale(True):
        moved = True
    while _exact(scale[0]) < best and rescale(False):
        moved = True
    if moved:
        setup.notes.append(f"the sketch's heads predict scale {rational_str(_exact(scale[0]))} best "
                           f"(constant {costs[best]:.1e}, {_brief(here)} at the sketch's): the run moved "
                           "there")
    return moved


def _brief(cost: float | None) -> str:
    return "none" if cost is None else f"{cost:.1e}"


def _exact(real: float) -> fmpq:
    """A query scale (a binary fraction) as a rational."""
    numerator, denominator = real.as_integer_ratio()
    return fmpq(numerator, denominator)


def _scale_costs(guide: Guide, d: int, seed: Any, token_bound: int, points: tuple[int, ...],
                 settings: GuideSettings, affine: bool = False) -> dict[fmpq, float]:
    """Per query scale of ``ApproxSettings.scales``, the constant ``guide`` predicts for one guided plan
    drawn at it (:func:`~exactlearn.approx.guide.chooser.predicted_constant`; the same draws for every
    scale); scales no plan could be drawn at are left out. No query is asked."""
    n = configuration_count(d, affine=affine)
    one_plan = replace(settings, plans=1)  # a plan per scale: the scales differ by orders of magnitude
    out: dict[fmpq, float] = {}
    for value in DEFAULT_SETTINGS.approx.scales:
        s = as_fmpq(value, "scale")
        real = float(s.p) / float(s.q)
        sampler = TokenSampler(d, token_bound, random.Random(f"exactlearn.approx.pilot_scale:{seed}"))
        chain = guided_chain(d, n, sampler, guide, real, settings=one_plan, points=points, affine=affine)
        try:
            chain.draw()
        except RecoveryError:
            continue
        out[s] = predicted_constant(guide, real, chain.pairs(), settings, points, affine)
    return out


def _counts(setup: RunSetup) -> tuple[int, ...]:
    """The run's copy counts for the guide: ``()`` for the paper's ``0..2H``, else the counts."""
    return () if setup.points == tuple(range(2 * setup.heads + 1)) else setup.points


def pilot_scale(pilot: Any, d: int, heads: int, *, seed: Any = 0, token_bound: int = 2,
                points: tuple[Any, ...] = (), settings: GuideSettings = DEFAULT_SETTINGS.guide) -> fmpq:
    """The query scale of ``ApproxSettings.scales`` whose guided plan has the smallest predicted constant
    (:func:`~exactlearn.approx.guide.chooser.predicted_constant`) under ``pilot``'s heads (a first
    recovery of the same oracle): no query is asked."""
    costs = _scale_costs(guide_heads(pilot), d, seed, token_bound, points, settings,
                         bool(getattr(pilot, "affine", False)))
    return min(costs, key=costs.__getitem__) if costs else fmpq(1)
