"""The schedule run of the approximate path: the exact learner's run over real balls.

:func:`run_approx_schedule` is :func:`exactlearn.learn.run_schedule` (known
``H``, paper schedule) over :class:`~exactlearn.approx.core.field.RealBalls`;
``chain`` draws the configurations' token vectors (random by default; the guide
layer offers a guided chain, :func:`~exactlearn.approx.guide.chooser.guided_chain`).
A measured configuration's ``R(oo)`` is its fitted copy function's
(``Configuration.fit``), whose ball is sharper than ``R(0) - sum_h c_h``; on the
exact path both are the same number.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...chain import TokenChain
from ...learn import DEFAULT_TOKEN_BOUND, ChainFactory, ScheduleRun, run_schedule
from ...schedule import Schedule
from .field import RealBalls

__all__ = ["run_approx_schedule"]


def run_approx_schedule(oracle: Callable, d: int, heads: int, *, field: RealBalls, seed: Any = 0,
                        token_bound: int = DEFAULT_TOKEN_BOUND, max_redraws: int | None = None,
                        progress: Callable[[int, int], None] | None = None,
                        chain: ChainFactory = TokenChain, affine: bool = False) -> ScheduleRun:
    """The paper schedule with known ``H`` over ``field``, its configurations drawn by ``chain``
    (``affine``: of affine attention, docs/algorithm.md section 9)."""
    return run_schedule(oracle, d, heads, field=field, seed=seed, schedule=Schedule.PAPER,
                        token_bound=token_bound, max_redraws=max_redraws, progress=progress, chain=chain,
                        affine=affine)
