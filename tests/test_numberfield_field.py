"""exactlearn.numberfield.field: NumberField, its checks, elements from text, identity and JSON."""

from __future__ import annotations

import json
import pickle

import pytest
from flint import fmpq, fmpq_poly

from exactlearn import Limits, NumberField, NumberFieldError


def test_the_issue_example_field():
    K = NumberField("a^2 - 2", root=1.414)
    assert str(K) == "Q(a) with a^2 - 2 = 0, a ~ 1.414214"
    assert K("3/2 - a/5") * 5 == K("15/2 - a") and K.gen**2 == 2
    assert str(K.root) == "1.41421356237310" and K.degree == 2 and K.name == "a"


def test_coefficients_and_names():
    assert NumberField([-2, 0, 0, 1]) == NumberField("a^3 - 2")
    assert NumberField(fmpq_poly([-2, 0, 0, 1]), name="t").polynomial_text() == "t^3 - 2"
    assert NumberField("2*x^2 - 4", root=1.4).polynomial_text() == "x^2 - 2"  # made monic
    with pytest.raises(NumberFieldError, match="written in 'a' but name='t'"):
        NumberField("a^2 - 2", root=1.4, name="t")


@pytest.mark.parametrize("poly, why", [
    ("a^2 - 4", r"reducible over Q: \(a - 2\) \* \(a \+ 2\)"),
    ("(a^2 - 2)^2", r"reducible over Q: \(a\^2 - 2\)\^2"),
    ("a^4 - 1", "reducible"),
    ("a^2 + 1", "no real root"),
    ("3", "constant"),
    ("a^9 - 2", "degree 9, above the limit 8"),
    (f"a^2 - {2**300 + 1}", "bits, above the limit 256"),
    ({"not": "a polynomial"}, "polynomial such as"),
])
def test_bad_polynomials_are_named(poly, why):
    with pytest.raises(NumberFieldError, match=why):
        NumberField(poly)


def test_limits_can_be_lifted():
    K = NumberField("a^9 - 2", limits=Limits(field_degree=9))
    assert K.degree == 9 and K("a")**9 == 2


def test_elements_from_many_kinds():
    K = NumberField("a^2 - 2", root=1.414)
    assert K(fmpq(1, 3)) == K("1/3") == K(__import__("fractions").Fraction(1, 3))
    assert K(fmpq_poly([0, 0, 1])) == 2  # reduced modulo the minimal polynomial
    assert K(__import__("sympy").Rational(2, 3)) == K("2/3")
    with pytest.raises(NumberFieldError, match="cannot read float"):
        K(1.5)
    with pytest.raises(NumberFieldError, match="unknown name 'b'"):
        K("1 + b")


def test_identity_json_and_pickle():
    K = NumberField("a^2 - 2", root=1.414)
    assert K == NumberField("a^2 - 2", root=(1, 2)) and hash(K) == hash(NumberField("a^2 - 2", root=1.5))
    assert K != NumberField("a^2 - 2", root=-1.414) and K != NumberField("b^2 - 2", root=1.414)
    data = json.loads(json.dumps(K.to_dict()))
    assert data == {"format": "exactlearn.numberfield/1", "polynomial": "a^2 - 2",
                    "root_interval": ["1", "2"]}
    assert NumberField.from_dict(data) == K and pickle.loads(pickle.dumps(K)) == K
    assert eval(repr(K), {"NumberField": NumberField}) == K
    for bad in [{"polynomial": "a^2 - 2"}, {"polynomial": "a^2 - 2", "root_interval": [1, 2]},
                {"format": "x", "polynomial": "a^2 - 2", "root_interval": ["1", "2"]}]:
        with pytest.raises(NumberFieldError):
            NumberField.from_dict(bad)


def test_degree_one_is_the_rationals():
    K = NumberField("a - 3")
    assert K("a + 1") == 4 and K("a").is_rational() and str(K("a/2")) == "3/2"
