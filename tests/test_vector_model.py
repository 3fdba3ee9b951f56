"""Multi-head attention with vector outputs (exactlearn.vector.model)."""

from __future__ import annotations

import pytest
from flint import fmpq

from exactlearn import InvalidModelError, MultiHeadAttention
from exactlearn.vector import VectorHead, VectorMultiHeadAttention


def test_evaluate_is_the_softmax_average_of_value_matrices():
    m = VectorMultiHeadAttention([VectorHead([[2, 1], [1, 3]], [[1, -1], [0, 2], [1, 1]])])
    # scores exp(x_i^T W x_N) with x_N = (0, 1): 1 for (1, 0), 3 for (0, 1)
    assert m([(1, 0), (0, 1)]) == (fmpq(-1, 2), fmpq(3, 2), fmpq(1))


def test_one_output_row_is_the_scalar_model():
    scalar = MultiHeadAttention.random(2, 2, seed=4)
    vector = VectorMultiHeadAttention([VectorHead(h.exp_W, [list(h.v)]) for h in scalar.heads])
    X = [(1, -1), (2, 0), (0, 1)]
    assert vector(X) == (scalar(X),)


def test_canonical_form_merges_equal_weights_and_drops_zero_values():
    E = [[2, 1], [1, 3]]
    m = VectorMultiHeadAttention([VectorHead(E, [[1, 0]]), VectorHead(E, [[0, 1]]),
                                  VectorHead([[1, 1], [1, 1]], [[0, 0]])])
    assert m.canonical() == VectorMultiHeadAttention([VectorHead(E, [[1, 1]])])
    assert m.equivalent(m.canonical()) and m.canonical().num_heads == 1


def test_json_round_trip_and_refusals():
    m = VectorMultiHeadAttention.random(2, 2, seed=1, outputs=3)
    assert VectorMultiHeadAttention.from_json(m.to_json()) == m and m.outputs == 3
    with pytest.raises(InvalidModelError, match="row 0"):
        VectorHead([[1]], [[1, 2]])
    with pytest.raises(InvalidModelError, match="every head"):
        VectorMultiHeadAttention([VectorHead([[1]], [[1]]), VectorHead([[2]], [[1], [2]])])
    with pytest.raises(InvalidModelError, match="unknown vector model format"):
        VectorMultiHeadAttention.from_dict({"format": "exactlearn.model/1"})
