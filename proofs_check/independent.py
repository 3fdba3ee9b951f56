"""Independent evaluators: multi-head attention (sympy; exact rationals) and a one-layer Transformer.

This module shares no code with :mod:`exactlearn.model`: it reads a model from its JSON
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

:func:`evaluate_rational` evaluates the same formula with exact rationals
(python-flint ``fmpq`` arithmetic, this module's own model code), fast enough
for every learner run. :func:`evaluate_transformer` evaluates a one-layer
Transformer from its JSON form the same way (docs/transformer.md, section 1):
``o_h(X) = sum_i softmax_i(x_i^T W_h x_N) x_i``, ``y = sum_h V_h o_h`` (plus
``x_N`` with ``"residual": true``) and ``T(X) = sum_j a_j ReLU(u_j^T y)``, where
``exp(x^T W x_N) = prod_{a,b} exp_W[a][b] ** (x[a] x_N[b])`` is a rational.

>>> t = {"heads": [{"exp_W": [["2", "1"], ["1", "3"]], "V": [["1", "0"], ["0", "1"]]}],
...      "U": [["1", "-1"]], "a": ["2"]}
>>> evaluate_transformer(t, [(0, 1), (1, 0)]), evaluate_transformer(t, [(1, 0), (0, 1)])
(2/3, 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flint import fmpq

__all__ = ["IndependentEvaluationError", "evaluate", "evaluate_rational", "evaluate_transformer"]


class IndependentEvaluationError(ValueError):
    """The sympy evaluation did not produce an exact rational."""


def _heads(model: dict) -> list[tuple[list[list[Any]], list[Any]]]:
    import sympy as sp  # only the sympy evaluator needs it (the sandbox's processes do not import it)

    out = []
    for head in model["heads"]:
        W = [[sp.log(sp.Rational(entry)) for entry in row] for row in head["exp_W"]]
        v = [sp.Rational(entry) for entry in head["v"]]
        out.append((W, v))
    return out


def evaluate(model: dict, tokens: Sequence[Sequence[int]]) -> Any:
    """``f(X)`` for a model given as a JSON-style dict and integer tokens, in sympy (a ``Rational``)."""
    import sympy as sp

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


def evaluate_rational(model: dict, tokens: Sequence[Sequence[int]]) -> fmpq:
    """``f(X)`` for a model given as a JSON-style dict and integer tokens, in exact rationals.

    The same formula as :func:`evaluate`, with ``exp(x^T W x_N)`` written as the rational
    ``prod_{a,b} exp_W[a][b] ** (x[a] x_N[b])``; the arithmetic is python-flint's ``fmpq``
    (fast enough to check every learner run), the model code is this module's.

    >>> evaluate_rational({"heads": [{"exp_W": [["2", "1"], ["1", "3"]], "v": ["1", "-1"]}]},
    ...                   [(1, 0), (0, 1)])
    -1/2
    """
    total = fmpq(0)
    for head in model["heads"]:
        exp_W = [[_q(e) for e in row] for row in head["exp_W"]]
        v = [_q(e) for e in head["v"]]
        mean = _softmax_mean(exp_W, tokens)
        for vi, mi in zip(v, mean):
            total += vi * mi
    return total


def _q(text: Any) -> fmpq:
    """An exact rational from ``"p/q"`` (or an integer)."""
    p, _, q = str(text).partition("/")
    return fmpq(int(p), int(q or 1))


def _softmax_mean(exp_W: list[list[fmpq]], tokens: Sequence[Sequence[int]]) -> list[fmpq]:
    """``sum_i softmax_i(x_i^T W x_N) x_i`` with ``exp(W) = exp_W`` entrywise, exactly."""
    last = tokens[-1]
    d = len(last)
    weights = []
    for x in tokens:
        w = fmpq(1)
        for a in range(d):
            if x[a]:
                for b in range(d):
                    if last[b]:
                        w *= exp_W[a][b] ** (x[a] * last[b])
        weights.append(w)
    total = sum(weights, fmpq(0))
    return [sum((w * x[c] for w, x in zip(weights, tokens)), fmpq(0)) / total for c in range(d)]


def evaluate_transformer(model: dict, tokens: Sequence[Sequence[int]]) -> fmpq:
    """``T(X)`` for a one-layer Transformer given as a JSON-style dict and integer tokens."""
    d = len(tokens[-1])
    y = [fmpq(tokens[-1][r]) if model.get("residual") else fmpq(0) for r in range(d)]
    for head in model["heads"]:
        exp_W = [[_q(e) for e in row] for row in head["exp_W"]]
        V = [[_q(e) for e in row] for row in head["V"]]
        o = _softmax_mean(exp_W, tokens)
        for r in range(d):
            y[r] += sum((V[r][c] * o[c] for c in range(d)), fmpq(0))
    out = fmpq(0)
    for u, a in zip(model["U"], model["a"]):
        s = sum((_q(ui) * yi for ui, yi in zip(u, y)), fmpq(0))
        if s > 0:
            out += _q(a) * s
    return out
