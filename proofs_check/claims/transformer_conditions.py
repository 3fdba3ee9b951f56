"""Claim 50's own reading of the Transformer learner's conditions (docs/transformer.md, section 2).

When the learner refuses a model it names a condition; claim 50 accepts the
refusal only if it confirms here, from the truth's JSON and with this module's
own arithmetic (exact rationals; nothing from exactlearn), that the condition
is violated. Conditions it cannot decide from the parameters (the per-head
split's reachability within the length cap, for ``d >= 2``; the width of the
learned FFN, always met by a genuine model; rational weights, always met by a
model given by ``exp(W)``) are never confirmed, so a refusal naming them fails
the claim.

* ``NO_RESIDUAL``: the model has a residual connection.
* ``HEADS_VISIBLE``: a merged head (heads with equal ``exp(W)``, blocks summed)
  has ``v_h = V_h^T sum_j a_j u_j = 0``.
* ``ODD_ATTENTION``: the odd part ``sum_h v_h^T o_h`` has another number of
  canonical heads than the learner was told, or the model has a residual
  connection (then the odd part is no attention).
* ``LINES_ON_SLICE``: some line ``w_L`` (a distinct direction of the nonzero
  ``beta_j = (V_h^T u_j)_h``, with ``kappa_L = sum a_j |c_j| != 0``) has
  ``J_L = sum_h w_Lh = 0``, or two lines have parallel ``J_L``.
* ``PER_HEAD_SPLIT``: ``d = 1`` with two or more heads.

>>> t = {"heads": [{"exp_W": [["2"]], "V": [["1"]]}], "U": [["1"]], "a": ["1"]}
>>> violated(t, 1, "HEADS_VISIBLE"), violated(t, 1, "PER_HEAD_SPLIT"), violated(t, 1, "WIDTH")
(False, False, False)
"""

from __future__ import annotations

from flint import fmpq

__all__ = ["violated"]


def _q(text) -> fmpq:
    p, _, q = str(text).partition("/")
    return fmpq(int(p), int(q or 1))


def _merged_blocks(model: dict) -> list[list[list[fmpq]]]:
    """The ``V`` blocks of the heads with equal ``exp(W)``, summed (one block per distinct ``exp(W)``)."""
    blocks: dict[str, list[list[fmpq]]] = {}
    for head in model["heads"]:
        key = repr(head["exp_W"])
        V = [[_q(e) for e in row] for row in head["V"]]
        if key in blocks:
            blocks[key] = [[a + b for a, b in zip(r, s)] for r, s in zip(blocks[key], V)]
        else:
            blocks[key] = V
    return list(blocks.values())


def _transpose_times(V: list[list[fmpq]], u: list[fmpq]) -> list[fmpq]:
    """``V^T u``."""
    d = len(V)
    return [sum((V[r][c] * u[r] for r in range(d)), fmpq(0)) for c in range(d)]


def _odd_values(model: dict) -> list[list[fmpq]]:
    """``v_h = V_h^T sum_j a_j u_j`` for every merged head."""
    d = len(model["U"][0])
    s = [sum((_q(a) * _q(u[i]) for u, a in zip(model["U"], model["a"])), fmpq(0)) for i in range(d)]
    return [_transpose_times(V, s) for V in _merged_blocks(model)]


def _lines(model: dict) -> list[list[fmpq]]:
    """The ``J_L`` of the lines with ``kappa_L != 0``."""
    blocks = _merged_blocks(model)
    kappa: dict[tuple, fmpq] = {}
    for u, a in zip(model["U"], model["a"]):
        u = [_q(x) for x in u]
        beta = [x for V in blocks for x in _transpose_times(V, u)]
        if not any(beta):
            continue
        c = next(x for x in beta if x != 0)
        w = tuple(x / c for x in beta)
        kappa[w] = kappa.get(w, fmpq(0)) + _q(a) * abs(c)
    d = len(model["U"][0])
    return [[sum((w[h * d + i] for h in range(len(blocks))), fmpq(0)) for i in range(d)]
            for w, k in kappa.items() if k != 0]


def _parallel(p: list[fmpq], q: list[fmpq]) -> bool:
    return all(p[i] * q[j] == p[j] * q[i] for i in range(len(p)) for j in range(i))


def violated(model: dict, heads: int, condition: str) -> bool:
    """Is ``condition`` (a ``Condition`` name) violated by ``model`` (JSON) learned with ``heads`` known?"""
    residual = bool(model.get("residual"))
    if condition == "NO_RESIDUAL":
        return residual
    if condition == "HEADS_VISIBLE":
        return any(not any(v) for v in _odd_values(model))
    if condition == "ODD_ATTENTION":
        return residual or sum(1 for v in _odd_values(model) if any(v)) != heads
    if condition == "LINES_ON_SLICE":
        lines = _lines(model)
        return (any(not any(J) for J in lines)
                or any(_parallel(lines[i], lines[j]) for i in range(len(lines)) for j in range(i)))
    if condition == "PER_HEAD_SPLIT":
        return len(model["U"][0]) == 1 and heads >= 2
    return False
