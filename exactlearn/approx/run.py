"""The schedule run of the approximate path: the exact learner's run, plus one sharper ball.

:class:`ApproxScheduleRun` is :class:`exactlearn.learn.ScheduleRun` with one
difference. A measured configuration's ``R(oo)`` enters the known values of the
two matching configurations next to it. The schedule forms it as
``R(0) - sum_h c_h``; over balls that sum carries the radius of every residue
without their correlation. The copy-function fit
(:func:`~exactlearn.approx.copyfun.certify_copy_function`) gives ``R(oo) = a``
directly, with its own (first-order or certified) radius, often much smaller.
The run keeps that ball as the configuration's ``fitted_infinity``. On the exact
path both are the same number, so the exact schedule is untouched.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import RecoveryError
from ..exact import Token
from ..learn import DEFAULT_TOKEN_BOUND, ScheduleRun
from ..schedule import Configuration
from .field import RealBalls
from .guide import Guide, GuidedTokenChain

__all__ = ["ApproxScheduleRun", "run_approx_schedule"]


class ApproxScheduleRun(ScheduleRun):
    """The schedule over :class:`RealBalls`, keeping each measurement's fitted ``R(oo)`` ball.

    With a ``guide`` (:mod:`.guide`) the configurations' token vectors are chosen
    by predicted conditioning before they are queried.
    """

    field: RealBalls

    def __init__(self, *args: Any, guide: Guide | None = None, scale: float = 1.0,
                 reuse: Sequence[tuple[Token, Token]] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        if guide is not None:
            self.chain = GuidedTokenChain(self.chain.d, self.chain.n_full, self.chain.sampler, guide, scale,
                                          reuse=reuse)

    def _query(self, cfg: Configuration, where: str, predict: Callable[..., Any] | None = None) -> Any:
        result = super()._query(cfg, where, predict)
        measured = cfg.at_infinity is None and len(cfg.terms) > 0
        cfg.fitted_infinity = self.field.fitted_infinity if measured else None
        return result


def run_approx_schedule(oracle: Callable, d: int, heads: int, *, field: RealBalls, seed: Any = 0,
                        token_bound: int = DEFAULT_TOKEN_BOUND, max_redraws: int | None = None,
                        progress: Callable[[int, int], None] | None = None, guide: Guide | None = None,
                        scale: float = 1.0, reuse: Sequence[tuple[Token, Token]] = ()
                        ) -> ApproxScheduleRun:
    """:func:`exactlearn.learn.run_schedule` (known ``H``, paper schedule) with :class:`ApproxScheduleRun`."""
    run = ApproxScheduleRun(oracle, d, heads, False, field, random.Random(f"exactlearn.learn:{seed}"),
                            schedule="paper", token_bound=token_bound, max_redraws=max_redraws,
                            progress=progress, guide=guide, scale=scale, reuse=reuse)
    try:
        run.result = run.run()
    except RecoveryError as exc:
        raise exc.counted(run.queries, run.max_length, run.redraws) from None
    return run
