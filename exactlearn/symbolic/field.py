"""The field ``Q(E, V)`` of rational functions in indeterminate weights.

For width ``d`` and ``H`` heads the indeterminates are ``E_h_a_b`` (standing for
``exp(W_h)[a][b]``) and ``V_h_a`` (standing for ``v_h[a]``). An element is a
reduced fraction ``num / den`` of python-flint ``fmpq_mpoly`` polynomials
(reduced by the multivariate gcd, ``den`` with leading coefficient 1), so two
elements are equal iff their numerators and denominators are equal: equality
is decided exactly, structurally.

:class:`SymbolicField` implements the :class:`exactlearn.field.Field` protocol,
so the one schedule of :mod:`exactlearn.learn` runs over it unchanged. Every
time the run divides by an element or relies on one being nonzero (a pivot, a
normalising value, a residue, a difference of poles, each ``equal(a, b) ==
False``: a product of linked poles that is not a pole of the matching
configuration, two residues found different) the numerator of that element is
written to the field's :class:`~exactlearn.symbolic.ledger.Ledger` with the
reason. Those polynomials define the exceptional set of the generic certificate.

>>> F = SymbolicField(1, 1)
>>> E, V = F.E[0][0][0], F.V[0][0]
>>> (V * E + V) / (E + 1) == V
True
>>> len(F.ledger.records)            # the division relied on E_0_0_0 + 1 != 0
1
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from flint import fmpq, fmpq_mat, fmpq_mpoly, fmpq_mpoly_ctx, fmpz

from ..errors import OracleOutputError, ReconstructionError
from ..exact import Token, rational_str
from ..field import choose_independent_rows
from ..states import Why
from .ledger import Ledger

__all__ = ["SymbolicField", "Element", "SymbolicLogMatrix", "e_name", "v_name"]


def e_name(h: int, a: int, b: int) -> str:
    """The name of the indeterminate ``exp(W_h)[a][b]``."""
    return f"E_{h}_{a}_{b}"


def v_name(h: int, a: int) -> str:
    """The name of the indeterminate ``v_h[a]``."""
    return f"V_{h}_{a}"


_LABEL_LIMIT = 240


def _join_labels(a: "Element", op: str, b: "Element") -> str | None:
    if a.label is None or b.label is None:
        return None
    text = f"{a.label} {op} {b.label}"
    return text if len(text) <= _LABEL_LIMIT else None


class Element:
    """An element ``num / den`` of ``Q(E, V)``, reduced, ``den`` with leading coefficient 1.

    Supports ``+``, ``-``, ``*`` (with elements, ints and ``fmpq``) and ``/``
    (which records the divisor in the field's ledger, kind ``"division"``).
    ``==`` is exact structural equality and records nothing; the schedule
    compares through :meth:`SymbolicField.equal`, which records.

    ``label`` (what the element is, e.g. ``"c[1] of (x=(1,), z=(0,))"``) and
    ``source`` (the query tokens whose answer it is) are bookkeeping for
    reports only; they do not take part in equality.
    """

    __slots__ = ("field", "num", "den", "label", "source")

    def __init__(self, field: "SymbolicField", num: fmpq_mpoly, den: fmpq_mpoly | None = None, *,
                 reduced: bool = False, label: str | None = None, source: Any = None):
        self.field = field
        self.label = label
        self.source = source
        if den is None:
            self.num, self.den = num, field.ctx.constant(1)
            return
        if den.is_zero():
            raise ZeroDivisionError("an element of Q(E, V) cannot have denominator zero")
        if num.is_zero():
            self.num, self.den = num, field.ctx.constant(1)
            return
        if not reduced:
            g = num.gcd(den)
            if not g.is_one():
                num, den = num / g, den / g
        lc = den.leading_coefficient()
        if lc != 1:
            num, den = num / lc, den / lc
        self.num, self.den = num, den

    # -- conversions ------------------------------------------------------------
    def _coerce(self, other: Any) -> "Element | None":
        if isinstance(other, Element):
            if other.field is not self.field:
                raise TypeError("elements of different symbolic fields cannot be combined")
            return other
        if isinstance(other, (int, fmpz, fmpq)) and not isinstance(other, bool):
            return self.field.constant(other)
        return None

    def is_zero(self) -> bool:
        return self.num.is_zero()

    def is_constant(self) -> bool:
        return self.num.is_constant() and self.den.is_constant()

    def evaluate(self, values: Sequence) -> fmpq:
        """The rational number at the point ``values`` (one per generator of ``field.ctx``, in order)."""
        den = self.den(*values)
        if den == 0:
            raise ZeroDivisionError("the denominator vanishes at this point")
        return self.num(*values) / den

    # -- arithmetic (Henrici's gcd-economical formulas, Knuth TAOCP 4.5.1) ------
    def __add__(self, other: Any) -> "Element":
        b = self._coerce(other)
        if b is None:
            return NotImplemented
        return self._add(b, 1)

    __radd__ = __add__

    def __sub__(self, other: Any) -> "Element":
        b = self._coerce(other)
        if b is None:
            return NotImplemented
        return self._add(b, -1)

    def __rsub__(self, other: Any) -> "Element":
        b = self._coerce(other)
        if b is None:
            return NotImplemented
        return b._add(self, -1)

    def _add(self, b: "Element", sign: int) -> "Element":
        F = self.field
        label = _join_labels(self, "+" if sign > 0 else "-", b)
        bnum = b.num if sign > 0 else -b.num
        if b.num.is_zero():
            return Element(F, self.num, self.den, reduced=True, label=label)
        if self.num.is_zero():
            return Element(F, bnum, b.den, reduced=True, label=label)
        d1 = self.den.gcd(b.den)
        if d1.is_one():
            return Element(F, self.num * b.den + bnum * self.den, self.den * b.den, reduced=True, label=label)
        t = self.num * (b.den / d1) + bnum * (self.den / d1)
        if t.is_zero():
            return Element(F, t, None, label=label)
        d2 = t.gcd(d1)
        return Element(F, t / d2, (self.den / d1) * (b.den / d2), reduced=True, label=label)

    def __neg__(self) -> "Element":
        return Element(self.field, -self.num, self.den, reduced=True, label=None)

    def __mul__(self, other: Any) -> "Element":
        F = self.field
        if isinstance(other, (int, fmpz, fmpq)) and not isinstance(other, bool):
            return Element(F, self.num * other, self.den, reduced=True) if other != 0 else F.zero()
        b = self._coerce(other)
        if b is None:
            return NotImplemented
        if self.num.is_zero() or b.num.is_zero():
            return F.zero()
        g1 = self.num.gcd(b.den)
        g2 = b.num.gcd(self.den)
        return Element(F, (self.num / g1) * (b.num / g2), (self.den / g2) * (b.den / g1), reduced=True,
                       label=_join_labels(self, "*", b))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> "Element":
        b = self._coerce(other)
        if b is None:
            return NotImplemented
        return self.field.divide(self, b, "division")

    def __rtruediv__(self, other: Any) -> "Element":
        b = self._coerce(other)
        if b is None:
            return NotImplemented
        return self.field.divide(b, self, "division")

    def __pow__(self, e: int) -> "Element":
        if not isinstance(e, int) or e < 0:
            raise ValueError("only non-negative integer powers")
        return Element(self.field, self.num**e, self.den**e, reduced=True)

    # -- comparison and display -------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, (int, fmpz, fmpq)) and not isinstance(other, bool):
            other = self.field.constant(other)
        if not isinstance(other, Element):
            return NotImplemented
        return other.field is self.field and self.num == other.num and self.den == other.den

    def __hash__(self) -> int:
        return hash((str(self.num), str(self.den)))

    def key(self) -> tuple[str, str]:
        """A deterministic sort key (the printed numerator and denominator)."""
        return (str(self.num), str(self.den))

    def __str__(self) -> str:
        if self.den.is_one():
            return str(self.num)
        return f"({self.num})/({self.den})"

    def __repr__(self) -> str:
        return f"Element({self})"


@dataclass(frozen=True)
class SymbolicLogMatrix:
    """A recovered ``W_h`` over ``Q(E, V)``: ``W[a][b] = sum_l C[a][b][l] * log(E_l)``.

    ``names`` are the ``E`` indeterminates; the logs of independent indeterminates
    are linearly independent over ``Q``, so the coefficient vectors are the exact
    value of ``W``.
    """

    names: tuple[str, ...]
    coefficients: tuple[tuple[tuple[fmpq, ...], ...], ...]

    @property
    def d(self) -> int:
        return len(self.coefficients)

    def entry_str(self, a: int, b: int) -> str:
        parts = []
        for name, c in zip(self.names, self.coefficients[a][b]):
            if c == 0:
                continue
            coef = "" if c == 1 else ("-" if c == -1 else f"{rational_str(c)}*")
            parts.append(f"{coef}log({name})")
        return " + ".join(parts) if parts else "0"

    def is_log_of(self, names: Sequence[Sequence[str]]) -> bool:
        """True iff ``W[a][b] = log(names[a][b])`` exactly for every entry."""
        for a in range(self.d):
            for b in range(self.d):
                want = names[a][b]
                for name, c in zip(self.names, self.coefficients[a][b]):
                    if c != (1 if name == want else 0):
                        return False
        return True

    def __str__(self) -> str:
        return "[" + "; ".join(", ".join(self.entry_str(a, b) for b in range(self.d)) for a in range(self.d)) + "]"

    def to_dict(self) -> dict:
        return {"entries": [[self.entry_str(a, b) for b in range(self.d)] for a in range(self.d)]}


class SymbolicField:
    """``Q(E, V)`` for width ``d`` and ``H`` heads, implementing :class:`exactlearn.field.Field`.

    Attributes: ``ctx`` (the ``fmpq_mpoly`` context of all indeterminates),
    ``E[h][a][b]`` and ``V[h][a]`` (the indeterminates as elements), ``ledger``
    (the records of this field's runs).

    What is *checked* by the operations: every division is by an element that
    is not identically zero (else ``ZeroDivisionError``); every equality is
    exact. What they *record*: see the module docstring.
    """

    name = "rational functions Q(E, V) in indeterminate weights (python-flint fmpq_mpoly)"
    exact = True

    def __init__(self, d: int, heads: int):
        if d < 1 or heads < 1:
            raise ValueError("d and heads must be positive")
        self.d, self.heads = d, heads
        self.e_names = tuple(e_name(h, a, b) for h in range(heads) for a in range(d) for b in range(d))
        self.v_names = tuple(v_name(h, a) for h in range(heads) for a in range(d))
        self.ctx = fmpq_mpoly_ctx.get(self.e_names + self.v_names, "degrevlex")
        self.ctx_k = self.ctx.append_gens("k")  # Q[E, V, k]: where copy-function denominators are factored
        gens = self.ctx.gens()
        n_e = len(self.e_names)
        self.E = [[[Element(self, gens[(h * d + a) * d + b], label=e_name(h, a, b)) for b in range(d)]
                   for a in range(d)] for h in range(heads)]
        self.V = [[Element(self, gens[n_e + h * d + a], label=v_name(h, a)) for a in range(d)]
                  for h in range(heads)]
        self.ledger = Ledger()
        self.where = "schedule"  # what the operations are working on (labels ledger records)
        self.copy_functions = 0

    def __repr__(self) -> str:
        return f"SymbolicField(d={self.d}, heads={self.heads})"

    # -- elements ---------------------------------------------------------------
    def constant(self, q: Any) -> Element:
        return Element(self, self.ctx.constant(fmpq(q) if not isinstance(q, fmpq) else q))

    def zero(self) -> Element:
        return Element(self, self.ctx.constant(0))

    def element(self, raw: Any) -> Element:
        """An oracle answer: an element of this field, or an exact rational constant."""
        if isinstance(raw, Element):
            if raw.field is not self:
                raise OracleOutputError("the answer is an element of another symbolic field")
            return raw
        if isinstance(raw, (int, fmpz, fmpq)) and not isinstance(raw, bool):
            out = self.constant(raw)
            out.label = rational_str(fmpq(raw))  # e.g. the schedule's zero, compared with predicted residues
            return out
        raise OracleOutputError(f"expected an element of {self!r}, got {type(raw).__name__}")

    # -- what is relied on ------------------------------------------------------
    def require_nonzero(self, a: Element, kind: str, where: str | None = None) -> None:
        """Record ``num(a) != 0`` (raises ``ZeroDivisionError`` if ``a`` is identically zero)."""
        self.ledger.add(a.num, kind, where or self.where)

    def divide(self, a: Element, b: Element, kind: str, where: str | None = None) -> Element:
        """``a / b``, recording ``num(b) != 0`` with ``kind``."""
        if b.num.is_zero():
            raise ZeroDivisionError(f"division by an identically zero element ({kind}, {where or self.where})")
        self.require_nonzero(b, kind, where)
        if a.num.is_zero():
            return self.zero()
        g1 = a.num.gcd(b.num)
        g2 = b.den.gcd(a.den)
        return Element(self, (a.num / g1) * (b.den / g2), (a.den / g2) * (b.num / g1), reduced=True)

    def inverse(self, b: Element, kind: str, where: str | None = None) -> Element:
        return self.divide(Element(self, self.ctx.constant(1)), b, kind, where)

    # -- the Field protocol -----------------------------------------------------
    def equal(self, a: Element, b: Element, why: Why = Why.DISTINCT) -> bool:
        """Exact equality in ``Q(E, V)``; a ``False`` answer is recorded.

        The schedule treats ``False`` as "these are different": a rejected
        pairing candidate of a link, or a distinctness check. After substituting
        numbers that stays true unless ``num(a - b)`` vanishes, so that
        polynomial joins the exceptional set, with the kind ``why`` (what the
        schedule compared; a consistency check counts as ``"distinct"``) and the
        two sides' labels as the place.
        """
        diff = a - b
        if diff.is_zero():
            return True
        where = f"{a.label or 'a derived value'} != {b.label or 'a derived value'}"
        kind = Why.DISTINCT if why is Why.CONSISTENT else why
        self.require_nonzero(diff, kind.value, where)
        return False

    def dot(self, token: Token, vector: Sequence[Element]) -> Element:
        total = self.zero()
        for t, v in zip(token, vector):
            if t:
                total = total + v * t
        total.label = _dot_label(token, vector)
        return total

    def copy_terms(self, points, values, n, *, at_zero=None, at_infinity=None):
        """Reconstruct the type-``(n, n)`` copy function over ``Q(E, V)`` and read off ``(rho_h, c_h)``.

        See :func:`exactlearn.symbolic.ratfun.copy_terms`.
        """
        from .ratfun import copy_terms

        self.copy_functions += 1
        source = getattr(values[-1], "source", None) if values else None
        if source is not None and len(source) >= 2:
            self.where = f"copy function of (x={tuple(source[-1])}, z={tuple(source[0])})"
        else:
            self.where = f"copy function #{self.copy_functions}"
        try:
            return copy_terms(self, points, values, n, at_zero=at_zero, at_infinity=at_infinity)
        finally:
            self.where = "schedule"

    def solve_values(self, rows: Sequence[Token], residues: Sequence[Sequence[Element]]) -> list[tuple[Element, ...]]:
        """Solve ``rows @ v_h = residues[h]`` over ``Q(E, V)``.

        The rows are integer vectors: a full-rank square subsystem is inverted
        over ``Q`` (``fmpq_mat``), so no element of ``Q(E, V)`` is divided by; every
        other row is then checked exactly (``ReconstructionError`` if not).
        """
        d = len(rows[0])
        chosen = choose_independent_rows(rows, d)
        if len(chosen) < d:
            raise ValueError("the value design has rank < d")  # prevented before querying
        inverse = fmpq_mat(d, d, [x for i in chosen for x in rows[i]]).inv()
        out = []
        for h, res in enumerate(residues):
            v = []
            for a in range(d):
                total = self.zero()
                for col, i in enumerate(chosen):
                    coef = inverse[a, col]
                    if coef != 0:
                        total = total + res[i] * coef
                total.label = f"v_{h}[{a}]"
                v.append(total)
            out.append(tuple(v))
            for j, row in enumerate(rows):
                if not self.dot(row, v) == res[j]:
                    raise ReconstructionError(
                        f"the residues are not linear in the tokens: head {h} at measurement {j} breaks c = v^T (x - z)"
                    )
        return out

    def log_exponents(self, rho: Element) -> tuple[int, ...]:
        """The exponent vector over the ``E`` indeterminates of a Laurent monomial ``rho``.

        ``log rho = sum_l e_l log E_l``. Raises ``ReconstructionError`` if ``rho``
        is not a monomial in the ``E``'s with coefficient 1 (then it is not
        ``exp`` of a linear form in the weights).
        """
        if len(rho.num) != 1 or len(rho.den) != 1:
            raise ReconstructionError(f"rho = {rho} is not a Laurent monomial")
        (cn,), (cd,) = list(rho.num.coeffs()), list(rho.den.coeffs())
        if cn != cd:
            raise ReconstructionError(f"rho = {rho} has a coefficient other than 1")
        (en,), (ed,) = list(rho.num.monoms()), list(rho.den.monoms())
        n_e = len(self.e_names)
        exps = tuple(int(p) - int(q) for p, q in zip(en, ed))
        if any(exps[n_e:]):
            raise ReconstructionError(f"rho = {rho} involves the value indeterminates V")
        return exps[:n_e]

    def solve_weights(self, design: fmpq_mat, rhos: Sequence[Sequence[Element]]) -> list[SymbolicLogMatrix]:
        """Solve ``design @ vec(W_h) = log rho_h`` with logs as exponent vectors over the ``E``'s.

        ``design`` is the invertible integer design matrix (checked before
        querying), so this is one rational solve with ``H * d^2`` right-hand
        sides per log coordinate; no element of ``Q(E, V)`` is divided by.
        """
        n = design.nrows()
        d = self.d
        n_e = len(self.e_names)
        columns = []
        for h, per_head in enumerate(rhos):
            if len(per_head) != n:
                raise ValueError(f"expected {n} measurements per head, got {len(per_head)}")
            vectors = [self.log_exponents(r) for r in per_head]
            columns.extend([[vec[l] for vec in vectors] for l in range(n_e)])
        rhs = fmpq_mat(n, len(columns), [columns[c][r] for r in range(n) for c in range(len(columns))])
        solution = design.solve(rhs)
        out = []
        for h in range(len(rhos)):
            coeffs = tuple(
                tuple(tuple(solution[a * d + b, h * n_e + l] for l in range(n_e)) for b in range(d))
                for a in range(d)
            )
            out.append(SymbolicLogMatrix(self.e_names, coeffs))
        return out

    def rho(self, W: SymbolicLogMatrix, left: Token, right: Token) -> Element:
        """``exp(left^T W right)`` for a learned ``W``: the Laurent monomial ``prod_l E_l ** e_l``.

        ``e_l = left^T C_l right`` with ``C_l`` the coefficient matrix of
        ``log E_l`` in ``W``. Raises ``ReconstructionError`` if some ``e_l`` is not
        an integer (then ``exp(left^T W right)`` is not in ``Q(E, V)``). Nothing is
        recorded: the exponents are an exact identity, and a Laurent monomial in
        the ``E``'s is positive wherever every ``E > 0``.
        """
        d = self.d
        exps = []
        for l in range(len(self.e_names)):
            e = fmpq(0)
            for a in range(d):
                if left[a]:
                    for b in range(d):
                        if right[b]:
                            e += left[a] * right[b] * W.coefficients[a][b][l]
            if e.q != 1:
                raise ReconstructionError("exp(left^T W right) is not a Laurent monomial for the learned W")
            exps.append(int(e.p))
        n_v = len(self.v_names)
        num = self.ctx.term(exp_vec=tuple(max(e, 0) for e in exps) + (0,) * n_v)
        den = self.ctx.term(exp_vec=tuple(max(-e, 0) for e in exps) + (0,) * n_v)
        return Element(self, num, den, reduced=True)  # coprime monomials, den monic


def _dot_label(token: Token, vector: Sequence[Element]) -> str | None:
    """``v_h^T token`` when ``vector`` is a learned ``v_h`` (labels ``v_h[a]``), else ``None``."""
    labels = [v.label for v in vector]
    if not labels or any(lab is None for lab in labels):
        return None
    head = labels[0].split("[")[0]
    if labels == [f"{head}[{a}]" for a in range(len(labels))]:
        return f"{head}^T {tuple(token)}"
    return None
