"""Rational-function layer: exact reconstruction, reduction, poles, residues (property tests)."""

from __future__ import annotations

import pytest
from flint import fmpq, fmpq_poly
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from exactlearn import ReconstructionError
from exactlearn.ratfun import (
    RationalFunction,
    copy_terms,
    from_partial_fractions,
    interpolate,
    reconstruct,
    reconstruct_nn,
)

rationals = st.builds(fmpq, st.integers(-50, 50), st.integers(1, 20))
nonzero_rationals = rationals.filter(lambda q: q != 0)
positive_rationals = st.builds(fmpq, st.integers(1, 60), st.integers(1, 20))


@st.composite
def rational_functions(draw, max_degree=6):
    """A random p/q with deg p = a, deg q = b (both <= max_degree), q(k) != 0 for k >= 0."""
    a = draw(st.integers(0, max_degree))
    b = draw(st.integers(0, max_degree))
    p = fmpq_poly(draw(st.lists(rationals, min_size=a + 1, max_size=a + 1)))
    q = fmpq_poly(draw(st.lists(rationals, min_size=b + 1, max_size=b + 1)))
    assume(not q.is_zero())
    return RationalFunction(p, q), a, b


@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(0, 6))
def test_reconstruct_round_trip_every_type_up_to_6(data, n):
    rf, a, b = data.draw(rational_functions(max_degree=n))
    points = list(range(2 * n + 1))
    assume(all(rf.denominator(k) != 0 for k in points))
    got = reconstruct(points, [rf(k) for k in points], n, n)
    assert got == rf  # reduced and normalised identically: exact equality of p and q
    assert got.type[0] <= n and got.type[1] <= n


@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(1, 6))
def test_reconstruct_with_known_zero_and_infinity(data, n):
    """2n-1 samples at k = 1..2n-1 plus R(0) and R(oo) determine a type-(n, n) function,
    also when its true type is lower (docs/algorithm.md section 4, H0 variant)."""
    true_heads = data.draw(st.integers(0, n))
    rhos = data.draw(st.lists(positive_rationals, min_size=true_heads, max_size=true_heads, unique=True))
    cs = data.draw(st.lists(nonzero_rationals, min_size=true_heads, max_size=true_heads))
    u = data.draw(rationals)
    rf = from_partial_fractions(u, [(-1 / rho, c / rho) for rho, c in zip(rhos, cs)])
    points = list(range(1, 2 * n))
    got = reconstruct_nn(points, [rf(k) for k in points], n, at_zero=rf(0), at_infinity=u)
    assert got == rf
    terms = copy_terms(got)
    assert terms.at_infinity == u and terms.at_zero == u + sum(cs, fmpq(0))
    assert sorted(terms.terms) == sorted(zip(rhos, cs))


@settings(max_examples=100, deadline=None)
@given(data=st.data(), n=st.integers(1, 6))
def test_copy_terms_recover_poles_and_residues(data, n):
    """R(k) = u + sum_h c_h / (1 + k rho_h): poles -1/rho_h, c_h = rho_h * residue."""
    heads = data.draw(st.integers(1, n))
    rhos = data.draw(st.lists(positive_rationals, min_size=heads, max_size=heads, unique=True))
    cs = data.draw(st.lists(nonzero_rationals, min_size=heads, max_size=heads))
    u = data.draw(rationals)
    num, den = fmpq_poly([u]), fmpq_poly([1])
    for rho, c in zip(rhos, cs):
        lin = fmpq_poly([1, rho])
        num, den = num * lin + c * den, den * lin
    samples = list(range(2 * n + 1))
    rf = reconstruct(samples, [num(k) / den(k) for k in samples], n, n)
    assert rf.type == (heads, heads) or (rf.type[0] < heads and rf.type[1] == heads)
    terms = copy_terms(rf)
    assert terms.terms == tuple(sorted(zip(rhos, cs)))
    for pole, mult in rf.poles():
        assert mult == 1 and pole < 0


@settings(max_examples=60, deadline=None)
@given(st.lists(rationals, min_size=1, max_size=9))
def test_interpolate_hits_every_point(values):
    poly = interpolate(range(len(values)), values)
    assert poly.degree() < len(values)
    assert [poly(k) for k in range(len(values))] == values


def test_merged_heads_and_cancelling_values_lower_the_type():
    # two heads with equal rho merge; a head with c = 0 vanishes
    rho = fmpq(3, 2)
    values = [fmpq(1) + fmpq(2) / (1 + k * rho) + fmpq(5) / (1 + k * rho) + fmpq(0) / (1 + k * 7)
              for k in range(7)]
    rf = reconstruct(range(7), values, 3, 3)
    assert rf.type == (1, 1)
    assert copy_terms(rf).terms == ((rho, fmpq(7)),)


def test_no_solution_is_an_error_not_a_guess():
    # 1/(1+k^2)-like data: values of a type (2, 2) function cannot be fitted by type (1, 1)
    values = [fmpq(1, 1 + k * k) for k in range(3)]
    rf = reconstruct(range(3), values, 1, 1)  # three points always fit a (1, 1) function...
    assert [rf(k) for k in range(3)] == values
    # c / (1 + b k) with value 0 at k = 0 forces c = 0, so it cannot reach 1 at k = 1
    with pytest.raises(ReconstructionError, match="no rational function of type"):
        reconstruct(range(2), [fmpq(0), fmpq(1)], 0, 1)


def test_copy_terms_rejects_non_attention_functions():
    # irreducible quadratic denominator: poles not rational
    with pytest.raises(ReconstructionError, match="does not split"):
        copy_terms(RationalFunction(fmpq_poly([1]), fmpq_poly([1, 0, 1])))
    # positive pole: rho would be negative
    with pytest.raises(ReconstructionError, match="not negative"):
        copy_terms(RationalFunction(fmpq_poly([1]), fmpq_poly([-1, 1])))
    # double pole
    with pytest.raises(ReconstructionError, match="multiplicity 2"):
        copy_terms(RationalFunction(fmpq_poly([1]), fmpq_poly([1, 1]) ** 2))
    # pole at infinity
    with pytest.raises(ReconstructionError, match="infinity"):
        copy_terms(RationalFunction(fmpq_poly([0, 0, 1]), fmpq_poly([1, 1])))


def test_known_infinity_that_contradicts_the_samples_is_refused():
    # R(0) = R(1) = 2 forces R - 1 to be the constant 1 among type (0, 1): then R(oo) = 2, not 1
    with pytest.raises(ReconstructionError, match="value 1 at infinity"):
        reconstruct_nn([1], [fmpq(2)], 1, at_zero=fmpq(2), at_infinity=fmpq(1))


def test_argument_errors():
    with pytest.raises(ValueError, match="exactly 5 samples"):
        reconstruct(range(4), [fmpq(1)] * 4, 2, 2)
    with pytest.raises(ValueError, match="distinct"):
        interpolate([1, 1], [fmpq(1), fmpq(2)])
    with pytest.raises(ZeroDivisionError):
        RationalFunction(fmpq_poly([1]), fmpq_poly([]))


def test_linear_factors_are_sorted_by_their_roots_exactly():
    """Roots closer than a float can tell, and roots beyond the float range, still come out in exact order."""
    from flint import fmpz

    from exactlearn.ratfun import _by_root

    big = fmpz(10) ** 40
    close = [(big + 1, big, 1), (big, big - 1, 1), (fmpz(3), fmpz(1), 1)]  # roots -1 + 1e-40, -1 + 1e-40..
    exact = sorted(close, key=lambda f: fmpq(-f[1], f[0]))
    assert _by_root(close) == exact and _by_root(close[::-1]) == exact
    huge = [(fmpz(1), fmpz(10) ** 400, 1), (fmpz(1), fmpz(2), 1)]      # -10^400 overflows a float
    assert _by_root(huge) == [huge[0], huge[1]] and _by_root(huge[::-1]) == [huge[0], huge[1]]
    plain = [(fmpz(2), fmpz(1), 1), (fmpz(1), fmpz(3), 1), (fmpz(5), fmpz(7), 1)]
    assert _by_root(plain) == sorted(plain, key=lambda f: fmpq(-f[1], f[0]))
