"""Perfect matchings of linked heads (exactlearn.matching), the one search used by learn and approx."""

from __future__ import annotations

import itertools
import random

import mpmath
import pytest
from flint import arb, fmpq

from exactlearn.approx.core.field import RealBalls
from exactlearn.errors import ReconstructionError
from exactlearn.exactfield import ExactRationals
from exactlearn.matching import link_edges, link_matchings, perfect_matchings, residue_labels
from exactlearn.states import LinkKind


def brute_force(edges):
    n = len(edges)
    out = []
    for sigma in itertools.permutations(range(n)):
        for tau in itertools.permutations(range(n)):
            if all((sigma[i], tau[i]) in edges[i] for i in range(n)):
                out.append((list(sigma), list(tau)))
    return sorted(out)


def test_enumeration_agrees_with_brute_force():
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 3)
        edges = [[(i2, t) for i2 in range(n) for t in range(n) if rng.random() < 0.5] for _ in range(n)]
        every = perfect_matchings(edges, limit=10**6)
        assert sorted(every) == brute_force(edges)
        assert perfect_matchings(edges, limit=2) == every[:2]


def test_link_edges_follow_the_link_kind():
    F = ExactRationals()
    q = fmpq
    prev = [(q(1, 2), q(1)), (q(1, 3), q(2))]
    cur = [(q(1, 5), q(2)), (q(1, 7), q(1))]
    # shared x: poles multiply, residues add
    target_x = [(q(1, 21), q(3)), (q(1, 10), q(3))]
    assert link_matchings(F, LinkKind.X, prev, cur, target_x) == [([0, 1], [1, 0])]
    # shared a: poles multiply, residues stay (and must agree)
    target_a = [(q(1, 14), q(1)), (q(1, 15), q(2))]
    assert link_matchings(F, "a", prev, cur, target_a) == [([1, 0], [0, 1])]
    assert link_edges(F, LinkKind.A, prev, cur, target_a[:1]) is None   # term counts differ
    assert link_matchings(F, LinkKind.A, prev, cur, target_x) == []


def test_residue_labels_on_balls_use_the_observed_error_when_that_decides():
    field = RealBalls("1e-3")
    predicted = [arb("1.0 +/- 0.9"), arb("2.0 +/- 0.9")]  # wide: each overlaps both residues below
    residues = [arb("1.99 +/- 0.2"), arb("1.01 +/- 0.2")]
    assert residue_labels(field, residues, predicted) is None  # no fit yet: the balls as they are
    field.observed_noise = mpmath.mpf("1e-2")  # least-squares fits showed answers off by 1e-2 eps
    assert residue_labels(field, residues, predicted) == [1, 0]  # radii x 0.1 (label_noise_margin 10)
    with pytest.raises(ReconstructionError):  # a prediction meets no residue: a contradiction
        residue_labels(field, [arb("5 +/- 0.1"), arb("0.5 +/- 0.1")], predicted)
    field.observed_noise = mpmath.mpf(1)  # as noisy as eps: never wider, never narrower than eps's
    assert abs(float(field.for_labels(predicted[0]).rad()) - 0.9) < 1e-8  # (radii are rounded up)
    assert residue_labels(field, residues, predicted) is None


def test_residue_labels_refuse_to_guess_and_name_a_contradiction():
    field = RealBalls("1e-3")
    one = [arb("1.0 +/- 0.1")]
    assert residue_labels(field, one, one) == [0]  # H = 1
    # two heads' predictions meet the one residue: not unique
    residues = [arb("1.0 +/- 0.05"), arb("2.0 +/- 0.05")]
    assert residue_labels(field, residues, [arb("1.0 +/- 0.02"), arb("1.03 +/- 0.02")]) is None
    with pytest.raises(ReconstructionError, match="none of the residues found"):
        residue_labels(field, [arb("1.0 +/- 0.1")], [arb("2.0 +/- 0.1")])


def test_residue_labels_compare_exact_residues_once_each():
    """On exact fields the labelling elements are the elements: one comparison per pair (what the symbolic
    ledger records), not two."""
    calls = []

    class Counted(ExactRationals):
        def equal(self, a, b, why):
            calls.append(why)
            return super().equal(a, b, why)

    assert residue_labels(Counted(), [fmpq(3), fmpq(5)], [fmpq(5), fmpq(3)]) == [1, 0]
    assert len(calls) == 4
