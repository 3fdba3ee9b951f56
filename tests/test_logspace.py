"""Log space: coprime bases, exponent vectors, exact log matrices."""

from __future__ import annotations

from math import gcd

import pytest
from flint import fmpq, fmpq_mat, fmpz
from hypothesis import given, settings
from hypothesis import strategies as st

from exactlearn import NotRationalError
from exactlearn.logspace import (
    LogMatrix,
    LogNumber,
    coprime_base,
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
