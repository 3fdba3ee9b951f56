"""An independent evaluator of models over a number field, with sympy only (no python-flint, no exactlearn
arithmetic): elements are sympy polynomials in ``t`` reduced modulo the minimal polynomial (``sympy.rem``),
inverses by ``sympy.invert``. Used by the tests to check exactlearn's answers over ``K`` coordinate by
coordinate."""

from __future__ import annotations

import sympy

T = sympy.Symbol("t")


class SympyField:
    """``Q(t)/(f)`` from a model's JSON ``field`` entry (the polynomial text and the root interval)."""

    def __init__(self, polynomial: str, interval: tuple[str, str], name: str = "a"):
        self.name = name
        self.f = sympy.Poly(sympy.sympify(polynomial.replace("^", "**"), {name: T}), T, domain="QQ")
        lo, hi = (sympy.Rational(x) for x in interval)
        self.real_roots_inside = sympy.Poly(self.f, T).count_roots(lo, hi)  # exact (Sturm)

    def element(self, text: str) -> sympy.Poly:
        return sympy.Poly(sympy.sympify(text.replace("^", "**"), {self.name: T}), T, domain="QQ").rem(self.f)

    def mul(self, a, b):
        return (a * b).rem(self.f)

    def inv(self, a):
        return sympy.Poly(sympy.invert(a.as_expr(), self.f.as_expr(), T), T, domain="QQ")

    def power(self, a, e: int):
        base = a if e >= 0 else self.inv(a)
        out = sympy.Poly(1, T, domain="QQ")
        for _ in range(abs(e)):
            out = self.mul(out, base)
        return out

    def coefficients(self, a) -> list[sympy.Rational]:
        c = list(reversed(a.all_coeffs())) if not a.is_zero else []
        return c + [sympy.Rational(0)] * (self.f.degree() - len(c))


def evaluate(model_json: dict, tokens) -> list[sympy.Rational]:
    """``f(X)`` of a model over a number field, from its JSON dict: the coordinates of the answer."""
    field = model_json["field"]
    F = SympyField(field["polynomial"], tuple(field["root_interval"]))
    last = tokens[-1]
    total = sympy.Poly(0, T, domain="QQ")
    for head in model_json["heads"]:
        E = [[F.element(e) for e in row] for row in head["exp_W"]]
        v = [F.element(e) for e in head["v"]]
        num, den = sympy.Poly(0, T, domain="QQ"), sympy.Poly(0, T, domain="QQ")
        for x in tokens:
            w = sympy.Poly(1, T, domain="QQ")
            for a in range(len(x)):
                for b in range(len(x)):
                    w = F.mul(w, F.power(E[a][b], x[a] * last[b]))
            value = sum((vi * xi for vi, xi in zip(v, x)), sympy.Poly(0, T, domain="QQ"))
            num = (num + F.mul(w, value)).rem(F.f)
            den = (den + w).rem(F.f)
        total = (total + F.mul(num, F.inv(den))).rem(F.f)
    return F.coefficients(total)
