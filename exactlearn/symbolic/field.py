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

from collections.abc import Sequence
from typing import Any

from flint import fmpq, fmpq_mpoly_ctx, fmpz

from ..errors import OracleOutputError, ReconstructionError
from ..exact import Token, rational_str
from ..exactfield import ExactField
from ..logspace import Base
from ..states import Why
from .element import Element
from .ledger import SCHEDULE, Ledger
from .ratfun import copy_terms

__all__ = ["SymbolicField", "Element", "e_name", "v_name"]


def e_name(h: int, a: int, b: int) -> str:
    """The name of the indeterminate ``exp(W_h)[a][b]``."""
    return f"E_{h}_{a}_{b}"


def v_name(h: int, a: int) -> str:
    """The name of the indeterminate ``v_h[a]``."""
    return f"V_{h}_{a}"


class SymbolicField(ExactField):
    """``Q(E, V)`` for width ``d`` and ``H`` heads, implementing :class:`exactlearn.field.Field`.

    Attributes: ``ctx`` (the ``fmpq_mpoly`` context of all indeterminates),
    ``E[h][a][b]`` and ``V[h][a]`` (the indeterminates as elements), ``ledger``
    (the records of this field's runs).

    What is *checked* by the operations: every division is by an element that
    is not identically zero (else ``ZeroDivisionError``); every equality is
    exact. What they *record*: see the module docstring.
    """

    name = "rational functions Q(E, V) in indeterminate weights (python-flint fmpq_mpoly)"

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
    def require_nonzero(self, a: Element, kind: str, where: str = SCHEDULE) -> None:
        """Record ``num(a) != 0`` (raises ``ZeroDivisionError`` if ``a`` is identically zero); ``where``
        names what is being computed (a copy function, or the schedule)."""
        self.ledger.add(a.num, kind, where)

    def divide(self, a: Element, b: Element, kind: str, where: str = SCHEDULE) -> Element:
        """``a / b``, recording ``num(b) != 0`` with ``kind`` at ``where``."""
        if b.num.is_zero():
            raise ZeroDivisionError(f"division by an identically zero element ({kind}, {where})")
        self.require_nonzero(b, kind, where)
        if a.num.is_zero():
            return self.zero()
        g1 = a.num.gcd(b.num)
        g2 = b.den.gcd(a.den)
        return Element(self, (a.num / g1) * (b.den / g2), (a.den / g2) * (b.num / g1), reduced=True)

    def inverse(self, b: Element, kind: str, where: str = SCHEDULE) -> Element:
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
        """The base class's ``token^T vector``, labelled with where it comes from."""
        total = super().dot(token, vector)
        total.label = _dot_label(token, vector)
        return total

    def copy_terms(self, points, values, n, *, at_zero=None, at_infinity=None):
        """Reconstruct the type-``(n, n)`` copy function over ``Q(E, V)`` and read off ``(rho_h, c_h)``.

        See :func:`exactlearn.symbolic.ratfun.copy_terms`.
        """
        self.copy_functions += 1
        source = getattr(values[-1], "source", None) if values else None
        if source is not None and len(source) >= 2:
            where = f"copy function of (x={tuple(source[-1])}, z={tuple(source[0])})"
        else:
            where = f"copy function #{self.copy_functions}"
        return copy_terms(self, points, values, n, at_zero=at_zero, at_infinity=at_infinity, where=where)

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

    # -- what ExactField needs ----------------------------------------------------
    def log_coordinates(self, rhos: Sequence[Element]) -> tuple[tuple[str, ...], list[tuple[int, ...]]]:
        """The ``E`` names and each ``rho``'s exponents over them (:meth:`log_exponents`).

        Nothing is recorded: the exponents are an exact identity, and a Laurent
        monomial in the ``E``'s is positive wherever every ``E > 0``.
        """
        return self.e_names, [self.log_exponents(r) for r in rhos]

    def power_product(self, base: Base, exponents: Sequence[int]) -> Element:
        """The Laurent monomial ``prod_l E_l ** e_l`` (``base`` is :attr:`e_names`)."""
        n_v = len(self.v_names)
        num = self.ctx.term(exp_vec=tuple(max(e, 0) for e in exponents) + (0,) * n_v)
        den = self.ctx.term(exp_vec=tuple(max(-e, 0) for e in exponents) + (0,) * n_v)
        return Element(self, num, den, reduced=True)  # coprime monomials, den monic

    def _named_value(self, total: Element, head: int, a: int) -> Element:
        total.label = f"v_{head}[{a}]"
        return total



def _dot_label(token: Token, vector: Sequence[Element]) -> str | None:
    """``v_h^T token`` when ``vector`` is a learned ``v_h`` (labels ``v_h[a]``), else ``None``."""
    labels = [v.label for v in vector]
    if not labels or any(lab is None for lab in labels):
        return None
    head = str(labels[0]).split("[")[0]
    if labels == [f"{head}[{a}]" for a in range(len(labels))]:
        return f"{head}^T {tuple(token)}"
    return None
