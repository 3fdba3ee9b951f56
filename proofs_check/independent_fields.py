"""An independent evaluator of models over a number field ``K = Q(a)``: sympy only.

This module imports nothing from exactlearn (nor python-flint): it reads a
model from its JSON form, whose ``field`` entry gives the minimal polynomial
``f`` (as text) and an isolating interval of the real root ``a`` stands for.
An element of ``K`` is one of sympy's algebraic numbers, an ``ANP`` (the
elements of sympy's ``AlgebraicField``): a rational polynomial in ``a``
reduced modulo ``f``, with sympy's arithmetic and inverses. Signs in the real
embedding are decided exactly, by bisecting the isolating interval with
Sturm counts (``Poly.count_roots``) until the element's polynomial has no root
in it; no float and no ``evalf`` is involved. The defining formula
(docs/algorithm.md section 1) is evaluated as written,

    f(X) = sum_h sum_i softmax_i(x_i^T W_h x_N) * v_h^T x_i ,

with ``exp(x_i^T W x_N) = prod_{a,b} exp_W[a][b] ** (x_i[a] x_N[b])``, an
element of ``K`` for integer tokens. The canonical form (merge heads with
equal ``exp_W``, sum their ``v``, drop a zero sum) is computed here too.

>>> one = {"field": {"polynomial": "a^2 - 2", "root_interval": ["1", "2"]},
...        "heads": [{"exp_W": [["1 + a"]], "v": ["a"]}]}
>>> evaluate(parse_model(one), [(0,), (1,)])      # ((1 + a) a) / (1 + (1 + a)) = 1
(1, 0)
>>> F = parse_model(one).field
>>> F.sign(F.element("3/2 - a")), norm(F, F.element("1 + a"))
(1, -1)
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import sympy as sp
from sympy.polys.polyclasses import ANP
from sympy.polys.polyerrors import NotInvertible

__all__ = ["FieldEvaluationError", "SympyField", "SympyModel", "canonical", "evaluate", "is_unit", "norm",
           "parse_model"]

T = sp.Symbol("t")


class FieldEvaluationError(ValueError):
    """A model's JSON cannot be read or evaluated as a model over a number field."""


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _walk(node: ast.AST, name: str, const: Callable[[int], Any], gen: Any) -> Any:
    """The value of a parsed text: integers (``const``), the generator ``name`` (``gen``), ``+ - * /`` and
    powers with an integer exponent, computed with the leaves' own arithmetic (nothing is evaluated as
    Python)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return const(node.value)
    if isinstance(node, ast.Name) and node.id == name:
        return gen
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _walk(node.operand, name, const, gen)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_walk(node.left, name, const, gen), _walk(node.right, name, const, gen))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and _integer(node.right) is not None:
        return _walk(node.left, name, const, gen) ** _integer(node.right)
    raise FieldEvaluationError(f"not an expression in {name}: {ast.unparse(node)}")


def _integer(node: ast.AST) -> int | None:
    """An integer exponent (``3`` or ``-3``), else ``None``."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1, node.operand
    return sign * node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _parse(text: Any) -> tuple[ast.AST, set[str]]:
    try:
        tree = ast.parse(str(text).replace("^", "**"), mode="eval").body
    except SyntaxError:
        raise FieldEvaluationError(f"not a polynomial text: {text!r}") from None
    return tree, {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _minimal_polynomial(text: Any) -> tuple[str, sp.Poly]:
    """``(generator name, Poly in t over QQ)`` of a text such as ``"a^3 - 2"``."""
    tree, names = _parse(text)
    if len(names) > 1:
        raise FieldEvaluationError(f"{text!r} is not a polynomial in one generator")
    name = names.pop() if names else "a"
    expr = _walk(tree, name, sp.Integer, T)
    if expr.has(sp.zoo, sp.nan, sp.oo) or not expr.is_polynomial(T):
        raise FieldEvaluationError(f"{text!r} is not a polynomial in {name}")
    return name, sp.Poly(expr, T, domain=sp.QQ)


@dataclass(frozen=True)
class SympyField:
    """``K = Q(t)/(f)`` with ``t`` the real root of ``f`` in ``[lo, hi]`` (exactly one; checked)."""

    name: str
    f: sp.Poly  # monic, irreducible over QQ
    lo: sp.Rational
    hi: sp.Rational

    @classmethod
    def from_json(cls, entry: dict) -> SympyField:
        name, f = _minimal_polynomial(entry["polynomial"])
        lo, hi = (sp.Rational(x) for x in entry["root_interval"])
        if f.degree() < 1 or not f.is_irreducible:
            raise FieldEvaluationError(f"{entry['polynomial']!r} is not irreducible over Q")
        if not lo <= hi or f.count_roots(lo, hi) != 1:
            raise FieldEvaluationError(f"[{lo}, {hi}] does not isolate one real root of "
                                       f"{entry['polynomial']}")
        return cls(name, f.monic(), lo, hi)

    @property
    def degree(self) -> int:
        return self.f.degree()

    def anp(self, poly: sp.Poly) -> ANP:
        return ANP(poly.rem(self.f).rep.to_list(), self.f.rep.to_list(), sp.QQ)

    def element(self, text: Any) -> ANP:
        """An element from its text (``"3/2 - a/5"``), computed with sympy's algebraic numbers."""
        tree, _ = _parse(text)
        mod = self.f.rep.to_list()
        try:
            return _walk(tree, self.name, lambda n: ANP([sp.QQ(n)], mod, sp.QQ), self.generator)
        except (ZeroDivisionError, NotInvertible):
            raise FieldEvaluationError(f"{text!r} divides by zero in K") from None

    @cached_property
    def generator(self) -> ANP:
        return self.anp(sp.Poly(T, T, domain=sp.QQ))

    def coordinates(self, x: ANP) -> tuple[sp.Rational, ...]:
        """The ``n`` coordinates over ``1, a, ..., a^(n-1)`` (sympy ``Rational``)."""
        c = [sp.Rational(int(q.numerator), int(q.denominator)) for q in reversed(x.to_list())]
        return tuple(c + [sp.Rational(0)] * (self.degree - len(c)))

    def sign(self, x: ANP) -> int:
        """The sign of ``x`` at the root, exactly: shrink ``[lo, hi]`` (keeping the root of ``f`` in it)
        until ``x``'s polynomial has no root there; its sign at ``lo`` is then its sign at the root."""
        g = sp.Poly(x.to_list() or [0], T, domain=sp.QQ)
        if g.is_zero:
            return 0
        lo, hi = self.lo, self.hi
        while g.count_roots(lo, hi):
            mid = (lo + hi) / 2
            if self.f.eval(mid) == 0:  # a rational root: f has degree 1, x is a nonzero constant
                return int(sp.sign(g.eval(mid)))
            lo, hi = (lo, mid) if self.f.count_roots(lo, mid) else (mid, hi)
        return int(sp.sign(g.eval(lo)))

    def same_as(self, other: SympyField) -> bool:
        """The same field and the same root: equal minimal polynomials, intervals sharing the root."""
        if self.f.rep.to_list() != other.f.rep.to_list():
            return False
        lo, hi = max(self.lo, other.lo), min(self.hi, other.hi)
        return lo <= hi and self.f.count_roots(lo, hi) == 1


@dataclass(frozen=True)
class SympyModel:
    """A model read from JSON: its field and heads ``(exp_W, v)`` of elements (every exp_W entry > 0)."""

    field: SympyField
    heads: tuple[tuple[tuple[tuple[ANP, ...], ...], tuple[ANP, ...]], ...]
    source: dict = field(default_factory=dict, compare=False, repr=False)  # the JSON it was read from


def parse_model(model: dict, fields: dict | None = None) -> SympyModel:
    """A model's JSON (with a ``field`` entry) as a :class:`SympyModel`; an ``exp_W`` entry that is not
    positive in the real embedding is refused (exp of a real number is positive). ``fields`` keeps the
    fields read so far (by their JSON entry), so that each is read and checked once."""
    if "field" not in model:
        raise FieldEvaluationError("the model's JSON has no 'field' entry")
    entry = model["field"]
    key = (str(entry.get("polynomial")), tuple(str(x) for x in entry.get("root_interval", ())))
    F = None if fields is None else fields.get(key)
    if F is None:
        F = SympyField.from_json(entry)
        if fields is not None:
            fields[key] = F
    heads = []
    for h, head in enumerate(model["heads"]):
        E = tuple(tuple(F.element(e) for e in row) for row in head["exp_W"])
        for a, row in enumerate(E):
            for b, e in enumerate(row):
                if F.sign(e) <= 0:
                    raise FieldEvaluationError(f"head {h}: exp_W[{a}][{b}] = {head['exp_W'][a][b]} is not "
                                               f"positive at the root")
        heads.append((E, tuple(F.element(x) for x in head["v"])))
    return SympyModel(F, tuple(heads), model)


def evaluate(model: SympyModel, tokens: Sequence[Sequence[int]]) -> tuple[sp.Rational, ...]:
    """``f(X)`` for integer tokens: the coordinates of the answer in ``K``."""
    F, last = model.field, tokens[-1]
    zero = F.anp(sp.Poly(0, T, domain=sp.QQ))
    one = F.anp(sp.Poly(1, T, domain=sp.QQ))
    total = zero
    for E, v in model.heads:
        num, den = zero, zero
        for x in tokens:
            w = one
            for a, row in enumerate(E):
                for b, e in enumerate(row):
                    if x[a] * last[b]:
                        w = w * e ** (x[a] * last[b])
            value = zero
            for vi, xi in zip(v, x):
                value = value + vi * sp.QQ(int(xi))
            num, den = num + w * value, den + w
        total = total + num * den ** -1
    return F.coordinates(total)


def canonical(model: SympyModel) -> list[tuple]:
    """The canonical form as sorted coordinates: heads with equal ``exp_W`` merged, their ``v`` summed, a
    zero sum dropped; each head ``(exp_W coordinates, v coordinates)``."""
    F = model.field
    sums: dict[tuple, list[ANP]] = {}
    for E, v in model.heads:
        key = tuple(F.coordinates(e) for row in E for e in row)
        sums[key] = [p + q for p, q in zip(sums[key], v)] if key in sums else list(v)
    return sorted((key, tuple(F.coordinates(x) for x in v)) for key, v in sums.items()
                  if any(not x.is_zero for x in v))


def norm(F: SympyField, x: ANP) -> sp.Rational:
    """``N(x)``, the product of ``x``'s conjugates: the resultant ``Res(f, g)`` of the monic ``f`` and
    ``x``'s polynomial ``g``."""
    g = sp.Poly(x.to_list() or [0], T, domain=sp.QQ)
    return sp.Rational(sp.resultant(F.f.as_expr(), g.as_expr(), T))


def is_unit(F: SympyField, x: ANP) -> bool:
    """Is ``x`` a unit of ``Z[a]``'s integral closure? Here: ``f`` has integer coefficients, ``x`` integer
    coordinates (an algebraic integer) and ``N(x) = +-1``."""
    integral = all(c.is_integer for c in F.f.all_coeffs()) and all(c.is_integer for c in F.coordinates(x))
    return integral and abs(norm(F, x)) == 1
