"""exactlearn.transformer.model and .canonical: exact evaluation, JSON, canonical form."""

from __future__ import annotations

import random
import time
from fractions import Fraction

import pytest
from flint import fmpq

from exactlearn import DEFAULT_LIMITS, InvalidArgumentError, InvalidModelError, InvalidQueryError
from exactlearn.transformer import Transformer
from exactlearn.transformer.canonical import build_weights
from exactlearn.transformer.structured import structured_cases


def reference(model: Transformer, tokens) -> Fraction:
    """T(X) straight from the definition with Fractions (no grouping, no relative scores)."""
    last = tokens[-1]
    d = model.d
    y = [Fraction(0)] * d
    for E, V in zip(model.exp_Ws, model.Vs):
        ws = []
        for x in tokens:
            w = Fraction(1)
            for a in range(d):
                for b in range(d):
                    w *= Fraction(int(E[a][b].p), int(E[a][b].q)) ** (x[a] * last[b])
            ws.append(w)
        o = [sum(w * x[c] for w, x in zip(ws, tokens)) / sum(ws) for c in range(d)]
        for r in range(d):
            y[r] += sum(Fraction(int(V[r][c].p), int(V[r][c].q)) * o[c] for c in range(d))
    total = Fraction(0)
    for u, a in zip(model.U, model.a):
        s = sum(Fraction(int(ui.p), int(ui.q)) * yi for ui, yi in zip(u, y))
        total += Fraction(int(a.p), int(a.q)) * max(s, 0)
    return total


def _queries(d, n, rng):
    return [[tuple(rng.randint(-3, 3) for _ in range(d)) for _ in range(rng.randint(1, 6))] for _ in range(n)]


@pytest.mark.parametrize("d,H,m", [(1, 1, 1), (2, 2, 3), (3, 3, 5)])
def test_exact_evaluation_matches_the_definition(d, H, m):
    model = Transformer.random(d, H, m, seed=7)
    for X in _queries(d, 15, random.Random(1)):
        got = model(X)
        assert isinstance(got, fmpq)
        assert Fraction(int(got.p), int(got.q)) == reference(model, X)


def test_json_round_trip(tmp_path):
    model = Transformer.random(3, 2, 4, seed=2)
    again = Transformer.from_json(model.to_json())
    assert again.to_dict() == model.to_dict() and again == model
    path = tmp_path / "t.json"
    model.save(path)
    assert Transformer.load(path).to_dict() == model.to_dict()


@pytest.mark.parametrize("bad, message", [
    ("not json", "not valid JSON"), ('{"heads": []}', "needs the key 'U'"),
    ('{"heads": [], "U": [[1]], "a": [1]}', "at least one attention head"),
    ('{"heads": [{"exp_W": [[0]], "V": [[1]]}], "U": [[1]], "a": [1]}', "not positive"),
    ('{"heads": [{"exp_W": [[1]], "V": [[1]]}], "U": [[1]], "a": [0.5]}', "exact rational"),
    ('{"heads": [{"exp_W": [[1]], "V": [[1]]}], "U": [[1], [2]], "a": [1]}', "2 hidden weight rows"),
    # issue 25: an empty FFN (a 0 x d matrix U), digits of other scripts, long numbers
    ('{"heads": [{"exp_W": [[2, 1], [1, 3]], "V": [[1, 0], [0, 1]]}], "U": [], "a": []}',
     "at least one FFN neuron"),
    ('{"heads": [{"exp_W": [[1]], "V": [[1]]}], "U": [[1]], "a": ["\u0663"]}', r"a\[0\]: .*ASCII digits"),
    ('{"heads": [{"exp_W": [[1]], "V": [[1]]}], "U": [[1]], "a": ["%s"]}' % ("9" * 10_001),
     r"entry a\[0\]: .*entry_digits"),
])
def test_malformed_models_are_refused(bad, message):
    with pytest.raises(InvalidModelError, match=message):
        Transformer.from_json(bad)


def test_rows_must_be_sequences():
    E, V = [[2, 1], [1, 3]], [[1, 0], [0, 1]]
    with pytest.raises(InvalidModelError, match=r"U\[0\]: expected a vector"):
        Transformer([E], [V], [{1, 2}], [1])
    with pytest.raises(InvalidModelError, match="U: expected a list, got set"):
        Transformer([E], [V], {(1, 2)}, [1])
    assert Transformer([E], [V], [[1, 1]], ["+2"]).a == (2,)  # "+2" is read as int("+2")


def test_random_refuses_sizes_and_seeds_before_drawing():
    start = time.process_time()
    with pytest.raises(InvalidModelError, match=r"width = 10000000 is above the limit 1024.*Limits\(width="):
        Transformer.random(2, 1, 10**7)
    with pytest.raises(InvalidModelError, match="model_entries"):
        Transformer.random(128, 64, 1)
    with pytest.raises(InvalidModelError, match="fewer than heads = 10 different exp_W"):
        Transformer.random(1, 10, 1, height=2)  # drew forever before
    with pytest.raises(InvalidArgumentError, match="seed must be an int"):
        Transformer.random(2, 1, 2, seed=10**5000)
    assert time.process_time() - start < 1
    assert Transformer.random(2, 1, 2048, limits=DEFAULT_LIMITS.lifted(width=2048)).width == 2048


def test_malformed_queries_are_refused():
    model = Transformer.random(2, 1, 1, seed=0)
    for bad in ([], [(1,)], [(1, 0.5)], "ab"):
        with pytest.raises(InvalidQueryError):
            model(bad)


def test_canonical_form_decides_equality_and_has_power():
    rng = random.Random(3)
    for d in (2, 3):
        for name, model in structured_cases(d, seed=1).items():
            form = model.canonical()
            Vs, U, a = build_weights(form)
            rebuilt = Transformer(form.heads, Vs, U, a) if U else None
            if rebuilt is not None:
                assert rebuilt == model, name
                assert all(rebuilt(X) == model(X) for X in _queries(d, 10, rng)), name
            # a control: one output weight changed is a different function with a different form
            control = Transformer(model.exp_Ws, model.Vs, model.U, (model.a[0] + 1,) + model.a[1:])
            assert control != model
            assert any(control(X) != model(X) for X in _queries(d, 30, rng)), name


def test_structured_forms():
    cases = structured_cases(2, seed=0)
    assert len(cases["parallel neurons"].canonical().lines) == 2
    assert len(cases["antiparallel pair (linear part)"].canonical().lines) == 1
    assert len(cases["antiparallel pair + line"].canonical().lines) == 2
    assert len(cases["heads sharing W"].canonical().heads) == 2 and cases["heads sharing W"].heads == 3
    assert len(cases["single neuron"].canonical().lines) == 1
    assert all(k < 0 for _, k in cases["all a_j negative"].canonical().lines)


def test_permuting_heads_and_neurons_keeps_the_form():
    m = Transformer.random(3, 3, 4, seed=5)
    p = Transformer(m.exp_Ws[::-1], m.Vs[::-1], m.U[::-1], m.a[::-1])
    assert p == m and hash(p) == hash(m)
    assert m.canonical().to_dict() == p.canonical().to_dict()


def test_residual_models():
    rng = random.Random(4)
    for seed in range(4):
        model = Transformer.random(3, 2, 4, seed=seed, residual=True)
        plain = Transformer(model.exp_Ws, model.Vs, model.U, model.a)
        assert model != plain and Transformer.from_json(model.to_json()) == model
        for X in _queries(3, 10, rng):  # y = x_N + sum_h V_h o_h, by the definition
            o = model.outputs(X)
            y = [X[-1][r] + sum((model.Vs[h][r][c] * o[h][c] for h in range(2) for c in range(3)), fmpq(0))
                 for r in range(3)]
            want = sum((a * max(fmpq(0), sum((u_i * y_i for u_i, y_i in zip(u, y)), fmpq(0)))
                        for u, a in zip(model.U, model.a)), fmpq(0))
            assert model(X) == want
        form = model.canonical()
        Vs, U, a = build_weights(form)
        rebuilt = Transformer(form.heads, Vs, U, a, residual=True)
        assert rebuilt == model and all(rebuilt(X) == model(X) for X in _queries(3, 10, rng))


def test_zero_function_has_one_form_with_or_without_residual():
    # the zero function has one canonical form, with or without a residual
    E, V = [[[2, 1], [1, 3]]], [[[1, 0], [0, 1]]]
    zero = Transformer(E, V, [[1, 1]], [0])
    assert Transformer(E, V, [[1, 1]], [0], residual=True) == zero
    assert Transformer(E, V, [[1, 1], [1, 1]], [1, -1], residual=True) == zero
    assert Transformer(E, V, [[1, 1]], [1], residual=True) != zero  # not zero: ReLU(x_N + V o) on its line
