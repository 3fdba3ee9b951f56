"""The fast paths of the exact core give exactly what simple reference computations give.

Each optimisation (docs/performance.md) is compared with a direct, slow formula:
model evaluation with a naive softmax, reconstruction with the Euclidean
algorithm, the coprime base with plain factor refinement, row selection with
one rank per row, the weight consistency check with a triple loop. Comparisons
are ``==`` on flint numbers; nothing here is timed.
"""

from __future__ import annotations

import pickle
import random

import pytest
from flint import fmpq, fmpq_mat, fmpq_poly, fmpz
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactlearn import MultiHeadAttention, Oracle, learn
from exactlearn.errors import InvalidQueryError, ReconstructionError
from exactlearn.exact import as_token
from exactlearn.exactfield import ExactRationals
from exactlearn.field import choose_independent_rows
from exactlearn.logspace import (
    LogMatrix,
    LogNumber,
    coprime_base,
    exponent_vector,
    log_matrix_of,
    solve_log_system,
)
from exactlearn.ratfun import (
    RationalFunction,
    _reconstruct_by_kernel,
    _reconstruct_by_values,
    _reconstruct_euclid,
    copy_terms,
    from_partial_fractions,
    reconstruct,
    reconstruct_nn,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- references ---------------------------------------------------------------


def naive_output(model: MultiHeadAttention, tokens) -> fmpq:
    """``sum_h sum_i softmax_i(x_i^T W_h x_N) v_h^T x_i`` straight from the definition."""
    last = tokens[-1]
    total = fmpq(0)
    for head in model.heads:
        weights = []
        for t in tokens:
            w = fmpq(1)
            for a in range(model.d):
                for b in range(model.d):
                    w *= head.exp_W[a][b] ** (t[a] * last[b])
            weights.append(w)
        denominator = sum(weights, fmpq(0))
        numerator = fmpq(0)
        for w, t in zip(weights, tokens):
            numerator += w * sum((fmpq(t[a]) * head.v[a] for a in range(model.d)), fmpq(0))
        total += numerator / denominator
    return total


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


def greedy_rows(rows, rank):
    chosen = []
    for i, row in enumerate(rows):
        trial = [rows[j] for j in chosen] + [row]
        if fmpq_mat(len(trial), len(row), [x for r in trial for x in r]).rank() == len(trial):
            chosen.append(i)
            if len(chosen) == rank:
                break
    return chosen


# -- strategies -----------------------------------------------------------------

small_positive = st.builds(fmpq, st.integers(1, 40), st.integers(1, 40))
small_rational = st.builds(fmpq, st.integers(-40, 40), st.integers(1, 40))


@st.composite
def models(draw, max_d=3, max_heads=3):
    d = draw(st.integers(1, max_d))
    heads = draw(st.integers(1, max_heads))
    exp_ws = [[[draw(small_positive) for _ in range(d)] for _ in range(d)] for _ in range(heads)]
    vs = [[draw(small_rational) for _ in range(d)] for _ in range(heads)]
    return MultiHeadAttention.from_lists(exp_ws, vs)


@st.composite
def queries(draw, d, max_len=6):
    token = st.tuples(*[st.integers(-3, 3)] * d)
    pool = draw(st.lists(token, min_size=1, max_size=3))
    return tuple(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=max_len)))


# -- model evaluation -------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_evaluation_equals_the_definition(data):
    model = data.draw(models())
    for _ in range(3):
        tokens = data.draw(queries(model.d))
        assert model.evaluate(tokens) == naive_output(model, tokens)
        assert model(list(map(list, tokens))) == naive_output(model, tokens)


def test_copy_queries_equal_the_definition_and_reuse_the_cache():
    model = MultiHeadAttention.random(3, 2, seed=4)
    x, z = (1, -2, 0), (2, 1, -1)
    for k in range(6):
        tokens = (z,) * k + (x,)
        assert model.evaluate(tokens) == naive_output(model, tokens)
    # one ratio per (head, token, last): k = 1..5 share it
    assert len(model._ratio_cache) == 2


def test_ratio_cache_is_bounded_and_instance_local(monkeypatch):
    a = MultiHeadAttention.random(2, 1, seed=1)
    b = MultiHeadAttention.random(2, 1, seed=1)
    monkeypatch.setattr(MultiHeadAttention, "_CACHE_LIMIT", 5)
    rng = random.Random(0)
    for _ in range(40):
        tokens = tuple(tuple(rng.randint(-2, 2) for _ in range(2)) for _ in range(3))
        assert a.evaluate(tokens) == naive_output(a, tokens)
        assert len(a._ratio_cache) <= 5
    assert "_ratio_cache" not in b.__dict__  # b never evaluated: nothing shared
    assert a == b and hash(a) == hash(b)  # caches do not enter equality


def test_models_pickle_without_their_caches():
    model = MultiHeadAttention.random(2, 2, seed=5)
    tokens = ((1, 0), (0, 1))
    value = model.evaluate(tokens)
    copy = pickle.loads(pickle.dumps(model))
    assert "_ratio_cache" not in copy.__dict__
    assert copy == model and copy.evaluate(tokens) == value


def test_token_fast_path_keeps_validation():
    assert as_token((1, -2), 2) == (1, -2)
    with pytest.raises(InvalidQueryError):
        as_token((True, 1), 2)
    with pytest.raises(InvalidQueryError):
        as_token((1, 2, 3), 2)
    assert as_token([fmpz(2), 3], 2) == (2, 3)


# -- rational reconstruction ------------------------------------------------------


@st.composite
def rational_functions(draw, max_type=6):
    """``c + sum r_i / (k - k_i)`` with distinct negative poles: an attention-like function."""
    count = draw(st.integers(0, max_type))
    poles = draw(st.lists(st.builds(lambda p, q: fmpq(-p, q), st.integers(1, 10**6), st.integers(1, 10**6)),
                          min_size=count, max_size=count, unique=True))
    residues = draw(st.lists(st.builds(fmpq, st.integers(-10**6, 10**6).filter(bool), st.integers(1, 10**4)),
                             min_size=count, max_size=count))
    constant = draw(st.builds(fmpq, st.integers(-100, 100), st.integers(1, 100)))
    return from_partial_fractions(constant, list(zip(poles, residues)))


@SETTINGS
@given(rational_functions(), st.integers(0, 3))
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


@SETTINGS
@given(rational_functions(max_type=4), st.integers(0, 2))
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


@SETTINGS
@given(st.lists(small_rational, min_size=5, max_size=5))
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


# -- coprime base ---------------------------------------------------------------------


@SETTINGS
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


# -- linear algebra in the learner -------------------------------------------------------


@SETTINGS
@given(st.integers(1, 8), st.integers(1, 5), st.integers(0, 6), st.integers(0, 10**6))
def test_independent_rows_are_the_greedy_ones(n, width, rank, seed):
    rng = random.Random(seed)
    rows = [tuple(rng.randint(-1, 1) for _ in range(width)) for _ in range(n)]
    assert choose_independent_rows(rows, rank) == greedy_rows(rows, rank)


def test_predicted_rho_equals_the_triple_loop():
    rng = random.Random(7)
    field = ExactRationals()
    d = 3
    exp_w = [[fmpq(rng.randint(1, 30), rng.randint(1, 30)) for _ in range(d)] for _ in range(d)]
    W = log_matrix_of(exp_w)
    for _ in range(30):
        left = tuple(rng.randint(-3, 3) for _ in range(d))
        right = tuple(rng.randint(-3, 3) for _ in range(d))
        rho = fmpq(1)
        for a in range(d):
            for b in range(d):
                rho *= exp_w[a][b] ** (left[a] * right[b])
        assert field.rho(W, left, right) == rho
    # against the direct formula (log coordinates by a triple loop, then exp), also for
    # weights whose exp is irrational (half-integer log coefficients): those must raise
    base = W.base
    for _ in range(30):
        coefficients = tuple(tuple(tuple(fmpq(rng.randint(-4, 4), rng.choice([1, 1, 2])) for _ in base)
                                   for _ in range(d)) for _ in range(d))
        V = LogMatrix(base, coefficients)
        left = tuple(rng.randint(-2, 2) for _ in range(d))
        right = tuple(rng.randint(-2, 2) for _ in range(d))
        predicted = [sum((left[a] * right[b] * coefficients[a][b][l]
                          for a in range(d) for b in range(d)), fmpq(0))
                     for l in range(len(base))]
        if all(c.q == 1 for c in predicted):
            assert field.rho(V, left, right) == LogNumber(base, tuple(predicted)).exp()
        else:
            with pytest.raises(ReconstructionError):
                field.rho(V, left, right)
    empty = LogMatrix((), tuple(tuple(() for _ in range(d)) for _ in range(d)))
    assert field.rho(empty, (1, 0, 2), (0, 1, 1)) == 1
    # pickled LogMatrix loses only its cache
    W2 = pickle.loads(pickle.dumps(W))
    assert W2 == W and "_coefficient_matrix" not in W2.__dict__


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


# -- end to end: the fast paths recover exactly --------------------------------------------


@pytest.mark.parametrize("d,heads,schedule", [(3, 2, "paper"), (4, 3, "lean"), (2, 4, "paper")])
def test_recovery_is_exact_with_the_fast_paths(d, heads, schedule):
    model = MultiHeadAttention.random(d, heads, seed=11)
    oracle = Oracle(model)
    rec = learn(oracle, d, heads=heads, schedule=schedule, seed=1)
    assert rec.model == model.canonical()
    if rec.redraws == 0:
        assert oracle.queries == rec.planned


def test_lower_true_type_with_a_bound_is_exact():
    model = MultiHeadAttention.random(2, 2, seed=6)
    oracle = Oracle(model)
    rec = learn(oracle, 2, heads_bound=4)
    assert rec.model == model.canonical() and rec.num_heads == 2


def test_sixty_one_bit_primes():
    p, q = 2305843009213693951, 2305843009213693921
    model = MultiHeadAttention.from_lists(
        [[[fmpq(p, 3), fmpq(5, q)], [7, fmpq(p, 11)]], [[fmpq(2, p), 3], [fmpq(q, 13), 5]]],
        [[1, fmpq(1, p)], [fmpq(q, 2), -3]],
    )
    rec = learn(Oracle(model), 2, heads=2)
    assert rec.model == model.canonical()


def test_reduced_fraction_is_reduced():
    rf = reconstruct([0, 1, 2, 3, 4], [fmpq(1, k + 1) for k in range(5)], 2, 2)
    assert rf == RationalFunction(fmpq_poly([1]), fmpq_poly([1, 1]))
