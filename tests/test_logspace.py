"""Log space: coprime bases, exponent vectors, exact log matrices.

The coprime base is also compared with plain factor refinement, and the bases and
exponents from factorisations (``coprime_exponents``) with refinement and division.
"""

from __future__ import annotations

import random
from math import gcd

import pytest
from flint import fmpq, fmpq_mat, fmpz
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactlearn import NotRationalError
from exactlearn.logspace import (
    LogMatrix,
    LogNumber,
    coprime_base,
    coprime_exponents,
    exponent_vector,
    log_matrix_of,
    remove_factor,
    solve_log_system,
)


def _is_perfect_power(n: int) -> bool:
    return any(round(n ** (1 / k)) ** k == n or (round(n ** (1 / k)) + 1) ** k == n
               for k in range(2, n.bit_length() + 1))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=12))
def test_coprime_base_properties(numbers):
    base = [int(b) for b in coprime_base(numbers)]
    assert all(b > 1 for b in base)
    assert all(gcd(a, b) == 1 for i, a in enumerate(base) for b in base[i + 1 :])
    assert not any(_is_perfect_power(b) for b in base)
    for n in numbers:  # every input factors over the base
        e = exponent_vector(fmpq(n), coprime_base(numbers))
        prod = 1
        for b, k in zip(base, e):
            assert k >= 0
            prod *= b**k
        assert prod == n


def test_perfect_powers_are_replaced_by_roots():
    # 2 must not appear as 4^(1/2): 64 = 2^6 and 9 = 3^2
    assert coprime_base([64, 9, 36]) == (2, 3)
    assert exponent_vector(fmpq(4, 27), coprime_base([64, 9])) == (2, -3)


def test_remove_factor_large_multiplicity():
    n = fmpz(3) ** 1000 * 7
    assert remove_factor(n, fmpz(3)) == (7, 1000)
    assert remove_factor(fmpz(10), fmpz(3)) == (10, 0)


def test_exponent_vector_errors():
    with pytest.raises(ValueError, match="not positive"):
        exponent_vector(fmpq(-2), (fmpz(2),))
    with pytest.raises(ValueError, match="does not factor"):
        exponent_vector(fmpq(10), (fmpz(2),))


def test_log_number_rationality_and_forms():
    half_log2 = LogNumber((fmpz(2), fmpz(3)), (fmpq(1, 2), fmpq(0)))
    assert not half_log2.is_rational
    with pytest.raises(NotRationalError, match="not a rational"):
        half_log2.exp()
    x = LogNumber((fmpz(2), fmpz(3)), (fmpq(3), fmpq(-1)))
    assert x.exp() == fmpq(8, 3)
    assert str(x) == "3*log(2) - log(3)"
    import sympy

    assert sympy.simplify(x.to_sympy() - sympy.log(sympy.Rational(8, 3))) == 0


def test_log_matrix_round_trip_and_non_rational_entry():
    E = [[fmpq(2), fmpq(9, 4)], [fmpq(1), fmpq(1, 12)]]
    L = log_matrix_of(E)
    assert L.exp() == tuple(tuple(r) for r in E)
    bad = LogMatrix((fmpz(2),), (((fmpq(1),), (fmpq(1, 2),)), ((fmpq(0),), (fmpq(0),))))
    assert not bad.is_rational
    with pytest.raises(NotRationalError, match=r"exp\(W\)\[0\]\[1\]"):
        bad.exp()


def _rhos(E, rows):
    """``exp(<W, M_j>)`` for each row ``vec(M_j)`` (2 x 2), with ``exp(W) = E``."""
    out = []
    for r in rows:
        rho = fmpq(1)
        for idx, m in enumerate(r):
            rho *= E[idx // 2][idx % 2] ** m
        out.append(rho)
    return out


@settings(max_examples=40, deadline=None)
@given(
    entries=st.lists(st.builds(fmpq, st.integers(1, 40), st.integers(1, 40)), min_size=8, max_size=8),
    rows=st.lists(st.lists(st.integers(-4, 4), min_size=4, max_size=4), min_size=4, max_size=4),
)
def test_solve_log_system_recovers_rational_exponentials(entries, rows):
    """log rho_j = <W, M_j>: solving in exponent space gives exp(W) back exactly."""
    design = fmpq_mat(4, 4, [x for r in rows for x in r])
    if design.rank() < 4:
        return
    heads = [[entries[0:2], entries[2:4]], [entries[4:6], entries[6:8]]]
    rhos = [_rhos(E, rows) for E in heads]
    solved = solve_log_system(design, rhos)
    for E, L in zip(heads, solved):
        assert L.exp() == tuple(tuple(r) for r in E)


def test_solve_log_system_with_a_rational_design():
    """A design with denominators (scaled rows): the integer right-hand side is scaled with it."""
    E = [[fmpq(2), fmpq(3, 5)], [fmpq(7, 4), fmpq(11)]]
    rows = [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 1, 1], [1, 0, 0, 3]]
    rhos = _rhos(E, rows)
    # every row divided by 2: (design / 2) vec(W') = log rho gives W' = 2 W, so exp(W') = exp(W)^2
    design = fmpq_mat(4, 4, [fmpq(x, 2) for r in rows for x in r])
    solved = solve_log_system(design, [rhos])[0]
    assert solved.exp() == tuple(tuple(e * e for e in row) for row in E)


@pytest.mark.parametrize("base, cells, expected", [
    ((fmpz(2), fmpz(3)), [(1, 0), (0, -2), (3, 1), (0, 0)], True),
    ((fmpz(2), fmpz(3)), [(1, 0), (fmpq(1, 2), 0), (3, 1), (0, 0)], False),   # sqrt(2)
    ((fmpz(2), "E"), [(1, 0), (2, 0), (0, 0), (5, 0)], True),                  # E never used
    ((fmpz(2), "E"), [(1, 0), (2, 0), (0, 1), (5, 0)], False),                 # exp(log E) = E
])
def test_log_matrix_is_rational_is_every_entry_rational(base, cells, expected):
    rows = [cells[0:2], cells[2:4]]
    coefficients = tuple(tuple(tuple(fmpq(c) for c in cell) for cell in row) for row in rows)
    W = LogMatrix(base, coefficients)
    assert W.is_rational is expected
    assert expected == all(W.entry(a, b).is_rational for a in range(2) for b in range(2))


# -- the coprime base against plain factor refinement ---------------------------------


def naive_coprime_base(numbers) -> tuple:
    """Plain factor refinement (one pair at a time), then perfect powers replaced by roots."""
    base: list[fmpz] = []
    for n in numbers:
        work = [abs(fmpz(n))]
        while work:
            a = work.pop()
            if a == 1:
                continue
            for i, b in enumerate(base):
                g = a.gcd(b)
                if g != 1:
                    base.pop(i)
                    work.extend((g, a // g, b // g))
                    break
            else:
                base.append(a)
    out = set()
    for b in base:
        for k in range(b.bit_length(), 1, -1):
            r = b.root(k)
            if r**k == b:
                b = r
                break
        out.add(b)
    return tuple(sorted(out))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(1, 10**12), min_size=1, max_size=12),
       st.lists(st.integers(0, 40), min_size=1, max_size=12))
def test_coprime_base_properties_and_reference(numbers, powers):
    inputs = [fmpz(n) ** (p % 5 + 1) for n, p in zip(numbers, powers * 12)]
    base = coprime_base(inputs)
    assert base == naive_coprime_base(inputs)
    assert all(b > 1 for b in base)
    assert all(base[i].gcd(base[j]) == 1 for i in range(len(base)) for j in range(i))
    assert all(not b.is_perfect_power() for b in base)
    for n in inputs:
        exponents = exponent_vector(fmpq(n), base)
        product = fmpz(1)
        for b, e in zip(base, exponents):
            product *= b**e
        assert product == n


def test_coprime_base_of_power_products():
    primes = [fmpz(p) for p in (2, 3, 5, 7, 2305843009213693951)]
    rng = random.Random(3)
    inputs = []
    for _ in range(30):
        n = fmpz(1)
        for p in primes:
            n *= p ** rng.randint(0, 60)
        inputs.append(n)
    assert coprime_base(inputs) == naive_coprime_base(inputs)


def test_log_solve_recovers_exponents():
    d = 2
    rng = random.Random(2)
    exp_w = [[fmpq(rng.randint(1, 30), rng.randint(1, 30)) for _ in range(d)] for _ in range(d)]
    rows, rhos = [], []
    while len(rows) < d * d:
        x = tuple(rng.randint(-2, 2) for _ in range(d))
        z = tuple(rng.randint(-2, 2) for _ in range(d))
        row = [(z[a] - x[a]) * x[b] for a in range(d) for b in range(d)]
        if fmpq_mat(len(rows) + 1, d * d, [e for r in rows + [row] for e in r]).rank() <= len(rows):
            continue
        rows.append(row)
        rho = fmpq(1)
        for a in range(d):
            for b in range(d):
                rho *= exp_w[a][b] ** row[a * d + b]
        rhos.append(rho)
    design = fmpq_mat(d * d, d * d, [e for r in rows for e in r])
    (W,) = solve_log_system(design, [rhos])
    assert W.exp() == tuple(tuple(r) for r in exp_w)


# -- coprime base and exponent vectors from factorisations ---------------------------


def reference_exponents(rationals):
    base = coprime_base([x for q in rationals for x in (q.p, q.q)])
    return base, [exponent_vector(q, base) for q in rationals]


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


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
