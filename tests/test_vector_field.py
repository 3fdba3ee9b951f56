"""Vector answers through the field seam (exactlearn.vector.field) and learn() end to end.

Counts are read from the oracle's log; the bound (H + 2) d^2 + H (d - 1) is written as numbers.
"""

from __future__ import annotations

import pytest
from flint import fmpq, fmpq_mat

from exactlearn import (
    InconsistentAnswersError,
    InvalidArgumentError,
    MultiHeadAttention,
    Oracle,
    OracleOutputError,
    learn,
)
from exactlearn.schedule import paper_query_count, vector_query_count
from exactlearn.vector import VectorHead, VectorMultiHeadAttention, VectorRationals

#: (d, H) -> the target (H + 2) d^2 + H (d - 1), and the paper's 4 H d^2 - 2H + 1
BOUNDS = {(2, 1): (13, 15), (2, 2): (18, 29), (3, 2): (40, 69)}


def test_the_field_holds_vectors_and_refuses_other_lengths():
    F = VectorRationals(2)
    assert F.element((1, fmpq(1, 2))) == fmpq_mat(2, 1, [1, fmpq(1, 2)])
    assert F.dot((2, -1), [F.element((1, 0)), F.element((0, 1))]) == F.element((2, -1))
    assert F.sample_excess(2) == 1 and F.sample_excess(3) == 3
    solved = F.solve_values([(1, 0), (0, 1), (1, 1)], [[F.element((1, 2)), F.element((3, 4)),
                                                       F.element((4, 6))]])
    assert solved == [(F.element((1, 2)), F.element((3, 4)))]
    with pytest.raises(OracleOutputError, match="inconsistent length"):
        F.element((1, 2, 3))


@pytest.mark.parametrize(("d", "H"), sorted(BOUNDS))
def test_learned_exactly_within_the_vector_bound_measured_from_the_log(d, H):
    target = VectorMultiHeadAttention.random(d, H, seed=7)
    oracle = Oracle(target)
    rec = learn(oracle, d, heads=H)
    assert rec.vector_model == target.canonical()  # V_h and exp(W_h) exactly
    bound, paper = BOUNDS[(d, H)]
    assert rec.redraws > 0 or oracle.queries <= bound
    assert oracle.queries == rec.queries and paper == paper_query_count(d, H)
    if rec.redraws == 0:
        assert oracle.queries == bound == vector_query_count(d, H, d)
        assert oracle.max_length == H + 2 and rec.counts_as_planned


def test_lean_bound_and_undeclared_answers():
    target = VectorMultiHeadAttention.random(3, 2, seed=2)
    oracle = Oracle(target)
    assert learn(oracle, 3, heads=2, schedule="lean").vector_model == target.canonical()
    assert oracle.queries == 28  # d (H + 2) + (d^2 - 1) H
    bounded = learn(Oracle(target), 3, heads_bound=3)
    assert bounded.num_heads == 2 and bounded.vector_model == target.canonical()
    plain = Oracle(target)
    rec = learn(lambda X: plain(X), 3, heads=2)  # no 'outputs': found at the first answer
    assert rec.vector_model == target.canonical() and plain.queries == 41 and "first query" in rec.notes[0]


def test_dependent_residues_ask_more_copy_counts_and_count_them():
    scalar = MultiHeadAttention.random(2, 2, seed=3)  # V_h = [v_h; 0]: residue vectors on one line
    target = VectorMultiHeadAttention([VectorHead(h.exp_W, [list(h.v), [0, 0]]) for h in scalar.heads])
    oracle = Oracle(target)
    rec = learn(oracle, 2, heads=2)
    assert rec.vector_model == target.canonical() and oracle.queries == rec.queries > 18
    assert oracle.max_length == 5 and any("did not determine" in n for n in rec.notes)


def test_heads_sharing_v_are_matched_by_queries():
    base = VectorMultiHeadAttention.random(2, 2, seed=5)
    h0 = base.heads[0]
    target = VectorMultiHeadAttention([h0, VectorHead(base.heads[1].exp_W, h0.V)])
    rec = learn(Oracle(target), 2, heads=2, verify=3)
    assert rec.vector_model == target.canonical() and rec.lean_fallback and rec.verification_queries == 3


def test_a_wrong_answer_or_a_non_attention_is_refused():
    target = VectorMultiHeadAttention.random(2, 2, seed=1)
    oracle = Oracle(target)

    def one_wrong(X):  # a realistic fault: one coordinate of one later answer is off
        out = oracle(X)
        return (out[0] + fmpq(1, 1000), out[1]) if oracle.queries == 16 else out

    with pytest.raises(InconsistentAnswersError):
        learn(one_wrong, 2, heads=2)
    with pytest.raises(InconsistentAnswersError):
        learn(lambda X: (fmpq(len(X)), fmpq(0)), 2, heads=1)
    lengths = iter(range(100))
    with pytest.raises(OracleOutputError, match="inconsistent length"):
        learn(lambda X: (1, 2) if next(lengths) < 3 else (1, 2, 3), 2, heads=1)
    with pytest.raises(InvalidArgumentError, match="without biases"):
        learn(Oracle(target), 2, heads=2, affine=True)
