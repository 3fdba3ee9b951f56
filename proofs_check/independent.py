"""A second, independent evaluator of multi-head attention, written with sympy.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sympy as sp

__all__ = ["IndependentEvaluationError", "evaluate"]


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
