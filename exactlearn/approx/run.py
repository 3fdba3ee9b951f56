"""The schedule run of the approximate path: the exact learner's run over real balls.

:func:`run_approx_schedule` is :func:`exactlearn.learn.run_schedule` (known
``H``, paper schedule) over :class:`~exactlearn.approx.field.RealBalls`, with an
optional guide that chooses the configurations' token vectors
(:func:`~exactlearn.approx.guide.guided_chain`). A measured configuration's
``R(oo)`` is its fitted copy function's (``Configuration.fit``), whose ball is
sharper than ``R(0) - sum_h c_h``; on the exact path both are the same number.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from ..chain import TokenChain
from ..exact import Token
from ..learn import DEFAULT_TOKEN_BOUND, ChainFactory, ScheduleRun, run_schedule
from ..schedule import Schedule
from .field import RealBalls
from .guide import Guide, guided_chain

__all__ = ["run_approx_schedule"]


def run_approx_schedule(oracle: Callable, d: int, heads: int, *, field: RealBalls, seed: Any = 0,
                        token_bound: int = DEFAULT_TOKEN_BOUND, max_redraws: int | None = None,
                        progress: Callable[[int, int], None] | None = None, guide: Guide | None = None,
                        scale: float = 1.0, reuse: Sequence[tuple[Token, Token]] = ()) -> ScheduleRun:
    """The paper schedule with known ``H`` over ``field``; with a ``guide`` the token vectors are chosen
    by the conditioning it predicts at query scale ``scale``, reusing the configurations ``reuse``."""
    chain: ChainFactory = TokenChain
    if guide is not None:
        chain = partial(guided_chain, guide=guide, scale=scale, reuse=reuse)
    return run_schedule(oracle, d, heads, field=field, seed=seed, schedule=Schedule.PAPER,
                        token_bound=token_bound, max_redraws=max_redraws, progress=progress, chain=chain)
