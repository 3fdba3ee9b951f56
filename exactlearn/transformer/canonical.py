"""The canonical form of a one-layer Transformer (docs/transformer.md, section 1).

Write ``phi(X) = (o_1(X), ..., o_H(X))`` and ``beta_j = (V_1^T u_j, ..., V_H^T u_j)``,
so ``T(X) = F(phi(X))`` with ``F(phi) = sum_j a_j ReLU(beta_j . phi)``. Heads
with equal ``exp_W`` have equal outputs, so their blocks add. With
``ReLU(t) = (t + |t|) / 2``::

    F(phi) = l . phi + 1/2 sum_L kappa_L |w_L . phi|,   l = 1/2 sum_j a_j beta_j,

where the lines ``w_L`` are the distinct directions ``+-beta_j`` scaled so that
their first nonzero entry is 1, and ``kappa_L = sum_{beta_j on L} a_j |c_j|``
(``beta_j = c_j w_L``). Lines with ``kappa_L = 0`` and heads whose block is zero
in ``l`` and every ``w_L`` are dropped; heads are sorted by ``exp_W``. The
zero function has one form (no heads, no lines, no residual block).
Equal canonical forms compute the same function.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from flint import fmpq, fmpq_mat

from .. import display
from ..errors import InvalidModelError
from ..exact import dot

__all__ = ["CanonicalTransformer", "Line", "Weights", "build_weights", "canonical_form", "form_from_parts",
           "normalise_line"]

Vector = tuple[fmpq, ...]
Matrix = tuple[Vector, ...]


def normalise_line(w: Sequence[fmpq]) -> tuple[tuple[fmpq, ...], fmpq]:
    """``(w / c, c)`` with ``c`` the first nonzero entry of ``w`` (``w != 0``)."""
    c = next(x for x in w if x != 0)
    return tuple(x / c for x in w), c


def _head_key(exp_W: Matrix) -> tuple:
    return tuple(e for row in exp_W for e in row)


class Line(NamedTuple):
    """A line of the canonical form: ``w`` holds one block ``w_Lh`` per head (then ``w_L,res``
    with a residual), its first nonzero entry 1; ``kappa`` is ``kappa_L != 0``."""

    w: tuple[Vector, ...]
    kappa: fmpq


class Weights(NamedTuple):
    """The weights ``(V_h)_h``, ``U`` (rows ``u_j``) and ``a`` of a Transformer over given heads."""

    Vs: list
    U: list
    a: list


@dataclass(frozen=True, repr=False)
class CanonicalTransformer(display.Shown):
    """``F(phi) = linear . phi + 1/2 sum kappa |w . phi|`` over the canonical heads.

    ``heads``: the ``exp_W`` of each canonical head (sorted); ``linear``: one
    vector ``l_h`` in ``Q^d`` per head; ``lines``: one :class:`Line` per line, sorted.
    """

    d: int
    heads: tuple[Matrix, ...]
    linear: tuple[Vector, ...]
    lines: tuple[Line, ...]
    residual: bool = False  # then ``linear`` and every ``w`` end with a block for ``x_N``

    def ffn(self, outputs: Sequence[Sequence[fmpq]]) -> fmpq:
        """``F(phi)`` for ``phi = (o_1, ..., o_H)`` of the canonical heads (then ``x_N`` with a residual)."""
        flat = [x for o in outputs for x in o]
        total = dot([y for v in self.linear for y in v], flat)
        for w, kappa in self.lines:
            total += kappa * abs(dot([y for v in w for y in v], flat)) / 2
        return total

    def to_dict(self) -> dict:
        def vec(v):
            return [str(x) for x in v]

        return {
            "d": self.d,
            "residual": self.residual,
            "heads": [[vec(r) for r in e] for e in self.heads],
            "linear": [vec(v) for v in self.linear],
            "lines": [{"w": [vec(v) for v in w], "kappa": str(k)} for w, k in self.lines],
        }

    def __repr__(self) -> str:
        return display.summary("CanonicalTransformer", f"d={self.d}",
                               [display.plural(len(self.heads), "head"),
                                display.plural(len(self.lines), "line")]
                               + (["residual"] if self.residual else []))

    def _lines(self) -> list[str]:
        """The heads' ``exp_W``; ``linear`` and each line's ``w`` one block per row; each ``kappa``."""
        out = display.wrapped(repr(self))
        for h, e in enumerate(self.heads):
            out += display.block(f"heads[{h}].", [("exp_W", e)])
        out += display.block("", [("linear", self.linear)]) if self.linear else []
        for j, (w, kappa) in enumerate(self.lines):
            out += display.block(f"lines[{j}].", [("w", w), ("kappa", kappa)])
        return out

    def _latex_lines(self) -> list[str]:
        pm = display.pmatrix
        out = [r"\text{" + repr(self)[1:-1] + "}"]
        out += [rf"e^{{W_{{{h}}}}} = {pm(e)}" for h, e in enumerate(self.heads)]
        out += [rf"l = {pm(self.linear)}"] if self.linear else []
        return out + [rf"w_{{{j}}} = {pm(w)},\quad \kappa_{{{j}}} = {display.latex(k)}"
                      for j, (w, k) in enumerate(self.lines)]


def canonical_form(d: int, exp_Ws: Sequence[Matrix], Vs: Sequence[Matrix], U: Sequence[Vector],
                   a: Sequence[fmpq], residual: bool = False) -> CanonicalTransformer:
    """The canonical form of the Transformer ``(exp_Ws, Vs, U, a)`` (module docstring).

    With a residual connection ``y = x_N + sum_h V_h o_h`` the residual is one more
    block, ``u_j`` itself in ``beta_j``; it is kept last and never dropped.
    """
    groups: dict[Matrix, list[list[fmpq]]] = {}
    for e, V in zip(exp_Ws, Vs):
        acc = groups.setdefault(e, [[fmpq(0)] * d for _ in range(d)])
        for r in range(d):
            for c in range(d):
                acc[r][c] += V[r][c]
    order = sorted(groups, key=_head_key)
    # beta_j block g = Vsum_g^T u_j
    betas: list[list[fmpq]] = []
    for u in U:
        beta: list[fmpq] = []
        for e in order:
            Vsum = groups[e]
            beta.extend(sum((Vsum[r][c] * u[r] for r in range(d)), fmpq(0)) for c in range(d))
        if residual:
            beta.extend(u)
        betas.append(beta)
    n = (len(order) + residual) * d
    linear = [fmpq(0)] * n
    kappas: dict[tuple[fmpq, ...], fmpq] = {}
    for beta, coef in zip(betas, a):
        for i in range(n):
            linear[i] += coef * beta[i] / 2
        if any(beta):
            w, scale = normalise_line(beta)
            kappas[w] = kappas.get(w, fmpq(0)) + coef * abs(scale)
    lines = [(w, k) for w, k in kappas.items() if k != 0]
    if residual and not lines and not any(linear):  # the zero function: one form, with or without a residual
        return CanonicalTransformer(d=d, heads=(), linear=(), lines=(), residual=False)
    keep = [g for g in range(len(order))
            if any(linear[g * d:(g + 1) * d]) or any(any(w[g * d:(g + 1) * d]) for w, _ in lines)]
    keep += [len(order)] if residual else []

    def blocks(v):
        return tuple(tuple(v[g * d:(g + 1) * d]) for g in keep)

    return CanonicalTransformer(
        d=d,
        heads=tuple(order[g] for g in keep if g < len(order)),
        linear=blocks(linear),
        lines=tuple(sorted(Line(blocks(w), k) for w, k in lines)),
        residual=residual,
    )


def build_weights(form: CanonicalTransformer) -> Weights:
    """``(Vs, U, a)`` of a width-``d`` Transformer over ``form.heads`` with canonical form ``form``.

    The vectors ``linear`` and ``w_L`` (in ``Q^{Hd}``) span a row space of
    dimension ``r``; with a basis ``B`` (``r x Hd``), ``V_h`` holds the columns of
    block ``h`` of ``B`` (padded to ``d`` rows), so ``y = (B phi, 0)``. Neurons
    ``(1, c_l)``, ``(-1, -c_l)`` give the linear part, ``(kappa/2, +-c_L)`` each line.
    Raises InvalidModelError if ``r > d``.
    """
    if form.residual:
        return _build_residual(form)
    d, H = form.d, len(form.heads)
    rows = [[x for v in form.linear for x in v]] + [[x for v in w for x in v] for w, _ in form.lines]
    rows = [r for r in rows if any(r)]
    if not rows:
        return Weights([[[fmpq(0)] * d for _ in range(d)] for _ in range(H)], [], [])
    M = fmpq_mat(len(rows), H * d, [x for r in rows for x in r])
    R, rank = M.rref()
    if rank > d:
        raise InvalidModelError(f"the FFN needs a hidden layer of width {rank} > d = {d}")
    basis = [[R[i, c] for c in range(H * d)] for i in range(rank)]
    pivots = [next(c for c in range(H * d) if basis[i][c] != 0) for i in range(rank)]
    Vs = [[[basis[i][h * d + c] if i < rank else fmpq(0) for c in range(d)] for i in range(d)]
          for h in range(H)]

    def coords(v):  # v = sum_i coef_i basis_i with reduced rows: coef_i = v[pivot_i]
        return [v[p] for p in pivots] + [fmpq(0)] * (d - rank)

    U, a = [], []
    lin = [x for v in form.linear for x in v]
    if any(lin):
        c = coords(lin)
        U += [c, [-x for x in c]]
        a += [fmpq(1), fmpq(-1)]
    for w, kappa in form.lines:
        c = coords([x for v in w for x in v])
        U += [c, [-x for x in c]]
        a += [kappa / 2, kappa / 2]
    return Weights(Vs, U, a)


def form_from_parts(d: int, heads: Sequence[Matrix], linear: Sequence[Vector], lines: Sequence[Line],
                    residual: bool = False) -> CanonicalTransformer:
    """The canonical form of ``F = linear . phi + 1/2 sum kappa |w . phi|`` over ``heads``
    (and a last block for ``x_N`` with a residual)."""
    order = sorted(range(len(heads)), key=lambda h: _head_key(heads[h])) + ([len(heads)] if residual else [])
    merged: dict[tuple, fmpq] = {}
    for w, kappa in lines:
        flat = [x for h in order for x in w[h]]
        if not any(flat):
            continue
        direction, c = normalise_line(flat)
        merged[direction] = merged.get(direction, fmpq(0)) + kappa * abs(c)
    out = [Line(tuple(tuple(direction[i * d:(i + 1) * d]) for i in range(len(order))), k)
           for direction, k in merged.items() if k != 0]
    return CanonicalTransformer(
        d=d,
        heads=tuple(heads[h] for h in order if h < len(heads)),
        linear=tuple(tuple(linear[h]) for h in order),
        lines=tuple(sorted(out)),
        residual=residual,
    )


class _Neuron(NamedTuple):
    """A neuron direction ``u`` (the residual block) and the head blocks ``V_h^T u`` it must give."""

    u: Vector
    heads: tuple[Vector, ...]


def _build_residual(form: CanonicalTransformer) -> Weights:
    """``(Vs, U, a)`` with ``y = x_N + sum_h V_h o_h``: a neuron on line ``L`` is ``u = w_L,res``.

    ``V_h`` solves ``V_h^T u = w_h`` for every line and for ``u = l_res`` (the linear
    part); raises InvalidModelError if no such ``V_h`` exists.
    """
    d, H = form.d, len(form.heads)
    residual_linear = form.linear[H]  # the residual's block comes last
    has_linear = any(residual_linear) or any(any(v) for v in form.linear[:H])
    neurons = [_Neuron(residual_linear, form.linear[:H])] if has_linear else []
    neurons += [_Neuron(line.w[H], line.w[:H]) for line in form.lines]
    if any(not any(neuron.u) for neuron in neurons):
        raise InvalidModelError("a line or the linear part has no residual part: "
                                "no residual Transformer has it")
    Vs = []
    for h in range(H):
        rows = [list(neuron.u) + [neuron.heads[h][c] for c in range(d)] for neuron in neurons]
        Vs.append(_solve_transposed(rows, d) if rows else [[fmpq(0)] * d for _ in range(d)])
    U, a = [], []
    if any(residual_linear):
        U += [list(residual_linear), [-x for x in residual_linear]]
        a += [fmpq(1), fmpq(-1)]
    for line in form.lines:
        U += [list(line.w[H]), [-x for x in line.w[H]]]
        a += [line.kappa / 2, line.kappa / 2]
    return Weights(Vs, U, a)


def _solve_transposed(rows: list[list[fmpq]], d: int) -> list[list[fmpq]]:
    """``V`` (d x d) with ``u^T V = w`` for every row ``[u | w]`` (any solution), or InvalidModelError."""
    n = len(rows)
    M = fmpq_mat(n, 2 * d, [x for r in rows for x in r])
    R, rank = M.rref()
    V = [[fmpq(0)] * d for _ in range(d)]
    for i in range(rank):
        pivot = next(c for c in range(2 * d) if R[i, c] != 0)
        if pivot >= d:
            raise InvalidModelError("the lines' residual parts do not determine a linear map V_h^T")
        # free unknowns (rows of V for non-pivot u-coordinates) are 0: V[pivot] = the row's w part
        for c in range(d):
            V[pivot][c] = R[i, d + c]
    return V
