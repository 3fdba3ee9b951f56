"""Labels by residues on the approximate path (docs/approximate.md, "Labels by residues"): vector answers
chain only the first d configurations, later ones are labelled by their predicted residues."""

from __future__ import annotations

import mpmath
import numpy as np
from flint import arb

from exactlearn import MultiHeadAttention
from exactlearn.approx import NoisyOracle, RealVectorOracle, learn_approx, vector_parameter_error
from exactlearn.approx.core.balls import eps_ball, to_arb, to_mpf
from exactlearn.approx.core.copyfun import certify_copy_function
from exactlearn.approx.core.counts import geometric_counts
from exactlearn.approx.core.field import RealBalls
from exactlearn.approx.core.learner import learn_over_balls
from exactlearn.learn import ScheduleRun
from exactlearn.schedule import paper_query_count, value_row
from exactlearn.states import RedrawReason, Why

from .test_approx_values import exact_truth


def test_vector_answers_match_only_the_first_d_configurations_by_queries():
    truth = exact_truth(3, 2, seed=0)
    oracle = RealVectorOracle(truth, 200, eps="1e-40")
    rec = learn_approx(oracle, 3, heads=2, seed=1)
    assert rec.chained == 3 and rec.redraws == 0
    # 9 configurations of 5 copy counts, 2 links of 3: measured from the oracle's log
    assert rec.queries == oracle.queries == rec.planned == 9 * 5 + 2 * 3 < paper_query_count(3, 2)
    assert len(rec.links) == 2
    assert (rec.to_dict()["chained"], rec.to_dict()["planned"]) == (3, 51)
    assert vector_parameter_error(rec, truth).max_abs < mpmath.mpf("1e-25")


def test_scalar_answers_match_every_configuration_by_queries():
    oracle = NoisyOracle(MultiHeadAttention.random(3, 2, seed=0), eps="1e-30", seed=0)
    rec = learn_approx(oracle, 3, heads=2, guide=None)
    assert rec.chained == 9 and len(rec.links) == 8


def test_a_residue_that_could_be_two_heads_is_redrawn_not_guessed(monkeypatch):
    """The first configuration labelled by residues sees every residue overlap every prediction (as wide
    balls would): it is redrawn (counted), never labelled by a guess."""
    truth = exact_truth(3, 2, seed=0)
    overlaps, label = RealBalls.equal, ScheduleRun._label_by_residues
    labelling = []

    def wide(self, a, b, why=Why.DISTINCT):
        return (why is Why.RESIDUE_COMBINATION and len(labelling) == 1) or overlaps(self, a, b, why)

    def first_wide(self, *args):
        labelling.append(1)
        try:
            return label(self, *args)
        finally:
            labelling.append(1)

    monkeypatch.setattr(RealBalls, "equal", wide)
    monkeypatch.setattr(ScheduleRun, "_label_by_residues", first_wide)
    oracle = RealVectorOracle(truth, 200, eps="1e-40")
    rec = learn_approx(oracle, 3, heads=2, seed=1)
    ambiguous = [r for r in rec.redraw_reasons if r.reason is RedrawReason.AMBIGUOUS_PAIRING]
    assert len(ambiguous) == 1 and "more than one head's" in str(ambiguous[0])
    assert rec.queries == oracle.queries > rec.planned
    assert vector_parameter_error(rec, truth).max_abs < mpmath.mpf("1e-25")


def test_the_values_are_the_least_squares_fit_of_every_configurations_residues():
    truth = MultiHeadAttention.random(3, 2, seed=0)
    oracle = NoisyOracle(truth, eps="1e-10", seed=0)
    rec = learn_over_balls(oracle, 3, heads=2, residue_labels=True)
    assert rec.chained == 3 < len(rec.configurations)
    rows = np.array([value_row(c.x, c.z) for c in rec.configurations], dtype=float)
    for h, head in enumerate(rec.heads):
        residues = np.array([float(to_mpf(c.term_of(h)[1])) for c in rec.configurations])
        every = np.linalg.lstsq(rows, residues, rcond=None)[0]
        first = np.linalg.solve(rows[:3], residues[:3])
        v = np.array([float(x) for x in head.v])
        assert np.abs(v - every).max() < 1e-13 < np.abs(v - first).max()


def test_a_least_squares_fit_shows_the_answers_error_in_units_of_eps():
    truth = MultiHeadAttention.random(3, 2, seed=0)
    points = geometric_counts(2)
    x, z = (1, 0, -1), (0, 1, 1)
    for eps, lo, hi in [("1e-10", 0.2, 1.0), ("1e-6", 2e-5, 1e-4)]:  # answers within 1e-10, radius eps
        oracle = NoisyOracle(truth, eps="1e-10", seed=3)
        values = [to_arb(oracle([z] * k + [x])) + eps_ball(eps) for k in points]
        fit = certify_copy_function(points, values, 2, rigorous=False)
        assert fit.noise is not None and lo <= float(fit.noise) <= hi
    exact = [arb(truth.evaluate([z] * k + [x])) + eps_ball("1e-10") for k in range(5)]
    assert certify_copy_function(list(range(5)), exact, 2, rigorous=False).noise is None  # no spare equation


def test_the_labelling_balls_are_the_fields_until_a_fit_shows_the_error():
    field = RealBalls("1e-6", copy_counts=geometric_counts(2))  # answers within 1e-10: declared loosely
    ball = arb("1 +/- 1e-6")
    assert field.for_labels(ball).rad() == ball.rad()
    oracle = NoisyOracle(MultiHeadAttention.random(3, 2, seed=0), eps="1e-10", seed=3)
    x, z = (1, 0, -1), (0, 1, 1)
    field.copy_terms(list(field.measurement_points(2)),
                     [field.element(oracle([z] * k + [x])) for k in field.measurement_points(2)], 2)
    assert field.observed_noise is not None and 0 < field.observed_noise < 1e-3
    scaled, scale = field.for_labels(ball), 10 * float(field.observed_noise)
    assert scaled.mid() == ball.mid() and abs(float(scaled.rad()) - scale * float(ball.rad())) < 1e-15


def test_predictions_are_checked_on_the_fields_balls_first_then_on_the_observed_errors():
    from exactlearn.learn import STRICT_PREDICTION_DRAWS, _predictable

    field = RealBalls("1e-6")
    wide = [arb("1.0 +/- 0.6"), arb("2.0 +/- 0.6")]  # overlapping under eps
    field.observed_noise = mpmath.mpf("1e-3")  # the fits showed answers off by 1e-3 eps: radii x 1e-2
    assert not _predictable(field, wide, 0) and not _predictable(field, wide, STRICT_PREDICTION_DRAWS - 1)
    assert _predictable(field, wide, STRICT_PREDICTION_DRAWS)
    assert not _predictable(field, [arb("0.001 +/- 0.6"), arb("2.0 +/- 0.6")], STRICT_PREDICTION_DRAWS * 2)
