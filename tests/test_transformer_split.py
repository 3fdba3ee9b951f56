"""exactlearn.transformer.split: per-head parts of every line along copy-ratio families."""

from __future__ import annotations

import random

import pytest
from flint import fmpq

from exactlearn.transformer import Condition, Transformer, TransformerConditionError
from exactlearn.transformer.canonical import normalise_line
from exactlearn.transformer.slice import MergedLine
from exactlearn.transformer.split import learn_split


def parts(model):
    """Per line: (J normalised, kappa) and the per-head parts scaled so that they add up to J."""
    form = model.canonical()
    merged, split = [], []
    for w, kappa in form.lines:
        J = [sum((v[i] for v in w), fmpq(0)) for i in range(model.d)]
        nJ, c = normalise_line(J)
        merged.append(MergedLine(nJ, kappa * abs(c)))
        split.append(tuple(tuple(x / c for x in v) for v in w))
    order = sorted(range(len(merged)), key=lambda i: merged[i])
    return form, [merged[i] for i in order], [split[i] for i in order]


@pytest.mark.parametrize("d,H,m,seed", [(2, 2, 3, 0), (3, 2, 4, 1), (3, 3, 5, 2)])
def test_split_recovers_every_per_head_part(d, H, m, seed):
    model = Transformer.random(d, H, m, seed=seed)
    form, merged, truth = parts(model)
    calls = []

    def ask(tokens):
        calls.append(len(tokens))
        return model(tokens)

    got, stats = learn_split(ask, form.heads, form.linear, merged, max_length=10_000, rng=random.Random(0))
    assert got == truth
    assert stats.tokens >= d and max(calls) <= 10_000 and len(calls) > 0


def test_wrong_lines_are_refused():
    model = Transformer.random(2, 2, 3, seed=0)
    form, merged, _ = parts(model)
    wrong = [MergedLine(J, k * 2) for J, k in merged]  # every kappa doubled: no region's sum matches
    with pytest.raises(TransformerConditionError) as info:
        learn_split(model, form.heads, form.linear, wrong, max_length=2000, rng=random.Random(0))
    assert info.value.condition is Condition.PER_HEAD_SPLIT


def test_many_lines_are_refused_before_any_query():
    # 17 lines would name regions by 2^17 sums per token: refused before any query
    model = Transformer.random(3, 2, 20, seed=0)
    form, merged, _ = parts(model)
    assert len(merged) > 12
    calls = []
    with pytest.raises(TransformerConditionError) as info:
        learn_split(lambda X: calls.append(X) or model(X), form.heads, form.linear, merged, max_length=1000,
                    rng=random.Random(0))
    assert info.value.condition is Condition.PER_HEAD_SPLIT
    assert "at most 12 lines" in str(info.value) and not calls
