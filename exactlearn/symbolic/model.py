"""The generic model: multi-head attention whose weights are indeterminates, and its oracle.

Head ``h`` has ``exp(W_h)[a][b] = E_h_a_b`` and ``v_h[a] = V_h_a``. For integer
tokens the score of ``x_i`` is the Laurent monomial
``exp(x_i^T W_h x_N) = prod_{a,b} E_h_a_b ** (x_i[a] x_N[b])``, so

    f(X) = sum_h  (sum_i s_i * V_h^T x_i) / (sum_i s_i)

is an exact element of ``Q(E, V)``. Each head's scores are multiplied by one
common monomial so that they are monomials; the normaliser ``sum_i s_i`` is
then a polynomial with positive coefficients, positive wherever every
``E > 0``: the model is defined on the whole real domain.

>>> from exactlearn.symbolic.field import SymbolicField
>>> F = SymbolicField(1, 1)
>>> oracle = SymbolicOracle(SymbolicModel(F))
>>> print(oracle([(0,), (1,)]))          # scores 1 and E: (0 + E V) / (1 + E)
(E_0_0_0*V_0_0)/(E_0_0_0 + 1)
>>> oracle.queries, oracle.max_length
(1, 2)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..exact import Token, as_tokens
from ..querylog import QueryLog
from .field import Element, SymbolicField

__all__ = ["SymbolicModel", "SymbolicOracle"]


class SymbolicModel:
    """``H`` heads of width ``d`` with indeterminate weights, over ``field`` (a :class:`SymbolicField`)."""

    def __init__(self, field: SymbolicField):
        self.field = field
        self.d = field.d
        self.num_heads = field.heads
        ctx = field.ctx
        self._nvars = ctx.nvars()
        self._v = [[g.num for g in row] for row in field.V]

    def head_output(self, h: int, tokens: Sequence[Token]) -> Element:
        """``sum_i softmax_i(x_i^T W_h x_N) v_h^T x_i`` as a reduced element of ``Q(E, V)``."""
        F, d = self.field, self.d
        last = tokens[-1]
        counts = Counter(tokens)
        offset = h * d * d
        exps = {}
        for tok in counts:
            exps[tok] = [tok[a] * last[b] for a in range(d) for b in range(d)]
        low = [min(e[i] for e in exps.values()) for i in range(d * d)]
        ctx = F.ctx
        num = ctx.constant(0)
        den = ctx.constant(0)
        for tok, mult in counts.items():
            vec = [0] * self._nvars
            for i in range(d * d):
                vec[offset + i] = exps[tok][i] - low[i]
            score = ctx.term(coeff=mult, exp_vec=tuple(vec))
            den += score
            value = ctx.constant(0)
            for a in range(d):
                if tok[a]:
                    value += tok[a] * self._v[h][a]
            num += score * value
        return Element(F, num, den)

    def evaluate(self, tokens: Sequence[Token]) -> Element:
        total = self.field.zero()
        for h in range(self.num_heads):
            total = total + self.head_output(h, tokens)
        return total

    def __call__(self, tokens: Sequence[Sequence[int]]) -> Element:
        return self.evaluate(as_tokens(tokens, self.d))


class SymbolicOracle(QueryLog):
    """A logged black box around a :class:`SymbolicModel` (the symbolic twin of :class:`exactlearn.Oracle`).

    Its log (:class:`~exactlearn.querylog.QueryLog`: :attr:`queries`, :attr:`lengths`,
    :attr:`max_length`, :attr:`seconds`, :attr:`budget`) is what the certificate
    reports; each answer carries the query as its ``source`` (bookkeeping for
    the ledger's labels, not used by the learner).
    """

    def __init__(self, model: SymbolicModel, *, budget: int | None = None):
        self.model = model
        self.d = model.d
        self.set_budget(budget)
        self.reset()

    def __call__(self, tokens: Sequence[Sequence[int]]) -> Element:
        query = as_tokens(tokens, self.d)
        with self.answering(query):
            value = self.model.evaluate(query)
        return Element(value.field, value.num, value.den, reduced=True, source=query)
