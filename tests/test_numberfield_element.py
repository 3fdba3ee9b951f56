"""exactlearn.numberfield.element: arithmetic, exact equality, order in the embedding, hashing."""

from __future__ import annotations

import pickle
from fractions import Fraction

import pytest
import sympy
from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from exactlearn import NumberField, NumberFieldError

K = NumberField("a^3 - 2")
Q2 = NumberField("a^2 - 2", root=1.414)
rationals = st.builds(Fraction, st.integers(-99, 99), st.integers(1, 50))


def element(coords):
    return K.from_coordinates([fmpq(q.numerator, q.denominator) for q in coords])


def sympy_value(x):
    t = sympy.Symbol("t")
    terms = [sympy.Rational(int(c.p), int(c.q)) * t**i for i, c in enumerate(x.coordinates())]
    return sympy.Poly(sum(terms), t, domain="QQ")


@settings(max_examples=30, deadline=None)
@given(st.lists(rationals, min_size=3, max_size=3), st.lists(rationals, min_size=3, max_size=3))
def test_products_and_inverses_agree_with_sympy(p, q):
    x, y = element(p), element(q)
    t = sympy.Symbol("t")
    f = sympy.Poly(t**3 - 2, t, domain="QQ")
    assert sympy_value(x * y) == (sympy_value(x) * sympy_value(y)).rem(f)
    if y:
        inverse = sympy.Poly(sympy.invert(sympy_value(y).as_expr(), f.as_expr(), t), t, domain="QQ")
        assert sympy_value(1 / y) == inverse
        assert x / y * y == x


def test_rationals_mix_and_hash_like_rationals():
    x = Q2("1 + a")
    assert x + 1 == 1 + x == Q2("2 + a") and 2 - x == Q2("1 - a") and x * fmpq(1, 2) == Q2("1/2 + a/2")
    assert Q2(3) == 3 == Q2("3") and Q2(fmpq(1, 2)) == Fraction(1, 2)
    assert hash(Q2(3)) == hash(3) and hash(Q2("1/2")) == hash(Fraction(1, 2))
    assert len({Q2("a"), Q2("a"), Q2("1 + a") - 1}) == 1
    assert (x**2, x**-1, x**0) == (Q2("3 + 2*a"), Q2("-1 + a"), 1)


def test_order_is_the_real_embedding():
    assert Q2("a") > Q2("7/5") and Q2("a") < 2
    assert Q2("3 - 2*a") > 0 and Q2("2*a - 3") < 0  # 3 - 2 sqrt 2 is about 0.17
    assert sorted([Q2("a"), Q2(1), Q2("-a"), Q2("3/2")]) == [Q2("-a"), 1, Q2("a"), Q2("3/2")]
    minus = NumberField("a^2 - 2", root=-1.414)
    assert minus("a") < 0 and minus("a").sign() == -1  # the other root: another embedding


def test_elements_of_two_fields_do_not_mix():
    L = NumberField("b^2 - 3", root=1.7)
    with pytest.raises(NumberFieldError, match="two different fields"):
        Q2("a") + L("b")
    with pytest.raises(NumberFieldError, match="two different fields"):
        assert Q2("a") < L("b")
    assert Q2("a") != L("b") and Q2(2) == L(2)  # rationals are equal in every field
    with pytest.raises(NumberFieldError, match="not of"):
        Q2(L("b"))


def test_display_reads_back_and_pickles():
    for text in ["3/2 - a/5", "1 + a", "-a", "0", "2*a/7 - 1"]:
        x = Q2(text)
        assert Q2(str(x)) == x and pickle.loads(pickle.dumps(x)) == x
    assert str(K("a^2/3 - 1")) == "-1 + a^2/3" and repr(Q2("a")) == "a"
    assert float(Q2("1 + a")) == pytest.approx(1 + 2**0.5)
    assert Q2("a").approximation(10) == "1.414213562"


def test_division_by_zero_and_non_numbers():
    with pytest.raises(ZeroDivisionError):
        Q2(1) / Q2(0)
    with pytest.raises(ZeroDivisionError):
        Q2(0).inverse()
    with pytest.raises(TypeError):
        Q2("a") + "a"  # type: ignore[operator]
    with pytest.raises(ValueError, match="not rational"):
        Q2("a").rational()
