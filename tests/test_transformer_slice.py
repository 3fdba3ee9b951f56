"""exactlearn.transformer.slice: the merged lines on the uniform slice, exactly."""

from __future__ import annotations

import random

import pytest
from flint import fmpq

from exactlearn.transformer import Condition, Transformer, TransformerConditionError
from exactlearn.transformer.canonical import normalise_line
from exactlearn.transformer.slice import learn_slice


def merged_truth(model):
    """(J_L normalised, kappa) from the canonical form: J_L = sum_h w_Lh."""
    form = model.canonical()
    out = {}
    for w, kappa in form.lines:
        J = [sum((v[i] for v in w), fmpq(0)) for i in range(model.d)]
        nJ, c = normalise_line(J)
        out[nJ] = out.get(nJ, fmpq(0)) + kappa * abs(c)
    lbar = tuple(sum((v[i] for v in form.linear), fmpq(0)) for i in range(model.d))
    return sorted((J, k) for J, k in out.items() if k != 0), lbar


@pytest.mark.parametrize("d,H,m,seed", [(1, 1, 3, 0), (2, 1, 4, 1), (3, 2, 5, 2), (4, 3, 6, 3)])
def test_slice_finds_the_merged_lines(d, H, m, seed):
    model = Transformer.random(d, H, m, seed=seed)
    lines, lbar = merged_truth(model)
    calls = []

    def ask(tokens):
        calls.append(tokens)
        return model(tokens)

    assert learn_slice(ask, lbar, random.Random(seed)) == lines
    assert all(len(t) == 2 and not any(t[-1]) for t in calls)  # every query is [P, 0]


def test_a_wrong_linear_part_is_refused_not_guessed():
    model = Transformer.random(2, 1, 3, seed=5)
    _, lbar = merged_truth(model)
    wrong = (lbar[0] + 1, lbar[1])  # G is then not even: no consistent set of lines
    with pytest.raises(TransformerConditionError) as info:
        learn_slice(model, wrong, random.Random(0))
    assert info.value.condition is Condition.LINES_ON_SLICE
