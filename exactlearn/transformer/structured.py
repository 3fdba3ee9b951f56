"""Hand-built Transformers whose FFN canonical form is special (docs/transformer.md, section 6).

>>> cases = structured_cases(d=2, seed=0)
>>> sorted(cases)[:3]
['all a_j negative', 'antiparallel pair (linear part)', 'antiparallel pair + line']
>>> len(cases['parallel neurons'].canonical().lines) < cases['parallel neurons'].width
True
"""

from __future__ import annotations

from typing import Any

from flint import fmpq

from .model import Transformer

__all__ = ["structured_cases"]


def structured_cases(d: int, seed: Any = 0, heads: int = 2) -> dict[str, Transformer]:
    """Named special cases built from a random model with ``heads`` heads and width 3."""
    base = Transformer.random(d, heads, 3, seed=seed)
    E, V, U, a = list(base.exp_Ws), list(base.Vs), list(base.U), list(base.a)
    u0, u1 = U[0], U[1]
    neg = [tuple(-x for x in u0)]
    return {
        # u and 2u lie on one line and merge; a third neuron keeps a second line
        "parallel neurons": Transformer(E, V, [u0, tuple(2 * x for x in u0), u1], [a[0], a[1], a[2]]),
        # a ReLU(t) - a ReLU(-t) = a t: no line, only a linear part (plus one ordinary neuron)
        "antiparallel pair (linear part)": Transformer(E, V, [u0] + neg + [u1], [a[0], -a[0], a[2]]),
        # ReLU(t) + 2 ReLU(-t): one line and a linear part
        "antiparallel pair + line": Transformer(E, V, [u0] + neg + [u1], [fmpq(1), fmpq(2), a[2]]),
        "all a_j negative": Transformer(E, V, U, [-abs(x) for x in a]),
        # the first stored head appears twice with the same exp_W: the canonical form merges them
        "heads sharing W": Transformer(E + [E[0]], V + [tuple(tuple(x / 2 for x in r) for r in V[0])], U, a),
        "single neuron": Transformer(E, V, [u0], [a[0]]),
    }
