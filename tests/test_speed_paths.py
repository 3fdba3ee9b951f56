"""The fast paths of issue 13 give what the reference paths give.

Each fast path is compared with the slower reference it replaces, on random
inputs of the learner's shape and on hand-picked corner cases.
"""

from __future__ import annotations

import random

import pytest
from flint import fmpq, fmpq_mat, fmpq_poly, fmpz
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactlearn.errors import ReconstructionError
from exactlearn.logspace import coprime_base, coprime_exponents, exponent_vector
from exactlearn.ratfun import (
    RationalFunction,
    _reconstruct_by_kernel,
    _reconstruct_by_values,
    _solve_small,
    _solver_primes,
    _value_system,
    copy_terms,
    from_partial_fractions,
    poles_among,
    reconstruct,
)

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def reference_exponents(rationals):
    base = coprime_base([x for q in rationals for x in (q.p, q.q)])
    return base, [exponent_vector(q, base) for q in rationals]


# -- coprime base and exponent vectors from factorisations ---------------------------

PRIMES = [2, 3, 5, 7, 11, 13, 31, 257, 65537, 2305843009213693951]


@st.composite
def power_products(draw):
    """Positive rationals that are power products of a few primes (some large), or of composites."""
    factors = draw(st.lists(st.sampled_from(PRIMES + [6, 35, 36, 10**6 + 3]), min_size=1, max_size=5,
                            unique=True))
    count = draw(st.integers(1, 12))
    out = []
    for _ in range(count):
        num, den = fmpz(1), fmpz(1)
        for f in factors:
            e = draw(st.integers(-20, 20))
            if e > 0:
                num *= fmpz(f) ** e
            elif e < 0:
                den *= fmpz(f) ** (-e)
        out.append(fmpq(num, den))
    return out


@SETTINGS
@given(power_products())
def test_coprime_exponents_equal_refinement_and_division(rationals):
    assert coprime_exponents(rationals) == reference_exponents(rationals)


@pytest.mark.parametrize("rationals", [
    [fmpq(36)],  # a perfect power: the base element is its root
    [fmpq(35), fmpq(35**3, 1)],  # 5 and 7 always together: one element 35
    [fmpq(2**2 * 3**3), fmpq(1, 2**4 * 3**6)],  # proportional columns (2, 3): one element 108
    [fmpq(4), fmpq(8)],
    [fmpq(1), fmpq(1, 1)],
    [fmpq(3, 2**70 * 2305843009213693951)],
])
def test_coprime_exponents_corner_cases(rationals):
    assert coprime_exponents(rationals) == reference_exponents(rationals)


def test_coprime_exponents_rejects_nonpositive():
    with pytest.raises(ValueError):
        coprime_exponents([fmpq(2), fmpq(-1, 3)])


def test_coprime_exponents_can_fail():
    """A planted wrong answer is caught by the comparison the tests rely on."""
    rationals = [fmpq(12), fmpq(1, 18)]
    base, vectors = coprime_exponents(rationals)
    assert (base, [tuple(e + 1 for e in vectors[0])] + vectors[1:]) != reference_exponents(rationals)


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


@SETTINGS
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


@SETTINGS
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


@SETTINGS
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
