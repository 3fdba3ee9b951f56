"""exactlearn.approx.guide: configurations chosen before querying by a guide's predicted conditioning."""

from __future__ import annotations

import dataclasses
import random

import mpmath
import numpy as np
import pytest

from exactlearn.approx import InexactModelWarning, NoisyOracle, learn_approx, parameter_error, sensitivity
from exactlearn.approx.core.learner import RunSetup
from exactlearn.approx.guide.choice import _moved
from exactlearn.approx.guide.chooser import guided_chain, predicted_condition
from exactlearn.counter import QueryCounter
from exactlearn.demos.evidence import gaussian_model
from exactlearn.schedule import TokenSampler
from exactlearn.settings import DEFAULT_SETTINGS


def tuned(**changes):
    """The guide settings with ``changes``."""
    return dataclasses.replace(DEFAULT_SETTINGS.guide, **changes)


def test_predicted_condition_flags_a_vanishing_head():
    guide = [(np.zeros((2, 2)), np.array([0.0, 1.0]))]
    assert predicted_condition(guide, 1, (1, 0), (1, 1)) < 100
    assert predicted_condition(guide, 1, (1, 0), (2, 0)) == float("inf")  # c = -v^T a = 0


def test_the_chain_keeps_the_best_predicted_candidate():
    guide = [(np.array([[0.3, -0.2], [0.1, 0.4]]), np.array([1.0, -0.5])),
             (np.array([[-0.4, 0.2], [0.3, -0.1]]), np.array([0.2, 0.9]))]
    chain = guided_chain(2, 4, TokenSampler(2, 2, random.Random(0)), guide, 1.0)
    chain.draw()
    plain = guided_chain(2, 4, TokenSampler(2, 2, random.Random(0)), guide, 1.0, settings=tuned(candidates=1))
    plain.draw()
    worst = max(predicted_condition(guide, 1.0, c.x, c.z) for c in chain.configs)
    assert worst < max(predicted_condition(guide, 1.0, c.x, c.z) for c in plain.configs)


def test_a_guide_chooses_configurations_and_lowers_C():
    model = gaussian_model(1)
    with pytest.warns(InexactModelWarning, match="estimated to be off"):  # the random draw's conditioning
        plain = learn_approx(NoisyOracle(model, "1e-15", seed=1), 3, heads=2, guide=None)
    guided = learn_approx(NoisyOracle(model, "1e-15", seed=1), 3, heads=2, guide=plain)
    C_plain = sensitivity(model, recovery=plain).C_upper
    C_guided = sensitivity(model, recovery=guided).C_upper
    assert guided.measurements != plain.measurements and guided.queries == guided.formula
    assert C_guided < C_plain / 1000
    assert parameter_error(guided, model).max_abs <= C_guided * mpmath.mpf("1e-15") * 2


@pytest.mark.slow  # about 10 s of CPU
def test_a_wrong_guide_costs_conditioning_not_correctness():
    model, wrong = gaussian_model(2), gaussian_model(5)
    rec = learn_approx(NoisyOracle(model, "1e-20", seed=1), 3, heads=2, guide=wrong, max_redraws=100)
    err = parameter_error(rec, model)
    for i, (dW, dv) in enumerate(err.deviations):
        h = rec.heads[err.permutation.index(i)]
        assert all(abs(dW[a][b]) <= h.W_radius[a][b] for a in range(3) for b in range(3))
        assert all(abs(dv[a]) <= h.v_radius[a] for a in range(3))


def test_the_plan_kept_comes_with_its_own_weight_design():
    from exactlearn.schedule import integer_matrix, weight_row
    guide = [(np.array([[0.3, -0.2], [0.1, 0.4]]), np.array([1.0, -0.5])),
             (np.array([[-0.4, 0.2], [0.3, 0.1]]), np.array([0.2, 0.7]))]
    # one candidate per vector: the plans differ, and the best is rarely the last drawn
    chain = guided_chain(2, 4, TokenSampler(2, 2, random.Random(3)), guide, 1.0,
                         settings=tuned(candidates=1, plans=8))
    chain.draw()
    assert chain.weight_design == integer_matrix([weight_row(c.x, c.z) for c in chain.configs])


def test_a_redraw_is_chosen_by_the_guide_too():
    """After the answers showed a problem, the configuration's new vector is again the best of the
    candidates by the guide's prediction (for it and the links next to it), not a random one."""
    from exactlearn.schedule import sub_tokens

    guide = [(np.array([[0.3, -0.2], [0.1, 0.4]]), np.array([1.0, -0.5])),
             (np.array([[-0.4, 0.2], [0.3, -0.1]]), np.array([0.2, 0.9]))]

    def redrawn_costs(candidates: int) -> list[float]:
        chain = guided_chain(2, 4, TokenSampler(2, 2, random.Random(5)), guide, 1.0,
                             settings=tuned(candidates=candidates, plans=1))
        chain.draw()
        costs = []
        for seed in range(4):
            chain.sampler.rng.seed(seed)
            for j in (1, 2, 3):
                chain.redraw(j)
                x, z = chain.tokens_of(j)
                costs.append(chain.choose._cost(chain, j, x, sub_tokens(z, x)))
        return costs

    guided, plain = redrawn_costs(48), redrawn_costs(1)
    assert max(guided) < float("inf") and sorted(guided)[len(guided) // 2] < sorted(plain)[len(plain) // 2]


def _sketch_run(weights: float) -> tuple[bool, float, list[str]]:
    """A sketch's heads (d = 3, H = 3, ``W_h`` of this size) at the sketch's scale 2: whether the run moves,
    to which scale, and its notes."""
    rng = np.random.default_rng(0)
    guide = [(weights * rng.standard_normal((3, 3)), rng.standard_normal(3)) for _ in range(3)]
    scale, notes = [2.0], []

    def rescale(shrink: bool) -> bool:
        scale[0] = scale[0] / 2 if shrink else scale[0] * 2
        return True

    setup = RunSetup(QueryCounter(lambda X: 0), 3, 3, 0, 2, 2.0, notes, (), lambda shrink: 1.0)
    return _moved(guide, setup, scale, rescale, DEFAULT_SETTINGS.guide), scale[0], notes


def test_a_run_moves_to_the_scale_its_sketch_predicts_far_better():
    # scores three times those of default initialisation: at the sketch's scale 2 no plan is predicted to
    # resolve (an infinite constant), at 1/2 one is (6e7): the run goes there, and says so
    moved, scale, notes = _sketch_run(3.0)
    assert moved and scale == 0.5 and notes[-1].startswith("the sketch's heads predict scale 1/2 best")
    # small scores: 2 is predicted best; the run stays with the sketch's scale and reuses its answers
    assert _sketch_run(0.3)[:2] == (False, 2.0)

