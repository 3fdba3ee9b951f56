"""A one-layer Transformer: multi-head attention, then a bias-free ReLU FFN, exactly.

    o_h(X) = sum_i softmax_i(x_i^T W_h x_N) x_i        (W_h = log exp_W_h entrywise)
    y(X)   = sum_h V_h o_h(X)                          (V_h in Q^{d x d})
    T(X)   = sum_j a_j ReLU(u_j^T y(X))                 (u_j in Q^d, a_j in Q)

With integer tokens every output is an exact ``flint.fmpq``.

>>> t = Transformer([[[2, 1], [1, 3]]], [[[1, 0], [0, 1]]], [[1, -1]], [2])
>>> t([(1, 0), (0, 1)])          # o = (1/4, 3/4), y = o, u.y = -1/2, ReLU = 0
0
>>> t([(0, 1), (1, 0)])          # o = (2/3, 1/3): 2 * ReLU(1/3)
2/3
>>> t == Transformer.from_json(t.to_json())
True
"""

from __future__ import annotations

import numbers
import random as _random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from flint import fmpq

from .. import display
from ..errors import InvalidModelError, InvalidQueryError
from ..exact import as_rational, dot
from ..jsonio import JsonModel, json_object
from ..limits import DEFAULT_LIMITS, Limits, check_transformer_random
from ..model import Head
from ..validate import describe, is_sequence
from ..validate import seed as check_seed
from .canonical import CanonicalTransformer, canonical_form

__all__ = ["TRANSFORMER_FORMAT", "Transformer", "head_outputs", "rational"]

TRANSFORMER_FORMAT = "exactlearn.transformer/1"

Vector = tuple[fmpq, ...]
Matrix = tuple[Vector, ...]


def rational(value: Any, what: str) -> fmpq:
    """``value`` (int, Fraction, fmpq, ``"p/q"``) as an fmpq; floats and others refused.

    Strings are read by :func:`exactlearn.exact.as_rational` (ASCII digits only), like every
    model file of the package.
    """
    if isinstance(value, (bool, float)):
        raise InvalidModelError(f"{what}: expected an exact rational, got {describe(value)}")
    if (not isinstance(value, (str, numbers.Rational)) and hasattr(value, "numerator")
            and hasattr(value, "denominator")):
        return fmpq(int(value.numerator), int(value.denominator))
    return as_rational(value, what, InvalidModelError)


def _vector(entries: Any, d: int, what: str) -> Vector:
    if not is_sequence(entries) or len(entries) != d:
        raise InvalidModelError(f"{what}: expected a vector (a list) of {d} rationals")
    return tuple(rational(e, f"{what}[{i}]") for i, e in enumerate(entries))


def _matrix(rows: Any, rows_n: int, cols: int, what: str) -> Matrix:
    if not is_sequence(rows) or len(rows) != rows_n:
        raise InvalidModelError(f"{what}: expected {rows_n} rows of {cols} rationals")
    return tuple(_vector(r, cols, f"{what}[{i}]") for i, r in enumerate(rows))


def _score_factors(exp_W: Matrix, last: Sequence[int]) -> list[fmpq]:
    out = []
    for row in exp_W:
        g = fmpq(1)
        for e, t in zip(row, last):
            if t:
                g *= e**t
        out.append(g)
    return out


def head_outputs(exp_Ws: Sequence[Matrix], tokens: Sequence[tuple[int, ...]]) -> list[Vector]:
    """The exact attention outputs ``o_h(X)`` of heads with the given ``exp_W``.

    Weights are taken relative to the final token: ``exp((t - x_N)^T W x_N)``.
    """
    last = tokens[-1]
    counts = Counter(tokens)
    d = len(last)
    out = []
    for exp_W in exp_Ws:
        factors = _score_factors(exp_W, last)
        total = fmpq(0)
        acc = [fmpq(0)] * d
        for token, mult in counts.items():
            w = fmpq(mult)
            for g, t, s in zip(factors, token, last):
                if t != s:
                    w *= g ** (t - s)
            total += w
            for i, t in enumerate(token):
                if t:
                    acc[i] += w * t
        out.append(tuple(x / total for x in acc))
    return out


class Transformer(display.Shown, JsonModel):
    """Attention heads ``(exp_W_h, V_h)``, hidden weights ``U`` (m x d), output weights ``a``.

    ``residual=True`` adds the last token: ``y = x_N + sum_h V_h o_h``.

    ``Transformer(exp_Ws, Vs, U, a)`` takes any exact rationals. Calling the
    model on integer tokens returns ``T(X)`` exactly. ``==`` compares canonical
    forms (:meth:`canonical`): equal forms compute the same function.
    """

    def __init__(self, exp_Ws: Any, Vs: Any, U: Any, a: Any, *, residual: bool = False):
        for name, value in (("exp_Ws", exp_Ws), ("Vs", Vs), ("U", U), ("a", a)):
            if not is_sequence(value):
                raise InvalidModelError(f"{name}: expected a list, got {type(value).__name__}")
        if not exp_Ws:
            raise InvalidModelError("a Transformer needs at least one attention head")
        if not U:
            raise InvalidModelError("a Transformer needs at least one FFN neuron (U has no rows); "
                                    "the zero FFN is U = [[0] * d], a = [0]")
        if len(exp_Ws) != len(Vs):
            raise InvalidModelError(f"got {len(exp_Ws)} exp_W matrices but {len(Vs)} value matrices V")
        if len(U) != len(a):
            raise InvalidModelError(f"got {len(U)} hidden weight rows u_j but {len(a)} output weights a_j")
        heads = [Head(e, [0] * len(e)) for e in exp_Ws]  # validates: square, positive rationals
        d = heads[0].d
        if any(h.d != d for h in heads):
            raise InvalidModelError("every exp_W must be d x d with the same d")
        self.d = d
        self.exp_Ws: tuple[Matrix, ...] = tuple(h.exp_W for h in heads)
        self.Vs: tuple[Matrix, ...] = tuple(_matrix(V, d, d, f"V[{h}]") for h, V in enumerate(Vs))
        self.U: Matrix = tuple(_vector(u, d, f"U[{j}]") for j, u in enumerate(U))
        self.a: Vector = tuple(rational(x, f"a[{j}]") for j, x in enumerate(a))
        if not isinstance(residual, bool):
            raise InvalidModelError(f"residual must be True or False, got {residual!r}")
        self.residual = residual

    # -- construction ---------------------------------------------------------
    @classmethod
    def random(cls, d: int, heads: int, width: int, seed: int | str = 0, *, height: int = 30,
               residual: bool = False, limits: Limits = DEFAULT_LIMITS) -> Transformer:
        """A random model: distinct ``exp_W`` (entries ``p/q``, ``p, q <= height``),
        ``V`` entries ``p/q`` (``|p| <= 5``, ``q <= 5``), ``u_j`` nonzero integer
        vectors in ``[-3, 3]^d``, ``a_j = +-p/q`` (``p <= 5``, ``q <= 3``), mixed signs.
        Sizes above ``limits`` (``model_d``, ``model_heads``, ``width``,
        ``model_entries``, ``height``) are refused before drawing.
        """
        check_transformer_random(d, heads, width, height, limits, error=InvalidModelError)
        check_seed(seed)
        if (height * height) ** min(d * d, heads.bit_length()) < heads:  # p/q, p, q <= height: <= height^2
            raise InvalidModelError(f"height = {height} allows fewer than heads = {heads} different exp_W "
                                    f"matrices of size {d} x {d}; increase height")
        rng = _random.Random(f"exactlearn.transformer.random:{d}:{heads}:{width}:{seed}:{height}")
        exp_Ws: list = []
        seen: set = set()
        for _ in range(1000 * heads):
            if len(exp_Ws) == heads:
                break
            e = tuple(tuple(fmpq(rng.randint(1, height), rng.randint(1, height)) for _ in range(d))
                      for _ in range(d))
            if e not in seen:
                seen.add(e)
                exp_Ws.append(e)
        if len(exp_Ws) < heads:
            raise InvalidModelError(f"could not draw {heads} different exp_W matrices of size {d} x {d} "
                                    f"with entries p/q, p, q <= height = {height}; increase height")
        Vs = [[[fmpq(rng.randint(-5, 5), rng.randint(1, 5)) for _ in range(d)] for _ in range(d)]
              for _ in range(heads)]
        U: list = []
        while len(U) < width:
            u = [rng.randint(-3, 3) for _ in range(d)]
            if any(u):
                U.append(u)
        a = [fmpq(rng.randint(1, 5), rng.randint(1, 3)) * rng.choice((-1, 1)) for _ in range(width)]
        return cls(exp_Ws, Vs, U, a, residual=residual)

    # -- evaluation -----------------------------------------------------------
    @property
    def heads(self) -> int:
        return len(self.exp_Ws)

    @property
    def width(self) -> int:
        return len(self.a)

    def _tokens(self, tokens: Any) -> list[tuple[int, ...]]:
        if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__len__") or len(tokens) == 0:
            raise InvalidQueryError("a query is a non-empty sequence of integer tokens")
        out = []
        for t in tokens:
            if not hasattr(t, "__len__") or len(t) != self.d or not all(
                isinstance(x, int) and not isinstance(x, bool) for x in t
            ):
                raise InvalidQueryError(f"every token must be a tuple of {self.d} integers, got {t!r}")
            out.append(tuple(t))
        return out

    def outputs(self, tokens: Any) -> list[Vector]:
        """The attention outputs ``o_h(X)``, one vector per head."""
        return head_outputs(self.exp_Ws, self._tokens(tokens))

    def __call__(self, tokens: Any) -> fmpq:
        """``T(X)`` exactly."""
        tokens = self._tokens(tokens)
        o = head_outputs(self.exp_Ws, tokens)
        y = [sum((V[r][c] * o_h[c] for V, o_h in zip(self.Vs, o) for c in range(self.d)), fmpq(0))
             + (tokens[-1][r] if self.residual else 0) for r in range(self.d)]
        total = fmpq(0)
        for u, a in zip(self.U, self.a):
            s = dot(u, y)
            if s > 0:
                total += a * s
        return total

    # -- canonical form -------------------------------------------------------
    def canonical(self) -> CanonicalTransformer:
        """Attention heads merged by ``exp_W``, the FFN as a linear part plus merged lines."""
        return canonical_form(self.d, self.exp_Ws, self.Vs, self.U, self.a, self.residual)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Transformer):
            return NotImplemented
        return self.canonical() == other.canonical()

    def __hash__(self) -> int:
        return hash(self.canonical())

    # -- serialisation --------------------------------------------------------
    def to_dict(self) -> dict:
        q = str
        return {
            "format": TRANSFORMER_FORMAT,
            "d": self.d,
            "heads": [{"exp_W": [[q(x) for x in r] for r in e], "V": [[q(x) for x in r] for r in V]}
                      for e, V in zip(self.exp_Ws, self.Vs)],
            "U": [[q(x) for x in u] for u in self.U],
            "a": [q(x) for x in self.a],
        } | ({"residual": True} if self.residual else {})

    @classmethod
    def from_dict(cls, data: Any) -> Transformer:
        data = json_object(data, "a Transformer", TRANSFORMER_FORMAT)
        heads = data.get("heads")
        if not isinstance(heads, list) or not all(isinstance(h, dict) and "exp_W" in h and "V" in h
                                                  for h in heads):
            raise InvalidModelError("a Transformer needs 'heads': a list of {'exp_W': ..., 'V': ...}")
        for key in ("U", "a"):
            if key not in data:
                raise InvalidModelError(f"a Transformer needs the key {key!r}")
        model = cls([h["exp_W"] for h in heads], [h["V"] for h in heads], data["U"], data["a"],
                    residual=data.get("residual", False))
        if "d" in data and data["d"] != model.d:
            raise InvalidModelError(f"'d' is {data['d']!r} but the heads have width {model.d}")
        return model

    def __repr__(self) -> str:
        return transformer_code(self)

    def _lines(self) -> list[str]:
        return transformer_lines(self)

    def _latex_lines(self) -> list[str]:
        return transformer_latex(self)


def transformer_code(t: Transformer) -> str:
    """``Transformer(exp_Ws=[...], Vs=[...], U=[...], a=[...])``: code (rationals as ``'p/q'``)."""
    mats = display.code_matrix
    return (f"Transformer(exp_Ws=[{', '.join(mats(e) for e in t.exp_Ws)}], "
            f"Vs=[{', '.join(mats(V) for V in t.Vs)}], U={mats(t.U)}, a={display.code_vector(t.a)}"
            + (", residual=True)" if t.residual else ")"))


def transformer_lines(t: Transformer) -> list[str]:
    """A header, each head's ``exp_W`` and ``V`` as grids, then ``U`` and ``a``."""
    out = [f"Transformer: d = {t.d}, {display.plural(t.heads, 'head')}, width {t.width}"
           + (", residual y = x_N + sum_h V_h o_h" if t.residual else "")]
    for h, (e, V) in enumerate(zip(t.exp_Ws, t.Vs)):
        out += display.block(f"heads[{h}].", [("exp_W", e), ("V", V)])
    return out + display.block("", [("U", t.U), ("a", t.a)])


def transformer_latex(t: Transformer) -> list[str]:
    pm = display.pmatrix
    out = [rf"\text{{Transformer: }} d = {t.d},\ H = {t.heads},\ m = {t.width}"
           + (r",\ \text{residual}" if t.residual else "")]
    out += [rf"e^{{W_{{{h}}}}} = {pm(e)},\quad V_{{{h}}} = {pm(V)}"
            for h, (e, V) in enumerate(zip(t.exp_Ws, t.Vs))]
    return out + [rf"U = {pm(t.U)},\quad a = {pm([t.a])}"]
