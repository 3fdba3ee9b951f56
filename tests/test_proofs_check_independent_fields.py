"""The sympy-only evaluator of models over a number field (proofs_check/independent_fields.py)."""

from __future__ import annotations

import random

import pytest
import sympy as sp

from exactlearn import MultiHeadAttention, NumberField
from proofs_check import independent_fields as ind

FIELDS = [("a^2 - 2", ("1", "2")), ("a^3 - 2", ("1", "2")), ("a^4 - 10*a^2 + 1", ("3", "4")),
          ("a^2 - 2", ("-2", "-1"))]


def _coordinates(x) -> tuple:
    return tuple(sp.Rational(int(c.p), int(c.q)) for c in x.coordinates())


@pytest.mark.parametrize("polynomial, interval", FIELDS)
def test_agrees_with_exactlearn_on_random_models(polynomial, interval):
    K = NumberField(polynomial, root=interval)
    rng = random.Random(polynomial)
    for d, H in [(1, 2), (2, 2), (3, 1)]:
        m = MultiHeadAttention.random(d, H, seed=d + H, field=K)
        model = ind.parse_model(m.to_dict())
        for _ in range(3):
            X = [tuple(rng.randint(-2, 2) for _ in range(d)) for _ in range(rng.randint(1, 5))]
            assert ind.evaluate(model, X) == _coordinates(m(X))
        canonical = ind.canonical(model)
        assert canonical == ind.canonical(ind.parse_model(m.canonical().to_dict())) and len(canonical) == H


@pytest.mark.parametrize("polynomial, interval", FIELDS)
def test_signs_agree_with_exactlearn(polynomial, interval):
    K = NumberField(polynomial, root=interval)
    F = ind.SympyField.from_json(K.to_dict())
    rng = random.Random(0)
    for _ in range(20):
        x = K.from_coordinates([rng.randint(-9, 9) for _ in range(K.degree)])
        assert F.sign(F.element(str(x))) == x.sign()
    assert F.sign(F.element("0")) == 0


def test_canonical_form_merges_and_drops():
    field = {"polynomial": "a^2 - 2", "root_interval": ["1", "2"]}
    heads = [{"exp_W": [["1 + a"]], "v": ["a"]}, {"exp_W": [["(a + 2)/a"]], "v": ["1"]},
             {"exp_W": [["2"]], "v": ["a"]}, {"exp_W": [["2"]], "v": ["-a"]}]
    model = ind.parse_model({"field": field, "heads": heads})
    one_plus_a = (sp.Integer(1), sp.Integer(1))
    assert ind.canonical(model) == [((one_plus_a,), (one_plus_a,))]  # v: a + 1; the heads of exp W = 2 cancel


def test_units_and_norms():
    F = ind.SympyField.from_json({"polynomial": "a^3 - 2", "root_interval": ["1", "2"]})
    assert ind.norm(F, F.element("a")) == 2 and ind.norm(F, F.element("a - 1")) == 1
    assert ind.is_unit(F, F.element("a - 1")) and ind.is_unit(F, F.element("a^2 + a + 1"))
    assert not ind.is_unit(F, F.element("a")) and not ind.is_unit(F, F.element("(a - 1)/2"))


@pytest.mark.parametrize("field, heads, message", [
    ({"polynomial": "a^2 - 1", "root_interval": ["0", "2"]}, [], "not irreducible"),
    ({"polynomial": "a^2 - 2", "root_interval": ["-2", "2"]}, [], "does not isolate"),
    ({"polynomial": "a^2 - 2", "root_interval": ["1", "2"]}, [{"exp_W": [["1 - a"]], "v": ["1"]}],
     "not positive"),
    ({"polynomial": "a^2 - 2", "root_interval": ["-2", "-1"]}, [{"exp_W": [["1 + a"]], "v": ["1"]}],
     "not positive"),
    ({"polynomial": "a^2 - 2", "root_interval": ["1", "2"]}, [{"exp_W": [["__import__('os')"]], "v": ["1"]}],
     "not an expression"),
    ({"polynomial": "a^2 - 2", "root_interval": ["1", "2"]}, [{"exp_W": [["1/(a - a)"]], "v": ["1"]}],
     "divides by zero"),
])
def test_bad_models_are_refused(field, heads, message):
    with pytest.raises(ind.FieldEvaluationError, match=message):
        ind.parse_model({"field": field, "heads": heads})


def test_the_same_field_needs_the_same_root():
    plus = ind.SympyField.from_json({"polynomial": "a^2 - 2", "root_interval": ["1", "2"]})
    narrow = ind.SympyField.from_json({"polynomial": "a^2 - 2", "root_interval": ["7/5", "3/2"]})
    minus = ind.SympyField.from_json({"polynomial": "a^2 - 2", "root_interval": ["-2", "-1"]})
    other = ind.SympyField.from_json({"polynomial": "a^2 - 3", "root_interval": ["1", "2"]})
    assert plus.same_as(narrow) and not plus.same_as(minus) and not plus.same_as(other)
