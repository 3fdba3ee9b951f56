"""Second, independent evaluators: multi-head attention (sympy) and a one-layer Transformer (Fractions).

It shares no code with :mod:`exactlearn.model`: it reads a model from its JSON
form (``"p/q"`` strings), takes ``W_h = log(exp_W)`` literally as sympy ``log``
of ``Rational`` entries, and evaluates the defining formula (docs/algorithm.md
section 1)

    f(X) = sum_h sum_i softmax_i(x_i^T W_h x_N) * v_h^T x_i

with sympy's ``exp``. For integer tokens every ``exp(sum n log r)`` sympy builds
is a rational number, and the result must be a sympy ``Rational``; anything else
is an error, not a silent approximation.

>>> model = {"heads": [{"exp_W": [["2", "1"], ["1", "3"]], "v": ["1", "-1"]}]}
>>> evaluate(model, [(1, 0), (0, 1)])
-1/2

:func:`evaluate_transformer` evaluates a one-layer Transformer from its JSON
form with :class:`fractions.Fraction` only (docs/transformer.md, section 1):
``o_h(X) = sum_i softmax_i(x_i^T W_h x_N) x_i``, ``y = sum_h V_h o_h`` (plus
``x_N`` with ``"residual": true``) and ``T(X) = sum_j a_j ReLU(u_j^T y)``, where
``exp(x^T W x_N) = prod_{a,b} exp_W[a][b] ** (x[a] x_N[b])`` is a rational.

>>> t = {"heads": [{"exp_W": [["2", "1"], ["1", "3"]], "V": [["1", "0"], ["0", "1"]]}],
...      "U": [["1", "-1"]], "a": ["2"]}
>>> evaluate_transformer(t, [(0, 1), (1, 0)]), evaluate_transformer(t, [(1, 0), (0, 1)])
(Fraction(2, 3), Fraction(0, 1))
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import sympy as sp

__all__ = ["IndependentEvaluationError", "evaluate", "evaluate_transformer"]


class IndependentEvaluationError(ValueError):
    """The sympy evaluation did not produce an exact rational."""


def _heads(model: dict) -> list[tuple[list[list[Any]], list[Any]]]:
    out = []
    for head in model["heads"]:
        W = [[sp.log(sp.Rational(entry)) for entry in row] for row in head["exp_W"]]
        v = [sp.Rational(entry) for entry in head["v"]]
        out.append((W, v))
    return out


def evaluate(model: dict, tokens: Sequence[Sequence[int]]) -> sp.Rational:
    """``f(X)`` for a model given as a JSON-style dict and integer tokens, in sympy."""
    last = tokens[-1]
    total = sp.Integer(0)
    for W, v in _heads(model):
        d = len(v)
        weights = [sp.exp(sp.Add(*[sp.Integer(x[a]) * W[a][b] * sp.Integer(last[b])
                                   for a in range(d) for b in range(d)])) for x in tokens]
        values = [sp.Add(*[sp.Integer(x[a]) * v[a] for a in range(d)]) for x in tokens]
        total += sp.Add(*[w * val for w, val in zip(weights, values)]) / sp.Add(*weights)
    if not total.is_Rational:
        raise IndependentEvaluationError(f"the sympy evaluation is not an exact rational: {total}")
    return total


def _softmax_mean(exp_W: list[list[Fraction]], tokens: Sequence[Sequence[int]]) -> list[Fraction]:
    """``sum_i softmax_i(x_i^T W x_N) x_i`` with ``exp(W) = exp_W`` entrywise, in Fractions."""
    last = tokens[-1]
    d = len(last)
    weights = []
    for x in tokens:
        w = Fraction(1)
        for a in range(d):
            for b in range(d):
                w *= exp_W[a][b] ** (x[a] * last[b])
        weights.append(w)
    total = sum(weights, Fraction(0))
    return [sum((w * x[c] for w, x in zip(weights, tokens)), Fraction(0)) / total for c in range(d)]


def evaluate_transformer(model: dict, tokens: Sequence[Sequence[int]]) -> Fraction:
    """``T(X)`` for a one-layer Transformer given as a JSON-style dict and integer tokens."""
    d = len(tokens[-1])
    y = [Fraction(tokens[-1][r]) if model.get("residual") else Fraction(0) for r in range(d)]
    for head in model["heads"]:
        exp_W = [[Fraction(e) for e in row] for row in head["exp_W"]]
        V = [[Fraction(e) for e in row] for row in head["V"]]
        o = _softmax_mean(exp_W, tokens)
        for r in range(d):
            y[r] += sum((V[r][c] * o[c] for c in range(d)), Fraction(0))
    out = Fraction(0)
    for u, a in zip(model["U"], model["a"]):
        s = sum((Fraction(ui) * yi for ui, yi in zip(u, y)), Fraction(0))
        if s > 0:
            out += Fraction(a) * s
    return out
