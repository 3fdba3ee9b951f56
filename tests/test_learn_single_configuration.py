"""d = 1 has a single measurement configuration and no head matching.

Regression test: the learner used to redraw whenever two heads had equal
residues, a condition that only matters for matching heads *across*
configurations. With d = 1 and two heads sharing ``v`` every residue pair is
equal, so the learner redrew until RedrawBudgetExceeded although the one
configuration determines both heads.
"""

from exactlearn import MultiHeadAttention, Oracle, learn


def test_d1_heads_with_equal_values_are_recovered():
    truth = MultiHeadAttention.from_lists([[[2]], [[3]]], [[1], [1]])
    for kwargs in ({"heads": 2}, {"heads_bound": 3}):
        oracle = Oracle(truth)
        rec = learn(oracle, 1, **kwargs)
        assert rec.model == truth.canonical()
        assert rec.redraws == 0
        assert oracle.queries == rec.formula
