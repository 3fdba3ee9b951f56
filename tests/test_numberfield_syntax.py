"""exactlearn.numberfield.syntax: the safe reader of polynomials and elements."""

from __future__ import annotations

import pytest
from flint import fmpq, fmpq_poly

from exactlearn import NumberField, NumberFieldError
from exactlearn.numberfield.syntax import MAX_EXPONENT, MAX_TEXT, POLYNOMIALS, parse


@pytest.mark.parametrize("text, coeffs", [
    ("a^3 - 2", [-2, 0, 0, 1]),
    ("3/2 - a/5", [fmpq(3, 2), fmpq(-1, 5)]),
    ("(1 + a)^2", [1, 2, 1]),
    ("-a**2 + 1", [1, 0, -1]),
    ("2*x*x - 3", [-3, 0, 2]),
    ("-2^2", [-4]),
    ("2*a^2/5", [0, 0, fmpq(2, 5)]),
])
def test_polynomials_are_read_with_the_usual_precedence(text, coeffs):
    assert parse(text, POLYNOMIALS)[1] == fmpq_poly(coeffs)


def test_the_generator_name_comes_from_the_text_or_is_checked():
    assert parse("t^2 - 3", POLYNOMIALS)[0] == "t"
    with pytest.raises(NumberFieldError, match="unknown name 'b'"):
        parse("a + b", POLYNOMIALS)
    with pytest.raises(NumberFieldError, match="unknown name 'a'"):
        parse("a + 1", POLYNOMIALS, name="t")


@pytest.mark.parametrize("text, why", [
    ("", "empty"), ("3 +", "ends"), ("2a", "unexpected 'a'"), ("1.5", "cannot read"),
    ("(a + 1", "not closed"), ("a^b", "integer exponent"), ("a^-1", "no negative powers"),
    ("1/a", "divided by a nonzero constant"), ("a)", "unexpected"), ("__import__('os')", "cannot read"),
])
def test_mistakes_are_named(text, why):
    with pytest.raises(NumberFieldError, match=why):
        parse(text, POLYNOMIALS)


def test_sizes_are_capped():
    with pytest.raises(NumberFieldError, match="characters"):
        parse("1" * (MAX_TEXT + 1), POLYNOMIALS)
    with pytest.raises(NumberFieldError, match="exponent"):
        parse(f"a^{MAX_EXPONENT + 1}", POLYNOMIALS)
    with pytest.raises(NumberFieldError, match="expected a text"):
        parse(3, POLYNOMIALS)  # type: ignore[arg-type]


def test_elements_read_divisions_and_negative_powers_in_the_field():
    K = NumberField("a^2 - 2", root=1.414)
    assert K("1/(1 + a)") == K("-1 + a") == K("(1 + a)^-1")
    with pytest.raises(NumberFieldError, match="division by zero"):
        K("1/(a^2 - 2)")
