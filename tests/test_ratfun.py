"""Rational-function layer: exact reconstruction, reduction, poles, residues (property tests).

The fast methods are also compared with slower references (the Euclidean reconstruction,
the coefficient kernel, FLINT's Dixon solve, factoring instead of candidate poles,
residues by rational evaluation), on random inputs of the learner's shape and on
hand-picked corner cases; comparisons are ``==`` on flint numbers.
"""

from __future__ import annotations

import random

import pytest
from flint import fmpq, fmpq_mat, fmpq_poly, fmpz
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from exactlearn import ReconstructionError
from exactlearn.ratfun import (
    RationalFunction,
    _reconstruct_by_kernel,
    _reconstruct_by_values,
    _reconstruct_euclid,
    _solve_small,
    _solver_primes,
    _value_system,
    copy_terms,
    from_partial_fractions,
    interpolate,
    poles_among,
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
    from exactlearn.ratfun import _by_root

    big = fmpz(10) ** 40
    close = [(big + 1, big, 1), (big, big - 1, 1), (fmpz(3), fmpz(1), 1)]  # roots -1 + 1e-40, -1 + 1e-40..
    exact = sorted(close, key=lambda f: fmpq(-f[1], f[0]))
    assert _by_root(close) == exact and _by_root(close[::-1]) == exact
    huge = [(fmpz(1), fmpz(10) ** 400, 1), (fmpz(1), fmpz(2), 1)]      # -10^400 overflows a float
    assert _by_root(huge) == [huge[0], huge[1]] and _by_root(huge[::-1]) == [huge[0], huge[1]]
    plain = [(fmpz(2), fmpz(1), 1), (fmpz(1), fmpz(3), 1), (fmpz(5), fmpz(7), 1)]
    assert _by_root(plain) == sorted(plain, key=lambda f: fmpq(-f[1], f[0]))


# -- reconstruction against the Euclidean algorithm and the coefficient kernel ----------

REFERENCE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOLVES = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def partial_fraction_functions(draw, max_type=6):
    """``c + sum r_i / (k - k_i)`` with distinct negative poles: an attention-like function."""
    count = draw(st.integers(0, max_type))
    poles = draw(st.lists(st.builds(lambda p, q: fmpq(-p, q), st.integers(1, 10**6), st.integers(1, 10**6)),
                          min_size=count, max_size=count, unique=True))
    residues = draw(st.lists(st.builds(fmpq, st.integers(-10**6, 10**6).filter(bool), st.integers(1, 10**4)),
                             min_size=count, max_size=count))
    constant = draw(st.builds(fmpq, st.integers(-100, 100), st.integers(1, 100)))
    return from_partial_fractions(constant, list(zip(poles, residues)))


@REFERENCE
@given(partial_fraction_functions(), st.integers(0, 3))
def test_reconstruction_equals_euclid_also_for_lower_types(rf, extra):
    n = max(rf.type) + extra
    n = max(n, 1)
    points = list(range(2 * n + 1))
    values = [rf(k) for k in points]
    assert reconstruct(points, values, n, n) == rf
    assert _reconstruct_euclid(points, values, n, n) == rf
    # the two known values of the matching configurations
    got = reconstruct_nn(points[1:-1], values[1:-1], n, at_zero=values[0], at_infinity=rf.at_infinity())
    assert got == rf


@REFERENCE
@given(partial_fraction_functions(max_type=4), st.integers(0, 2))
def test_value_method_and_kernel_method_agree(rf, extra):
    n = max(max(rf.type) + extra, 1)
    m = n if rf.type[0] == rf.type[1] else n - 1
    m = max(m, rf.type[0])
    points = list(range(3, 3 + m + n + 1))
    values = [rf(k) for k in points]
    by_kernel = _reconstruct_by_kernel([fmpq(k) for k in points], values, m, n, len(points))
    assert by_kernel == rf
    if min(m, n) >= 1:
        by_values = _reconstruct_by_values(points, values, m, n)
        # None means "lower type or pole at a sample: ask the general method"
        assert by_values is None or by_values == rf
        if rf.type == (m, n) or (rf.type[1] == n and rf.type[0] <= m and m == n - 1):
            assert by_values == rf


@REFERENCE
@given(st.lists(st.builds(fmpq, st.integers(-40, 40), st.integers(1, 40)), min_size=5, max_size=5))
def test_random_samples_give_what_euclid_gives(values):
    points = [0, 1, 2, 3, 4]
    try:
        expected = _reconstruct_euclid(points, values, 2, 2)
    except ReconstructionError:
        with pytest.raises(ReconstructionError):
            reconstruct(points, values, 2, 2)
    else:
        assert reconstruct(points, values, 2, 2) == expected


@pytest.mark.parametrize("values", [[0, 0, 1], [1, 1, 2], [0, 1, 0]])
def test_unattainable_samples_raise(values):
    values = [fmpq(v) for v in values]
    with pytest.raises(ReconstructionError):
        _reconstruct_euclid([0, 1, 2], values, 1, 1)
    with pytest.raises(ReconstructionError):
        reconstruct([0, 1, 2], values, 1, 1)
    with pytest.raises(ReconstructionError):
        _reconstruct_by_kernel([fmpq(k) for k in range(3)], values, 1, 1, 3)


def test_rational_points_use_the_general_method():
    rf = from_partial_fractions(fmpq(1, 3), [(fmpq(-2), fmpq(5)), (fmpq(-7, 3), fmpq(-1, 2))])
    points = [fmpq(1, 2), fmpq(3, 4), fmpq(2), fmpq(5, 7), fmpq(9)]
    assert reconstruct(points, [rf(k) for k in points], 2, 2) == rf


def test_copy_terms_match_partial_fractions():
    rho = [fmpq(3, 7), fmpq(11, 2), fmpq(5)]
    c = [fmpq(2), fmpq(-1, 3), fmpq(4, 5)]
    u = fmpq(7, 9)
    rf = from_partial_fractions(u, [(-1 / r, cc / r) for r, cc in zip(rho, c)])
    terms = copy_terms(reconstruct(list(range(7)), [rf(k) for k in range(7)], 3, 3))
    assert terms.terms == tuple(sorted(zip(rho, c)))
    assert terms.at_infinity == u and terms.at_zero == u + sum(c, fmpq(0))


def test_reduced_fraction_is_reduced():
    rf = reconstruct([0, 1, 2, 3, 4], [fmpq(1, k + 1) for k in range(5)], 2, 2)
    assert rf == RationalFunction(fmpq_poly([1]), fmpq_poly([1, 1]))


# -- the cached value reconstruction -----------------------------------------------------


def attention_like(rng: random.Random, n: int):
    poles = set()
    while len(poles) < n:
        poles.add(fmpq(-rng.randint(1, 10**6), rng.randint(1, 10**6)))
    terms = [(p, fmpq(rng.choice([-1, 1]) * rng.randint(1, 10**6), rng.randint(1, 10**4)))
             for p in sorted(poles)]
    return from_partial_fractions(fmpq(rng.randint(-50, 50), rng.randint(1, 50)), terms)


@pytest.mark.parametrize("points", [list(range(9)), [0] + list(range(1, 8)) + [11],
                                    [3, 5, 6, 9, 10, 14, 20, 21, 30]])
def test_cached_value_reconstruction_equals_the_kernel_method(points):
    rng = random.Random(len(points) + points[-1])
    for trial in range(30):
        rf = attention_like(rng, 4)
        m = 4 if trial % 2 else 3
        if m == 3:  # type (3, 4): subtract the value at infinity
            rf = rf - rf.at_infinity()
        pts = points[: m + 4 + 1]
        values = [rf(k) for k in pts]
        by_values = _reconstruct_by_values(pts, values, m, 4)
        assert by_values == rf == _reconstruct_by_kernel([fmpq(k) for k in pts], values, m, 4, len(pts))
    # the point-set part is shared by the calls with the same points and type
    assert _value_system.cache_info().hits > 0


def test_cached_value_reconstruction_still_rejects_a_planted_fault():
    rng = random.Random(5)
    rf = attention_like(rng, 3)
    pts = list(range(7))
    values = [rf(k) for k in pts]
    assert _reconstruct_by_values(pts, values, 3, 3) == rf
    values[4] += fmpq(1, 10**9)  # 7 samples still have a type-(3, 3) interpolant, but not rf
    assert _reconstruct_by_values(pts, values, 3, 3) not in (rf, None)
    # samples no type-(1, 1) function takes: reconstruct (value method, then kernel method) raises
    with pytest.raises(ReconstructionError):
        reconstruct([0, 1, 2], [fmpq(1), fmpq(1), fmpq(2)], 1, 1)


# -- poles from candidates ---------------------------------------------------------------


@SOLVES
@given(st.integers(1, 6), st.integers(0, 10**6))
def test_candidate_poles_give_the_factorisation_result(n, seed):
    rng = random.Random(seed)
    rf = attention_like(rng, n)
    true_poles = [pole for pole, _ in rf.partial_fractions()[1]]
    decoys = [x * y for x in true_poles for y in true_poles][: n * n - n]
    candidates = decoys + true_poles
    rng.shuffle(candidates)
    assert poles_among(rf.denominator, candidates) == sorted(true_poles)
    assert copy_terms(rf, candidates) == copy_terms(rf)
    # too few candidates: None, and copy_terms falls back to factoring
    assert poles_among(rf.denominator, candidates[:0] + true_poles[1:]) is None
    assert copy_terms(rf, true_poles[1:]) == copy_terms(rf)


def test_candidates_equal_to_a_pole_modulo_the_prime_are_rejected_exactly():
    """``k0 + p`` passes the screening modulo ``p = 2**61 - 1``; only the exact check rejects it."""
    p = 2**61 - 1
    rf = from_partial_fractions(fmpq(1), [(fmpq(-3), fmpq(2)), (fmpq(-1, 5), fmpq(7))])
    assert poles_among(rf.denominator, [fmpq(-3 + p), fmpq(-1, 5)]) is None
    assert poles_among(rf.denominator, [fmpq(-3 + p), fmpq(-1, 5), fmpq(-3)]) == [fmpq(-3), fmpq(-1, 5)]
    # a repeated candidate counts once
    assert poles_among(rf.denominator, [fmpq(-3), fmpq(-3)]) is None


def test_partial_fractions_errors_are_unchanged():
    double = RationalFunction(fmpq_poly([1]), fmpq_poly([1, 1]) ** 2)
    with pytest.raises(ReconstructionError, match="multiplicity 2"):
        double.partial_fractions()
    with pytest.raises(ReconstructionError, match="multiplicity 2"):
        double.partial_fractions([fmpq(-1)])
    irreducible = RationalFunction(fmpq_poly([1]), fmpq_poly([1, 0, 1]))
    with pytest.raises(ReconstructionError, match="does not split"):
        irreducible.partial_fractions()


# -- the output-sensitive solve of the value reconstruction ---------------------------------


def dixon(size, entries, rhs):
    try:
        x = fmpq_mat(size, size, entries).solve(fmpq_mat(size, 1, rhs), algorithm="dixon")
    except ZeroDivisionError:
        return None
    return [x[i, 0] for i in range(size)]


@SOLVES
@given(st.integers(1, 7), st.integers(0, 10**6), st.sampled_from([4, 60, 200, 1500]))
def test_small_solve_equals_dixon(size, seed, bits):
    """Large entries, solutions from tiny to larger than 16 primes can rebuild (then Dixon decides)."""
    rng = random.Random(seed)
    big = [rng.randrange(-(2**300), 2**300) for _ in range(size * size)]
    x = [fmpq(rng.randrange(-(2**bits), 2**bits), rng.randrange(1, 2**bits)) for _ in range(size)]
    A = fmpq_mat(size, size, big)
    b = A * fmpq_mat(size, 1, x)
    den = 1
    for i in range(size):
        den = den * b[i, 0].q // fmpz(den).gcd(b[i, 0].q)
    rhs = [int((b[i, 0] * den).p) for i in range(size)]
    assert _solve_small(size, big, rhs) == dixon(size, big, rhs)


def test_small_solve_singular_and_singular_modulo_the_first_prime():
    p = _solver_primes()[0]
    assert _solve_small(2, [1, 2, 2, 4], [1, 2]) is None  # singular over Q
    # singular modulo the first prime only: Dixon decides
    assert _solve_small(2, [p, 0, 0, 1], [1, 5]) == [fmpq(1, p), fmpq(5)]
    # a solution whose denominator exceeds what 16 primes rebuild still comes out exact
    q = fmpz(2) ** 1100 + 1
    assert _solve_small(1, [int(q)], [1]) == [fmpq(1, q)]


# -- residues on integers from the linear factors ------------------------------------


def _reference_terms(rf):
    """copy_terms through the rational evaluation of p and q' (an empty candidate list factors)."""
    return copy_terms(rf, candidates=[])


@SOLVES
@given(st.lists(st.tuples(st.integers(1, 2**200), st.integers(1, 2**200), st.integers(-50, 50),
                          st.integers(1, 50)), min_size=1, max_size=6),
       st.integers(-9, 9), st.integers(1, 9))
def test_integer_residues_match_rational_evaluation(heads, un, ud):
    terms = {}
    for n, m, cn, cd in heads:
        if cn != 0:
            terms[fmpq(n, m)] = fmpq(cn, cd)
    if not terms:
        return
    rf = from_partial_fractions(fmpq(un, ud), [(-1 / r, c / r) for r, c in terms.items()])
    fast = copy_terms(rf)
    assert fast == _reference_terms(rf)
    assert fast.terms == tuple(sorted(terms.items()))


@pytest.mark.parametrize("rf", [
    RationalFunction(fmpq_poly([1]), fmpq_poly([1, 0, 1])),  # does not split over Q
    RationalFunction(fmpq_poly([1]), fmpq_poly([-1, 1])),  # positive pole
    RationalFunction(fmpq_poly([1]), fmpq_poly([0, 1])),  # pole at 0
    RationalFunction(fmpq_poly([1]), fmpq_poly([1, 1]) ** 2),  # double pole
    RationalFunction(fmpq_poly([0, 0, 1]), fmpq_poly([1, 1])),  # pole at infinity
    RationalFunction(fmpq_poly([2, 1]), fmpq_poly([1, 3]) * fmpq_poly([-2, 1])),  # one pole of each sign
])
def test_integer_residues_refuse_as_the_reference(rf):
    with pytest.raises(ReconstructionError) as reference:
        _reference_terms(rf)
    with pytest.raises(ReconstructionError) as fast:
        copy_terms(rf)
    assert str(fast.value) == str(reference.value)
