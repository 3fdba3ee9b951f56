"""Full-rank checks of designs changing a few rows at a time (exactlearn.design_rank)."""

from __future__ import annotations

import random

import pytest
from flint import fmpq_mat, fmpz_mat, nmod_mat

from exactlearn.design_rank import DesignRank
from exactlearn.settings import ScheduleSettings


def _exact(rows):
    return fmpz_mat(len(rows), len(rows[0]), [v for r in rows for v in r]).rank() == len(rows)


def _walk(check, n, steps, seed, bound=1):
    """Random designs, each a few rows away from the last: every answer against the exact rank."""
    rng = random.Random(seed)
    rows = [[rng.randint(-bound, bound) for _ in range(n)] for _ in range(n)]
    keys = list(range(n))
    fresh = n
    answers = []
    for _ in range(steps):
        for i in rng.sample(range(n), rng.randint(1, 3)):
            if rng.random() < 0.3:  # a planted dependency: a combination of two other rows
                a, b = rng.sample([r for r in range(n) if r != i], 2)
                rows[i] = [x + 2 * y for x, y in zip(rows[a], rows[b])]
            else:
                rows[i] = [rng.randint(-bound, bound) for _ in range(n)]
            keys[i], fresh = fresh, fresh + 1
        got = check.full_rank(keys, lambda i: rows[i])
        want = _exact(rows)
        assert (got is not None) == want
        if want:
            assert got == fmpq_mat(fmpz_mat(n, n, [v for r in rows for v in r]))
        answers.append(want)
    return answers


@pytest.mark.parametrize("seed", range(4))
def test_the_checks_agree_with_the_exact_rank_on_random_designs(seed):
    answers = _walk(DesignRank(), 6, 80, seed)
    assert any(answers) and not all(answers)  # both kinds were met


@pytest.mark.parametrize("seed", range(4))
def test_a_small_prime_falls_back_to_the_exact_rank(seed):
    # modulo 3 many full-rank designs look deficient: only the exact rank may refuse them
    answers = _walk(DesignRank(ScheduleSettings(rank_prime=3)), 5, 80, seed, bound=2)
    assert any(answers) and not all(answers)


def test_an_accepted_change_keeps_the_inverse_modulo_the_prime():
    rng = random.Random(7)
    n = 8
    rows = [[rng.randint(-2, 2) for _ in range(n)] for _ in range(n)]
    while not _exact(rows):
        rows[0] = [rng.randint(-2, 2) for _ in range(n)]
    check = DesignRank()
    assert check.full_rank(list(range(n)), lambda i: rows[i]) is not None
    rows[3], rows[5] = [rng.randint(-2, 2) for _ in range(n)], [rng.randint(-2, 2) for _ in range(n)]
    keys = [0, 1, 2, "a", 4, "b", 6, 7]
    design = check.full_rank(keys, lambda i: rows[i])
    assert design is not None and _exact(rows)
    inverse = check._inverse  # the update path ran: the inverse is the new design's
    assert inverse is not None
    assert inverse == nmod_mat(fmpz_mat(n, n, [v for r in rows for v in r]), check.prime).inv()


def test_a_design_differing_in_many_rows_is_checked_exactly():
    check = DesignRank(ScheduleSettings(rank_update_rows=1))
    _walk(check, 5, 30, 0)
