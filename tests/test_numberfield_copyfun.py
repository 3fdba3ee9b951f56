"""exactlearn.numberfield.copyfun: copy functions over K, their poles in K and residues."""

from __future__ import annotations

import pytest

from exactlearn import NumberField, ReconstructionError
from exactlearn.numberfield import copyfun
from exactlearn.numberfield.copyfun import copy_terms, reconstruct

K = NumberField("a^2 - 2", root=1.414)
HEADS = [(K("1 + a"), K("a")), (K("3/2"), K("-1/3 + a")), (K("2 - a"), K(5))]
AT_INFINITY = K("7/3")


def R(k, heads=HEADS):
    return AT_INFINITY + sum((c / (1 + k * rho) for rho, c in heads), K(0))


def expected(heads=HEADS):
    return tuple(sorted(heads, key=lambda t: t[0]))


def test_terms_from_2n_plus_1_samples():
    terms = copy_terms(K, list(range(7)), [R(k) for k in range(7)], 3)
    assert terms.terms == expected() and terms.at_infinity == AT_INFINITY and terms.at_zero == R(0)


def test_known_values_replace_two_samples():
    terms = copy_terms(K, [1, 2, 3, 4, 5], [R(k) for k in range(1, 6)], 3, at_zero=R(0),
                       at_infinity=AT_INFINITY)
    assert terms.terms == expected()


def test_a_lower_true_type_is_found_through_the_kernel(monkeypatch):
    calls = []
    original = copyfun._from_kernel
    monkeypatch.setattr(copyfun, "_from_kernel", lambda *a: calls.append(1) or original(*a))
    # a bound of 4 heads for 3: the square systems of types (4, 4) is singular, (3, 3) on 7 samples fits
    assert copy_terms(K, list(range(9)), [R(k) for k in range(9)], 4).terms == expected()
    # a pole at k = 0 (no q(0) = 1 normalisation) goes to the kernel
    p, q = reconstruct(K, [1, 2, 3], [K(1) / k + K("a") for k in (1, 2, 3)], 1, 1)
    assert calls and q(0) == 0 and p(1) == (1 + K("a")) * q(1)


def test_copy_functions_that_are_not_attention_are_refused():
    with pytest.raises(ReconstructionError, match="not in the field"):  # three heads read as two
        copy_terms(K, list(range(5)), [R(k) for k in range(5)], 2)
    negative = [(K("-1 - a"), K(1))]  # rho < 0 in the embedding: a pole at k > 0
    with pytest.raises(ReconstructionError, match="not negative"):
        copy_terms(K, [0, 1, 2], [R(k, negative) for k in range(3)], 1)
    with pytest.raises(ReconstructionError, match="no rational function"):
        copy_terms(K, [0, 1, 2], [K(1), K(2), K("a")], 1, at_infinity=K(5))
    with pytest.raises(ReconstructionError, match="pole at infinity"):
        copy_terms(K, [0, 1, 2], [K(0), K(1), K(2)], 1)  # R(k) = k


def test_samples_are_checked_exactly():
    values = [R(k) for k in range(7)]
    values[6] = values[6] + K("a") / 10**30  # one wrong answer
    with pytest.raises(ReconstructionError):
        copy_terms(K, list(range(7)), values, 3)
