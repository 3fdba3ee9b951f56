"""The field seam's shared helpers (exactlearn.field): row selection against one rank per row."""

from __future__ import annotations

import random

from flint import fmpq_mat
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactlearn.field import choose_independent_rows


def greedy_rows(rows, rank):
    """The first ``rank`` rows that each raise the rank of the ones chosen before (one rank per row)."""
    chosen = []
    for i, row in enumerate(rows):
        trial = [rows[j] for j in chosen] + [row]
        if fmpq_mat(len(trial), len(row), [x for r in trial for x in r]).rank() == len(trial):
            chosen.append(i)
            if len(chosen) == rank:
                break
    return chosen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 8), st.integers(1, 5), st.integers(0, 6), st.integers(0, 10**6))
def test_independent_rows_are_the_greedy_ones(n, width, rank, seed):
    rng = random.Random(seed)
    rows = [tuple(rng.randint(-1, 1) for _ in range(width)) for _ in range(n)]
    assert choose_independent_rows(rows, rank) == greedy_rows(rows, rank)
