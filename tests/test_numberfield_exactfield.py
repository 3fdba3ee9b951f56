"""exactlearn.numberfield.exactfield: the Field seam over K, and K taken from the answers."""

from __future__ import annotations

import pytest
from flint import fmpq, fmpq_mat

from exactlearn import NumberField, OracleOutputError
from exactlearn.exactfield import ExactRationals
from exactlearn.numberfield.exactfield import ExactNumberField, ExpMatrix, FieldFromAnswers
from exactlearn.states import LinkKind, Why

K = NumberField("a^2 - 2", root=1.414)


def test_answers_are_elements_of_k_or_rationals():
    F = ExactNumberField(K)
    assert F.element(K("a")) == K("a") and F.element(3) == K(3) and F.element(fmpq(1, 2)) == K("1/2")
    with pytest.raises(OracleOutputError, match="an element of Q\\(b\\).*answers are in Q\\(a\\)"):
        F.element(NumberField("b^2 - 3", root=1.7)("b"))
    with pytest.raises(OracleOutputError, match="float.*element of the field is expected"):
        F.element(1.5)
    with pytest.raises(OracleOutputError, match="element of the field is expected"):
        F.element("1 + a")


def test_the_shared_exact_algebra_runs_over_k():
    F = ExactNumberField(K)
    v = [K("a"), K("1 - a")]
    rows = [(1, 0), (0, 1), (1, 1)]
    residues = [[F.dot(r, v) for r in rows]]
    assert F.solve_values(rows, residues) == [tuple(v)]
    assert F.equal(K(2), K("a") ** 2, Why.DISTINCT) and F.zero() == 0
    assert F.link_terms(LinkKind.X, [], [], [1], [K(1)], 1, at_zero=K(1), at_infinity=K(0)) is None


def test_weights_are_exp_matrices():
    F = ExactNumberField(K)
    (W,) = F.solve_weights(fmpq_mat([[2]]), [[K("3 + 2*a")]])  # (1 + a)^2
    assert isinstance(W, ExpMatrix) and W.exp() == ((K("1 + a"),),) and W.is_rational and W.d == 1
    assert F.rho(W, (2,), (-1,)) == K("1 + a") ** -2
    assert W.to_dict()["exp_W"] == [["1 + a"]] and "1 + a" in str(W)


def test_the_field_is_taken_from_the_first_element_of_a_number_field():
    F = FieldFromAnswers()
    assert isinstance(F.active, ExactRationals) and F.element(3) == 3 and type(F.element(3)) is fmpq
    assert F.element(K("a")) == K("a") and F.number_field == K and isinstance(F.active, ExactNumberField)
    assert F.element(2) == K(2) and F.name == ExactNumberField.name
    with pytest.raises(OracleOutputError, match="one field"):
        F.element(NumberField("b^3 - 2")("b"))
