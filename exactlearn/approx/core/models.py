"""Real-valued attention and approximate oracles (floats appear here, by design).

* :class:`RealMultiHeadAttention` -- the model of docs/algorithm.md section 1 with
  real weight matrices ``W_h`` (not exp-parametrised), optionally affine (score
  terms ``w_h^T x_i`` and an offset ``c0``, section 9). Its parameters are stored
  as exact rationals (a float or ``mpf`` is stored as the binary fraction it is),
  so the function is exactly defined and can be evaluated to any precision:
  :meth:`~RealMultiHeadAttention.evaluate` in mpmath floating point at a chosen
  precision, :meth:`~RealMultiHeadAttention.enclose` as a rigorous arb ball.
* :class:`RealOracle` -- a *float oracle*: answers with the model evaluated in
  mpmath at ``precision`` bits (53 bits behaves like float64), and logs the
  rigorous error of every answer it gave.
* :class:`NoisyOracle` -- the exact output plus a reproducible perturbation of
  size at most ``eps`` whose value is known exactly (:meth:`NoisyOracle.noise`).

All oracles here take a list of real token vectors (Python floats, ints,
rationals or mpmath numbers), keep their own log
(:class:`~exactlearn.querylog.QueryLog`: ``queries``, ``lengths``, ``max_length``)
and declare ``eps``, the bound on their output error that
:func:`exactlearn.approx.learn_approx` uses by default.

>>> m = RealMultiHeadAttention([[[0.5, 0], [0, -0.25]]], [[1, 2]])
>>> m.evaluate([(1.0, 0.0), (0.0, 1.0)], precision=53)   # (e^0 * 1 + e^-0.25 * 2) / (e^0 + e^-0.25)
mpf('1.437823499114202')
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import mpmath
from flint import arb, ctx, fmpq

from ... import display
from ...errors import InvalidArgumentError, InvalidModelError, InvalidQueryError, OracleOutputError
from ...exact import rational_str
from ...model import MultiHeadAttention
from ...querylog import QueryLog
from ...validate import integer
from .balls import abs_upper, as_fmpq, radius, to_arb, to_mpf

__all__ = ["RealMultiHeadAttention", "RealOracle", "NoisyOracle", "exact_tokens"]

RealToken = tuple[fmpq, ...]


def exact_tokens(tokens: Any, d: int | None) -> tuple[RealToken, ...]:
    """A query of real token vectors as exact rationals (floats are binary fractions)."""
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__len__") or len(tokens) == 0:
        raise InvalidQueryError("a query is a non-empty sequence of token vectors")
    out = []
    for i, token in enumerate(tokens):
        if isinstance(token, (str, bytes)) or not hasattr(token, "__len__"):
            raise InvalidQueryError(
                f"token {i}: expected a sequence of real numbers, got {type(token).__name__}"
            )
        if d is not None and len(token) != d:
            raise InvalidQueryError(f"token {i}: has length {len(token)}, but the model width is d = {d}")
        out.append(tuple(as_fmpq(x, f"token {i}", InvalidQueryError) for x in token))
    return tuple(out)


def _real_matrix(rows: Any, what: str) -> tuple[tuple[fmpq, ...], ...]:
    if isinstance(rows, (str, bytes)) or not hasattr(rows, "__len__") or len(rows) == 0:
        raise InvalidModelError(f"{what}: expected a non-empty d x d matrix")
    n = len(rows)
    out = []
    for a, row in enumerate(rows):
        if isinstance(row, (str, bytes)) or not hasattr(row, "__len__") or len(row) != n:
            raise InvalidModelError(f"{what}: row {a} must have {n} entries (the matrix must be square)")
        out.append(tuple(as_fmpq(x, f"{what}[{a}][{b}]", InvalidModelError) for b, x in enumerate(row)))
    return tuple(out)


def _score_vectors(ws: Any, heads: int, d: int) -> tuple[tuple[fmpq, ...], ...] | None:
    """The ``w_h`` of affine attention as exact rationals, or ``None`` when absent or all zero."""
    if ws is None:
        return None
    if isinstance(ws, (str, bytes)) or not hasattr(ws, "__len__") or len(ws) != heads:
        raise InvalidModelError(f"ws: expected one score vector w_h per head ({heads})")
    out = []
    for h, w in enumerate(ws):
        if isinstance(w, (str, bytes)) or not hasattr(w, "__len__") or len(w) != d:
            raise InvalidModelError(f"w[{h}]: expected a vector of length d = {d}")
        out.append(tuple(as_fmpq(x, f"w[{h}][{a}]", InvalidModelError) for a, x in enumerate(w)))
    return None if all(x == 0 for w in out for x in w) else tuple(out)


class RealMultiHeadAttention(display.Shown):
    """Multi-head attention with real weight matrices ``W_h`` and value vectors ``v_h``.

    ``f(X) = sum_h sum_i softmax_i(x_i^T W_h x_N) v_h^T x_i`` for real tokens.
    ``Ws`` is a list of ``d x d`` matrices, ``vs`` a list of length-``d``
    vectors; entries may be ints, rationals, strings ``"p/q"``, Python floats or
    mpmath numbers and are stored exactly as ``flint.fmpq``. Affine attention
    (optional): ``ws``, a length-``d`` vector per head (scores
    ``x_i^T W_h x_N + w_h^T x_i``), and the output offset ``c0``; ``ws`` is
    ``None`` when absent or all zero.
    """

    def __init__(self, Ws: Sequence[Any], vs: Sequence[Any], ws: Sequence[Any] | None = None, c0: Any = 0):
        if len(Ws) != len(vs):
            raise InvalidModelError(f"got {len(Ws)} weight matrices but {len(vs)} value vectors")
        if not Ws:
            raise InvalidModelError("a model needs at least one head")
        self.Ws = tuple(_real_matrix(W, f"W[{h}]") for h, W in enumerate(Ws))
        d = len(self.Ws[0])
        if any(len(W) != d for W in self.Ws):
            raise InvalidModelError("all heads must have the same width d")
        vv = []
        for h, v in enumerate(vs):
            if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or len(v) != d:
                raise InvalidModelError(f"v[{h}]: expected a vector of length d = {d}")
            vv.append(tuple(as_fmpq(x, f"v[{h}][{a}]", InvalidModelError) for a, x in enumerate(v)))
        self.vs = tuple(vv)
        self.d = d
        self.ws = _score_vectors(ws, len(self.Ws), d)
        self.c0 = as_fmpq(c0, "c0", InvalidModelError)

    @classmethod
    def random(cls, d: int, heads: int, seed: int = 0, *, weight: Any = "1/2", grid: int = 64
               ) -> RealMultiHeadAttention:
        """A random model: ``W`` entries uniform on the grid ``(weight / grid) * {-grid..grid}``,
        ``v`` entries uniform on ``{-1, -15/16, ..., 1}`` (nonzero vectors, distinct ``W``).

        Reproducible from ``seed`` (own ``random.Random``). Entries are exact
        rationals, so the model's function is known exactly.
        """
        w = as_fmpq(weight, "weight", InvalidArgumentError)
        rng = random.Random(f"exactlearn.approx.RealMultiHeadAttention.random:{d}:{heads}:{seed}:{w}:{grid}")
        Ws: list[list[list[fmpq]]] = []
        vs: list[list[fmpq]] = []
        while len(Ws) < heads:
            W = [[w * fmpq(rng.randint(-grid, grid), grid) for _ in range(d)] for _ in range(d)]
            v = [fmpq(rng.randint(-16, 16), 16) for _ in range(d)]
            if W in Ws or not any(v):
                continue
            Ws.append(W)
            vs.append(v)
        return cls(Ws, vs)

    @classmethod
    def from_exp_model(cls, model: MultiHeadAttention, precision: int = 256) -> RealMultiHeadAttention:
        """The real model with ``W = log exp_W`` (and ``w = log exp_w``; entries rounded to ``precision``
        bits)."""
        with ctx.workprec(precision):
            Ws = [[[to_mpf(arb(e).log()) for e in row] for row in h.exp_W] for h in model.heads]
            ws = [[to_mpf(arb(e).log()) for e in (h.exp_w or [1] * model.d)] for h in model.heads]
        return cls(Ws, [h.v for h in model.heads], ws, model.c0)

    @property
    def is_affine(self) -> bool:
        """True iff some head has a score vector ``w_h`` or the offset ``c0`` is nonzero."""
        return self.ws is not None or self.c0 != 0

    def score_vectors(self) -> tuple[tuple[fmpq, ...], ...]:
        """``w_h`` of every head (zero vectors when the model has none)."""
        return self.ws if self.ws is not None else tuple((fmpq(0),) * self.d for _ in self.Ws)

    @property
    def num_heads(self) -> int:
        return len(self.Ws)

    @property
    def heads(self) -> list[tuple[tuple[tuple[fmpq, ...], ...], tuple[fmpq, ...]]]:
        return list(zip(self.Ws, self.vs))

    def canonical(self) -> RealMultiHeadAttention | None:
        """Merge heads with equal ``W`` (and ``w``), summing ``v``, drop zero ``v``; ``None`` if nothing is
        left (the offset ``c0`` of such a model is lost)."""
        sums: dict = {}
        for W, w, v in zip(self.Ws, self.score_vectors(), self.vs):
            acc = sums.get((W, w))
            sums[(W, w)] = v if acc is None else tuple(a + b for a, b in zip(acc, v))
        kept = [(W, w, v) for (W, w), v in sums.items() if any(v)]
        if not kept:
            return None
        return RealMultiHeadAttention([W for W, _, _ in kept], [v for _, _, v in kept],
                                      [w for _, w, _ in kept], self.c0)

    @property
    def num_canonical_heads(self) -> int:
        c = self.canonical()
        return 0 if c is None else c.num_heads

    # -- evaluation ---------------------------------------------------------------
    def _weights(self, key, convert):
        """The weights converted once per number kind and precision (cached)."""
        cache = self.__dict__.setdefault("_converted", {})
        if key not in cache:
            ws = self.ws or [None] * len(self.Ws)
            cache[key] = [([[convert(e) for e in row] for row in W], [convert(e) for e in v],
                           None if w is None else [convert(e) for e in w])
                          for W, v, w in zip(self.Ws, self.vs, ws)]
        return cache[key]

    def _evaluate(self, tokens: Sequence[RealToken], convert, exp, key):
        last = [convert(x) for x in tokens[-1]]
        counts = Counter(tokens)
        rows = [([convert(x) for x in t], m) for t, m in counts.items()]
        total = convert(self.c0)
        for Wc, vc, wc in self._weights(key, convert):
            zero = convert(fmpq(0))
            Wlast = [sum((Wc[a][b] * last[b] for b in range(self.d)), zero) for a in range(self.d)]
            if wc is not None:  # the score term w^T x_i
                Wlast = [Wlast[a] + wc[a] for a in range(self.d)]
            scores = [sum((t[a] * Wlast[a] for a in range(self.d)), convert(fmpq(0))) for t, _ in rows]
            top = max(scores, key=lambda s: to_mpf(s) if isinstance(s, arb) else s)
            num = den = convert(fmpq(0))
            for (t, mult), s in zip(rows, scores):
                w = exp(s - top) * mult
                den += w
                num += w * sum((t[a] * vc[a] for a in range(self.d)), convert(fmpq(0)))
            total += num / den
        return total

    def evaluate(self, tokens: Iterable[Sequence[Any]], precision: int = 53) -> mpmath.mpf:
        """``f(X)`` computed in mpmath floating point with ``precision`` bits (53: like float64).

        The tokens and weights are rounded to ``precision`` bits first, as a
        floating-point implementation would store them.
        """
        query = exact_tokens(list(tokens), self.d)
        with mpmath.mp.workprec(precision):
            return +self._evaluate(query, to_mpf, mpmath.exp, ("mpf", precision))

    def enclose(self, tokens: Iterable[Sequence[Any]], precision: int | None = None) -> arb:
        """A rigorous arb ball containing ``f(X)`` (at ``precision`` bits, default: flint's current)."""
        query = exact_tokens(list(tokens), self.d)
        bits = precision or ctx.prec
        with ctx.workprec(bits):
            return self._evaluate(query, arb, lambda x: x.exp(), ("arb", bits))

    def __call__(self, tokens: Iterable[Sequence[Any]]) -> mpmath.mpf:
        """``f(X)`` at mpmath's current precision."""
        return self.evaluate(tokens, mpmath.mp.prec)

    def to_dict(self) -> dict:
        heads: list[dict] = [{"W": [[rational_str(e) for e in row] for row in W],
                              "v": [rational_str(e) for e in v]} for W, v in zip(self.Ws, self.vs)]
        for head, w in zip(heads, self.ws or ()):
            head["w"] = [rational_str(e) for e in w]
        out = {"format": "exactlearn.real-model/1", "d": self.d, "heads": heads}
        if self.c0 != 0:
            out["c0"] = rational_str(self.c0)
        return out

    def __repr__(self) -> str:
        return display.summary("RealMultiHeadAttention", f"d={self.d} H={self.num_heads}",
                               ["affine"] if self.is_affine else [])

    def _lines(self) -> list[str]:
        """``W``, ``v`` (and ``w``) of each head in decimal (:data:`~exactlearn.display.DIGITS` digits;
        the stored rationals are exact)."""
        out = [repr(self)]
        for h, (W, v) in enumerate(zip(self.Ws, self.vs)):
            w = None if self.ws is None else display.reals([self.ws[h]])[0]
            out += display.block(f"heads[{h}].", [("W", display.reals(W)), ("v", display.reals([v])[0]),
                                                  ("w", w)])
        return out + ([f"c0 = {display.text(display.real(self.c0))}"] if self.c0 != 0 else [])


class RealOracle(QueryLog):
    """A float oracle: the model evaluated in mpmath at ``precision`` bits (53 ~ float64).

    Every answer is also enclosed rigorously (arb, ``precision + 64`` bits) and
    its actual error is logged: :attr:`max_error` is a rigorous upper bound of
    ``|answer - f(X)|`` over all answers so far. ``eps`` is the error bound the
    oracle *declares*; if given, an answer whose error exceeds it raises
    :class:`~exactlearn.OracleOutputError` instead of being returned.
    """

    def __init__(self, model: RealMultiHeadAttention, precision: int = 53, *, eps: Any = None):
        if not isinstance(model, RealMultiHeadAttention):
            raise InvalidArgumentError(
                f"RealOracle needs a RealMultiHeadAttention, got {type(model).__name__}"
            )
        self.model = model
        self.d = model.d
        self.affine = model.is_affine  # learn_approx learns w_h and c0 by default
        self.precision = integer("precision (bits)", precision, 8)
        self.eps = None if eps is None else as_fmpq(eps, "eps")
        self.max_error = mpmath.mpf(0)
        self.reset()

    def __call__(self, tokens: Sequence[Sequence[Any]]) -> mpmath.mpf:
        query = exact_tokens(tokens, self.d)
        with self.answering(query):
            return self._answer(query)

    def _answer(self, query: tuple[RealToken, ...]) -> mpmath.mpf:
        answer = self.model.evaluate(query, self.precision)
        truth = self.model.enclose(query, self.precision + 64)
        with ctx.workprec(self.precision + 64):
            error = abs_upper(to_arb(answer) - truth)
        if self.eps is not None and error > to_mpf(self.eps):
            raise OracleOutputError(
                f"the float oracle's error {mpmath.nstr(error, 3)} exceeds its declared bound eps = "
                f"{rational_str(self.eps)} (increase precision or eps)"
            )
        self.max_error = max(self.max_error, error)
        return answer


class NoisyOracle(QueryLog):
    """Exact output plus a reproducible perturbation ``noise(X)`` with ``|noise(X)| <= eps``.

    ``noise(X) = eps * u(seed, X)`` with ``u`` a rational in ``[-1, 1)`` (64
    bits) derived from a SHA-256 hash of the seed and the exact query, so the
    same query always gets the same noise and the noise is known exactly.
    ``pattern`` replaces ``u``: a function of the exact query (tuple of tuples
    of ``fmpq``) returning a rational in ``[-1, 1]`` -- e.g.
    :meth:`Sensitivity.worst_case_pattern`, the noise that attains ``C``.

    * For an exp-parametrised :class:`~exactlearn.MultiHeadAttention` (integer
      tokens; floats with integral values are accepted) the answer is the exact
      rational ``f(X) + noise(X)`` (``flint.fmpq``) and :attr:`eps` is ``eps``.
    * For a :class:`RealMultiHeadAttention` the answer is an mpmath number within
      ``2^(-precision/2)`` of ``f(X) + noise(X)`` (evaluated with arb at
      ``precision`` bits and checked); :attr:`eps` is ``eps + 2^(-precision/2)``.

    :attr:`max_noise` logs the largest ``|noise|`` actually added.
    """

    def __init__(self, model: MultiHeadAttention | RealMultiHeadAttention, eps: Any, seed: Any = 0, *,
                 precision: int = 512, pattern: Callable[[tuple], Any] | None = None):
        if not isinstance(model, (MultiHeadAttention, RealMultiHeadAttention)):
            raise InvalidArgumentError(
                "NoisyOracle needs a MultiHeadAttention or RealMultiHeadAttention, "
                f"got {type(model).__name__}"
            )
        self.model = model
        self.d = model.d
        self.affine = model.is_affine  # learn_approx learns w_h and c0 by default
        self.nominal_eps = as_fmpq(eps, "eps")
        if self.nominal_eps < 0:
            raise InvalidArgumentError(f"eps must be >= 0, got {rational_str(self.nominal_eps)}")
        self.seed = seed
        self.pattern = pattern
        self.precision = precision
        self.exact = isinstance(model, MultiHeadAttention)
        self.evaluation_slack = fmpq(0) if self.exact else fmpq(1, 2 ** (precision // 2))
        self.max_noise = fmpq(0)
        self.reset()

    @property
    def eps(self) -> fmpq:
        """The declared bound on ``|answer - f(X)|`` (noise plus evaluation error)."""
        return self.nominal_eps + self.evaluation_slack

    def noise(self, tokens: Sequence[Sequence[Any]]) -> fmpq:
        """The exact perturbation this oracle adds to query ``tokens``."""
        query = exact_tokens(tokens, self.d)
        if self.pattern is not None:
            u = as_fmpq(self.pattern(query), "pattern")
            if abs(u) > 1:
                raise InvalidArgumentError(f"the noise pattern must lie in [-1, 1], got {rational_str(u)}")
            return self.nominal_eps * u
        text = f"{self.seed!r}|" + ";".join(",".join(rational_str(x) for x in t) for t in query)
        bits = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        u = fmpq(bits, 2**63) - 1  # in [-1, 1)
        return self.nominal_eps * u

    def __call__(self, tokens: Sequence[Sequence[Any]]):
        query = exact_tokens(tokens, self.d)
        with self.answering(query):
            return self._answer(query)

    def _answer(self, query: tuple[RealToken, ...]):
        noise = self.noise(query)
        model = self.model
        if isinstance(model, MultiHeadAttention):  # self.exact
            ints = []
            for i, t in enumerate(query):
                if any(x.q != 1 for x in t):
                    raise InvalidQueryError(
                        f"token {i}: an exp-parametrised model answers exactly only for integer tokens "
                        f"(use an integer query scale)"
                    )
                ints.append(tuple(int(x.p) for x in t))
            answer = model.evaluate(tuple(ints)) + noise
        else:
            with ctx.workprec(self.precision):
                ball = model.enclose(query) + arb(noise)
                if radius(ball) > mpmath.mpf(2) ** (-(self.precision // 2)):  # pragma: no cover
                    raise OracleOutputError("the evaluation is not accurate enough; increase precision")
                answer = to_mpf(ball)
        self.max_noise = max(self.max_noise, abs(noise))
        return answer
