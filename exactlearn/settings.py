"""The tuning constants of exactlearn, gathered in one settings object.

Each field says what it controls. None of them changes what a run may return:
they trade time, queries and redraws against each other, and every decision
they feed is checked (docs/algorithm.md section 6). The defaults are
:data:`DEFAULT_SETTINGS`; the dataclasses are frozen, so there is no global
state to change (functions that take a setting as an argument default to the
value here).

>>> DEFAULT_SETTINGS.schedule.token_bound
2
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ScheduleSettings", "Settings", "DEFAULT_SETTINGS"]


@dataclass(frozen=True)
class ScheduleSettings:
    """The exact schedule (:mod:`exactlearn.learn`, :mod:`exactlearn.chain`)."""

    #: Token entries are drawn uniformly from ``[-B, B]``. ``B = 2`` keeps the exponents
    #: ``(z - x)_a x_b`` (at most ``2B^2 = 8`` in size) and hence every exact number small;
    #: degenerate draws, ``O(1/B)`` per configuration, are redrawn and counted.
    token_bound: int = 2
    #: Draws of token vectors tried before giving up on the pre-query conditions (full-rank designs).
    pre_query_draws: int = 10_000
    #: Lean schedule: draws in a row of one later configuration whose predicted residues collide or
    #: vanish (no query spent) before the run falls back to matching queries.
    prediction_draws: int = 64


@dataclass(frozen=True)
class Settings:
    """Every tuning constant, by the part of the library it tunes."""

    schedule: ScheduleSettings = field(default_factory=ScheduleSettings)


#: The settings every function uses unless given others.
DEFAULT_SETTINGS = Settings()
