"""Multi-head softmax attention with exp-parametrised weights, evaluated exactly.

The model (docs/algorithm.md section 1) maps a sequence ``X = (x_1, ..., x_N)`` of
integer tokens in ``Z^d`` to the scalar

    f(X) = sum_h sum_i softmax_i(x_i^T W_h x_N) * v_h^T x_i .

Each head stores ``exp_W = exp(W_h)`` entrywise, a ``d x d`` matrix of positive
rationals, and ``v_h`` in ``Q^d`` (section 2). For integer tokens every
attention score ``exp(x_i^T W_h x_N) = prod_{a,b} exp_W[a][b] ** (x_i[a] x_N[b])``
is then a positive rational, so ``f(X)`` is an exact ``flint.fmpq``.

*Affine attention* (section 9; a layer with biases) adds a key-side score term
and an output offset, both optional and zero by default:

    f(X) = c0 + sum_h sum_i softmax_i(x_i^T W_h x_N + w_h^T x_i) * v_h^T x_i ,

with ``exp_w = exp(w_h)`` entrywise positive rationals on the head and ``c0``
rational on the model.

>>> m = MultiHeadAttention.from_lists([[[2, 1], [1, 3]]], [[1, -1]])
>>> m([(1, 0), (0, 1)])   # weights exp_W[0][1] = 1 and exp_W[1][1] = 3: (1*1 + 3*(-1)) / 4
-1/2
>>> m.canonical() == m
True

A model's ``repr`` is code that ``eval`` reads back after ``from exactlearn import *``
(a rational that is not an integer as the text ``'p/q'``); ``print`` shows grids:

>>> m
MultiHeadAttention([Head(exp_W=[[2, 1], [1, 3]], v=[1, -1])])
>>> eval(repr(m)) == m
True
>>> print(m)
MultiHeadAttention: d = 2, 1 head
heads[0].exp_W = [2, 1]
                 [1, 3]
heads[0].v     = [1, -1]
>>> b = MultiHeadAttention([Head([[2, 1], [1, 3]], [1, -1], exp_w=[1, 3])], c0="1/2")
>>> b([(1, 0), (0, 1)])   # weights 1 * 1 and 3 * 3: 1/2 + (1 - 9) / 10
-3/10
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from flint import fmpq, fmpz

from . import display
from .errors import ExactLearnError, InvalidModelError, InvalidQueryError
from .evaluation import cached_ratio, evaluate_heads, prepare_heads
from .exact import Token, as_rational, as_tokens, rational_str
from .jsonio import JsonModel, json_object
from .limits import DEFAULT_LIMITS, MAX_OUTPUT_BITS, Limits, check_random_model
from .numberfield import NumberField, NumberFieldElement
from .numberfield import models as field_models
from .validate import integer, is_sequence
from .validate import seed as check_seed

__all__ = ["MODEL_FORMAT", "Head", "MultiHeadAttention"]

MODEL_FORMAT = "exactlearn.model/1"
_ZERO = fmpq(0)

Matrix = tuple[tuple[fmpq, ...], ...]
Vector = tuple[fmpq, ...]


def _matrix(rows: Any, what: str, d: int | None = None) -> Matrix:
    if not is_sequence(rows):
        raise InvalidModelError(f"{what}: expected a d x d matrix (a list of rows), "
                                f"got {type(rows).__name__}")
    n = len(rows)
    if n == 0:
        raise InvalidModelError(f"{what}: the matrix is empty (d must be at least 1)")
    if d is not None and n != d:
        raise InvalidModelError(f"{what}: has {n} rows, expected d = {d}")
    out = []
    for a, row in enumerate(rows):
        if not is_sequence(row):
            raise InvalidModelError(f"{what}: row {a} must be a list of {n} entries, "
                                    f"got {type(row).__name__}")
        if len(row) != n:
            raise InvalidModelError(f"{what}: row {a} must have {n} entries (the matrix must be square)")
        out_row = []
        for b, entry in enumerate(row):
            q = as_rational(entry, f"{what}[{a}][{b}]", InvalidModelError)
            if q <= 0:
                raise InvalidModelError(
                    f"{what}[{a}][{b}] = {rational_str(q)} is not positive; exp_W holds exp(W) entrywise, "
                    f"so every entry must be a positive rational"
                )
            out_row.append(q)
        out.append(tuple(out_row))
    return tuple(out)


def _vector(entries: Any, what: str, d: int) -> Vector:
    if not is_sequence(entries):
        raise InvalidModelError(f"{what}: expected a vector (a list) of {d} rationals, "
                                f"got {type(entries).__name__}")
    if len(entries) != d:
        raise InvalidModelError(f"{what}: has length {len(entries)}, expected d = {d}")
    return tuple(as_rational(e, f"{what}[{i}]", InvalidModelError) for i, e in enumerate(entries))


def _exp_bias(entries: Any, d: int) -> Vector | None:
    """``exp_w`` validated (positive rationals), or ``None`` when absent or all ones (``w = 0``)."""
    if entries is None:
        return None
    out = _vector(entries, "exp_w", d)
    for i, q in enumerate(out):
        if q <= 0:
            raise InvalidModelError(f"exp_w[{i}] = {rational_str(q)} is not positive; exp_w holds exp(w) "
                                    f"entrywise, so every entry must be a positive rational")
    return None if all(q == 1 for q in out) else out


@dataclass(frozen=True, repr=False)
class Head(display.Shown):
    """One attention head: ``exp_W`` (d x d positive rationals, ``W = log exp_W``) and ``v``.

    Construct with any exact rationals (ints, Fractions, ``"p/q"`` strings); they
    are validated and stored as ``flint.fmpq``. ``exp_w`` (optional): ``exp(w)``
    entrywise, ``d`` positive rationals, for the score term ``w^T x_i`` of affine
    attention; stored as ``None`` when absent or all ones (``w = 0``). Over a
    number field ``K`` (``field=K``, or entries that are elements of ``K``) the
    entries are elements of ``K`` (texts such as ``"1 + a"`` are read by ``K``),
    ``exp_W`` positive in its real embedding
    (:mod:`exactlearn.numberfield.models`); affine heads are rational only.
    """

    exp_W: Matrix
    v: Vector
    exp_w: Vector | None = None

    def __init__(self, exp_W: Any, v: Any, exp_w: Any = None, *, field: NumberField | None = None):
        K = field if field is not None else field_models.field_in(exp_W, v)
        object.__setattr__(self, "_field", K)
        if K is not None:
            if exp_w is not None:
                raise InvalidModelError("exp_w (affine attention) is supported over the rationals only, "
                                        f"not over the number field {K}")
            matrix = field_models.field_matrix(K, exp_W)
            object.__setattr__(self, "exp_W", matrix)
            object.__setattr__(self, "v", field_models.field_vector(K, v, len(matrix)))
            object.__setattr__(self, "exp_w", None)
            return
        matrix = _matrix(exp_W, "exp_W")
        object.__setattr__(self, "exp_W", matrix)
        object.__setattr__(self, "v", _vector(v, "v", len(matrix)))
        object.__setattr__(self, "exp_w", _exp_bias(exp_w, len(matrix)))

    @property
    def field(self) -> NumberField | None:
        """The number field of the entries (``None``: rationals)."""
        return self.__dict__.get("_field")

    @property
    def d(self) -> int:
        return len(self.v)

    def key(self) -> tuple:
        """A total order on heads, used to list canonical heads deterministically."""
        return head_key(self.exp_W, self.v, self.exp_w)

    def score_factors(self, last: Token) -> tuple[fmpq, ...]:
        """``g[a] = exp_w[a] * prod_b exp_W[a][b] ** last[b]``, so ``exp(x^T W last + w^T x) = prod_a
        g[a] ** x[a]``."""
        out = []
        for a, row in enumerate(self.exp_W):
            g = fmpq(1) if self.exp_w is None else self.exp_w[a]
            for e, t in zip(row, last):
                if t:
                    g *= e**t
            out.append(g)
        return tuple(out)

    def score(self, token: Token, last: Token) -> fmpq:
        """The exact attention score ``exp(token^T W last + w^T token)``."""
        return _apply(self.score_factors(last), token)

    def to_dict(self) -> dict:
        out = {
            "exp_W": [[entry_str(e) for e in row] for row in self.exp_W],
            "v": [entry_str(e) for e in self.v],
        }
        if self.exp_w is not None:
            out["exp_w"] = [rational_str(e) for e in self.exp_w]
        return out

    def __repr__(self) -> str:
        return display.head_code(self)

    def _lines(self) -> list[str]:
        return display.head_lines(self)

    def _latex_lines(self) -> list[str]:
        return [display.head_latex(self)]


def head_key(exp_W: Matrix, v: Vector, exp_w: Vector | None) -> tuple:
    """The order of heads (:meth:`Head.key`): by ``exp_W``, then ``v``, then ``exp_w`` (``None`` first)."""
    key = (tuple(e for row in exp_W for e in row), v)
    return key if exp_w is None else (*key, exp_w)


def entry_str(e: Any) -> str:
    """An entry as text: ``"p/q"`` for a rational, the field's notation (``"1 + a"``) for an element."""
    return rational_str(e) if isinstance(e, fmpq) else str(e)


def _apply(factors: Sequence[fmpq], token: Token) -> fmpq:
    w = fmpq(1)
    for g, t in zip(factors, token):
        if t:
            w *= g**t
    return w


class MultiHeadAttention(display.Shown, JsonModel):
    """A multi-head attention regressor with exact rational outputs.

    ``MultiHeadAttention(heads)`` takes a sequence of :class:`Head` (at least
    one, all of the same width ``d``). Calling the model on a non-empty sequence
    of integer tokens returns the exact output ``f(X)`` as ``flint.fmpq``.
    ``c0`` (optional, rational, default 0): the output offset of affine attention.

    Equality (``==``) compares the head lists exactly and in order (and ``c0``); use
    :meth:`canonical` (which sorts) or :meth:`equivalent` to compare functions.

    Over a number field ``K`` (``field=K``, or heads whose entries are elements
    of ``K``) outputs are elements of ``K`` (docs/number-fields.md).

    ``repr`` is code for ``eval`` after ``from exactlearn import *``: integers bare,
    other rationals and field elements as texts (``'16/29'``, ``'1 + a'``), over a
    number field ``MultiHeadAttention.from_lists(exp_Ws, vs, field=NumberField(...))``.
    ``str`` (and IPython) shows each head's ``exp_W`` as a grid, Jupyter as LaTeX
    (:mod:`exactlearn.display`).
    """

    def __init__(self, heads: Iterable[Head], c0: Any = 0, *, field: NumberField | None = None):
        heads = tuple(heads)
        if not heads:
            raise InvalidModelError("a model needs at least one head "
                                    "(use canonical() to drop vanishing heads)")
        for i, h in enumerate(heads):
            if not isinstance(h, Head):
                raise InvalidModelError(f"head {i}: expected exactlearn.Head, got {type(h).__name__}")
        widths = {h.d for h in heads}
        if len(widths) != 1:
            raise InvalidModelError(f"all heads must have the same width d, got widths {sorted(widths)}")
        fields = {h.field for h in heads} - {None}
        K = field if field is not None else next(iter(fields), None)
        if K is not None:
            if fields - {K}:
                raise InvalidModelError(f"the heads are over different number fields: "
                                        f"{'; '.join(map(str, fields | {K}))}")
            heads = tuple(h if h.field == K else Head(h.exp_W, h.v, field=K) for h in heads)
        self._heads = heads
        self._d = widths.pop()
        self._zero_heads = False
        self._field = K
        self._c0 = as_rational(c0, "c0", InvalidModelError)
        if K is not None and self._c0 != 0:
            raise InvalidModelError(f"c0 (affine attention) is supported over the rationals only, not over "
                                    f"the number field {K}")

    # -- construction ------------------------------------------------------------
    @classmethod
    def from_lists(cls, exp_Ws: Sequence[Any], vs: Sequence[Any], exp_ws: Sequence[Any] | None = None,
                   c0: Any = 0, *, field: NumberField | None = None) -> MultiHeadAttention:
        """Build from parallel lists of ``exp_W`` matrices and ``v`` vectors (over ``field`` if given; with
        ``exp_w`` vectors and the offset ``c0`` for affine attention)."""
        if not is_sequence(exp_Ws) or not is_sequence(vs):
            raise InvalidModelError("from_lists takes a list of exp_W matrices and a list of value vectors")
        if len(exp_Ws) != len(vs):
            raise InvalidModelError(f"got {len(exp_Ws)} exp_W matrices but {len(vs)} value vectors")
        if exp_ws is None:
            exp_ws = [None] * len(vs)
        elif not is_sequence(exp_ws) or len(exp_ws) != len(vs):
            raise InvalidModelError(f"exp_ws must list one exp_w vector per head ({len(vs)})")
        return cls((Head(e, v, b, field=field) for e, v, b in zip(exp_Ws, vs, exp_ws)), c0, field=field)

    @classmethod
    def random(cls, d: int, heads: int, seed: int | str = 0, *, height: int = 30,
               limits: Limits = DEFAULT_LIMITS, field: NumberField | None = None,
               affine: bool = False) -> MultiHeadAttention:
        """A random model whose canonical form has exactly ``heads`` heads.

        ``exp_W`` entries are ``p/q`` with ``1 <= p, q <= height``; ``v`` entries are
        ``p/q`` with ``|p| <= height``, ``1 <= q <= height``. Heads have pairwise
        different ``exp_W`` and nonzero ``v``. Reproducible from ``seed`` (an int
        or a short str, :func:`~exactlearn.validate.seed`); uses its own
        ``random.Random`` (no global state). Sizes above ``limits`` (``model_d``,
        ``model_heads``, ``model_entries``, ``height``) are refused with the
        estimated time and memory. Over a number field ``field=K`` every
        coordinate of an entry is such a ``p/q`` (an ``exp_W`` entry negative in
        the embedding is negated). ``affine`` (rationals only): every head also
        gets ``exp_w`` (entries like ``exp_W``'s) and the model ``c0`` (like a
        ``v`` entry), drawn after the same heads as without it.
        """
        check_random_model(d, heads, height, limits, error=InvalidModelError)
        check_seed(seed)
        if field is not None:
            if affine:
                raise InvalidModelError("affine attention is supported over the rationals only")
            pairs = field_models.random_heads(field, d, heads, seed, height)
            return cls((Head(e, v, field=field) for e, v in pairs), field=field)
        out, rng = random_heads(d, heads, seed, height)
        if not affine:
            return cls(out)
        biased = [Head(h.exp_W, h.v, [fmpq(rng.randint(1, height), rng.randint(1, height)) for _ in range(d)])
                  for h in out]
        return cls(biased, fmpq(rng.randint(-height, height), rng.randint(1, height)))

    # -- basic properties --------------------------------------------------------
    @property
    def d(self) -> int:
        """Token width."""
        return self._d

    @property
    def heads(self) -> tuple[Head, ...]:
        return self._heads

    @property
    def field(self) -> NumberField | None:
        """The number field of the weights (``None``: the rationals)."""
        return self.__dict__.get("_field")

    @property
    def c0(self) -> fmpq:
        """The output offset (0 unless the model is affine attention)."""
        return self.__dict__.get("_c0", _ZERO)

    @property
    def is_affine(self) -> bool:
        """True iff some head has a score term ``w_h^T x_i`` or the offset ``c0`` is nonzero."""
        return self.c0 != 0 or any(h.exp_w is not None for h in self._heads)

    @property
    def num_heads(self) -> int:
        """Number of heads as stored (see :meth:`canonical` for the canonical count)."""
        return len(self._heads)

    def __len__(self) -> int:
        return len(self._heads)

    # -- evaluation ---------------------------------------------------------------
    def __call__(self, tokens: Sequence[Sequence[int]], *,
                 max_bits: int = MAX_OUTPUT_BITS) -> fmpq | NumberFieldElement:
        """Exact output ``f(X)`` at the final token of ``tokens``.

        A query whose answer would need more than about ``max_bits`` bits is
        refused with :class:`~exactlearn.InvalidQueryError` before computing.
        """
        query = as_tokens(tokens, self._d)
        try:
            return self.evaluate(query, max_bits=max_bits)
        except OverflowError:
            raise InvalidQueryError(
                "the token entries are too large: the exact scores exp(x^T W y) would need exponents "
                "beyond what exact arithmetic can represent"
            ) from None

    def evaluate(self, tokens: Sequence[Token], *,
                 max_bits: int = MAX_OUTPUT_BITS) -> fmpq | NumberFieldElement:
        """Like ``__call__`` but trusts that ``tokens`` are validated integer tuples.

        Softmax is invariant under scaling all weights, so each head divides
        its weights by the final token's: token ``t`` gets the ratio
        ``rho = exp((t - x_N)^T W x_N)`` (one exact power product, integers
        only), the final token gets ``1``. Equal tokens share one ratio, and
        ratios are kept in a bounded per-model cache keyed by the token pair
        (the schedule asks ``2H + 1`` queries with the same two tokens).

        Each new ratio's size is bounded from the token entries and the bit
        sizes of ``exp_W`` before it is computed, and the sizes are summed over
        the query: more than ``max_bits`` raises :class:`~exactlearn.InvalidQueryError`.
        """
        if self.field is not None:
            max_bits = integer("max_bits", max_bits, 1, error=InvalidQueryError)
            cache = self.__dict__.setdefault("_ratio_cache", {})
            if len(cache) >= self._CACHE_LIMIT:
                cache.clear()
            return field_models.evaluate(self.field, self._heads, tokens, max_bits, cache)
        value = evaluate_heads(self._prepared(), self._ratio, tokens, max_bits)
        return value + self.c0 if self.c0 != 0 else value

    #: entries kept in each model's ratio cache before it is emptied
    _CACHE_LIMIT = 1 << 14

    def _prepared(self) -> list[tuple]:
        """Per head: numerators and denominators of ``exp_W`` as ``fmpz`` rows, ``v`` over a common
        denominator."""
        prepared = self.__dict__.get("_prepared_heads")
        if prepared is None:
            prepared, self._bit_rows = prepare_heads(self._heads)
            self._prepared_heads = prepared
            self._ratio_cache: dict = {}
        return prepared

    def _ratio(self, index: int, token: Token, last: Token, num_rows, den_rows, max_bits: int,
               used: int) -> fmpq:
        """``exp((token - last)^T W_index last)`` exactly, cached per (head, token, last).

        Refused before computing if its size bound and the ``used`` bits exceed ``max_bits``.
        """
        return cached_ratio(self._ratio_cache, self._CACHE_LIMIT, self._bit_rows[index], (index, token, last),
                            num_rows, den_rows, max_bits, used)

    def __getstate__(self) -> dict:
        # caches are rebuilt on demand; do not ship them to other processes
        state = dict(self.__dict__)
        state.pop("_prepared_heads", None)
        state.pop("_ratio_cache", None)
        state.pop("_bit_rows", None)
        return state

    # -- canonical form -----------------------------------------------------------
    def canonical(self) -> MultiHeadAttention:
        """Merge heads with equal ``exp_W`` (summing ``v``), drop zero ``v``, sort.

        Two models compute the same function iff their canonical forms are equal
        (docs/algorithm.md section 1). If every head vanishes the result is the zero
        model, which has no heads; it is represented with ``num_heads == 0``.
        """
        merged = merged_heads(self._heads, self._d, self.field)
        return MultiHeadAttention._unchecked(merged, self._d, self.field, c0=self.c0)

    @classmethod
    def _unchecked(cls, heads: list[Head], d: int, field: NumberField | None = None, *,
                   c0: fmpq = _ZERO) -> MultiHeadAttention:
        obj = cls.__new__(cls)
        obj._heads = tuple(heads)
        obj._d = d
        obj._zero_heads = not heads
        obj._field = field
        obj._c0 = c0
        return obj

    @property
    def num_canonical_heads(self) -> int:
        """``H``: the number of heads of the canonical form."""
        return self.canonical().num_heads

    def equivalent(self, other: MultiHeadAttention) -> bool:
        """True iff both models compute the same function (equal canonical forms)."""
        if not isinstance(other, MultiHeadAttention):
            raise TypeError(f"equivalent() compares two MultiHeadAttention models, "
                            f"got {type(other).__name__}")
        return self._d == other._d and self.canonical() == other.canonical()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MultiHeadAttention):
            return NotImplemented
        return self._d == other._d and self._heads == other._heads and self.c0 == other.c0

    def __hash__(self) -> int:
        return hash((self._d, self._heads)) if self.c0 == 0 else hash((self._d, self._heads, self.c0))

    # -- serialisation ------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-ready dict; rationals are ``"p/q"`` strings (over a number field: its notation, and a
        ``field`` entry with the minimal polynomial and an isolating interval of the root; ``c0`` only
        when nonzero)."""
        out: dict[str, Any] = {"format": MODEL_FORMAT, "d": self._d}
        if self.field is not None:
            out["field"] = self.field.to_dict()
        out["heads"] = [h.to_dict() for h in self._heads]
        if self.c0 != 0:
            out["c0"] = rational_str(self.c0)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> MultiHeadAttention:
        data = json_object(data, "a model", MODEL_FORMAT, "unknown model format")
        field = _field_of(data)
        out = _heads_of(data, field)
        c0 = as_rational(data.get("c0", 0), "the model's field 'c0'", InvalidModelError)
        if not out:
            if "d" not in data:
                raise InvalidModelError("a model with no heads needs an integer 'd' >= 1")
            return cls._unchecked([], integer("d", data["d"], error=InvalidModelError), field, c0=c0)
        return cls(out, c0, field=field)

    def __repr__(self) -> str:
        return display.model_code(self)

    def _lines(self) -> list[str]:
        return display.model_lines(self)

    def _latex_lines(self) -> list[str]:
        return display.model_latex(self)


def merged_heads(heads: Sequence[Head], d: int, field: NumberField | None) -> list[Head]:
    """The heads of :meth:`MultiHeadAttention.canonical`: heads with equal scores (``exp_W`` and
    ``exp_w``) merged by summing ``v``, zero ``v`` dropped, sorted by :meth:`Head.key`."""
    sums: dict[tuple, list[Any]] = defaultdict(lambda: [fmpq(0)] * d)
    order: list[tuple] = []
    for h in heads:
        score = (h.exp_W, h.exp_w)
        if score not in sums:
            order.append(score)
        sums[score] = [a + b for a, b in zip(sums[score], h.v)]
    merged = [Head(e, sums[(e, w)], w, field=field) for e, w in order if any(x != 0 for x in sums[(e, w)])]
    merged.sort(key=Head.key)
    return merged


def random_heads(d: int, heads: int, seed: Any, height: int) -> tuple[list[Head], random.Random]:
    """The heads of :meth:`MultiHeadAttention.random` over the rationals: ``heads`` heads with pairwise
    different ``exp_W`` (entries ``p/q``, ``1 <= p, q <= height``) and nonzero ``v`` (entries ``p/q``,
    ``|p| <= height``, ``1 <= q <= height``), reproducible from ``seed``; with its own ``random.Random``
    (returned: affine attention draws its score terms after the heads)."""
    # the integers 1..height are distinct entries: no count needed unless that is too few
    if height ** min(d * d, heads.bit_length()) < heads:  # then height < heads
        # distinct p/q with 1 <= p, q <= height: 2 * sum_{q <= height} phi(q) - 1
        entries = 2 * sum(int(fmpz(q).euler_phi()) for q in range(1, height + 1)) - 1
        if entries ** min(d * d, heads.bit_length()) < heads:
            raise InvalidModelError(
                f"height = {height} allows only {entries ** (d * d)} different exp_W matrices of size "
                f"{d}x{d}, fewer than heads = {heads}; increase height"
            )
    rng = random.Random(f"exactlearn.model.random:{d}:{heads}:{seed}:{height}")
    out: list[Head] = []
    seen = set()
    for _ in range(1000 * heads):
        if len(out) == heads:
            break
        exp_W = [[fmpq(rng.randint(1, height), rng.randint(1, height)) for _ in range(d)]
                 for _ in range(d)]
        v = [fmpq(rng.randint(-height, height), rng.randint(1, height)) for _ in range(d)]
        key = tuple(e for row in exp_W for e in row)
        if key in seen or all(e == 0 for e in v):
            continue
        seen.add(key)
        out.append(Head(exp_W, v))
    if len(out) < heads:  # pragma: no cover - needs an astronomically unlucky generator
        raise InvalidModelError(f"could not draw {heads} different heads with height = {height}")
    return out, rng


def _heads_of(data: dict, field: NumberField | None) -> list[Head]:
    """The heads of a model's JSON (its ``heads`` list), checked against its ``d`` entry if it has one."""
    heads = data.get("heads")
    if not isinstance(heads, list):
        raise InvalidModelError("a model needs a list 'heads' of {'exp_W': ..., 'v': ...} objects")
    out = []
    for i, h in enumerate(heads):
        if not isinstance(h, dict) or "exp_W" not in h or "v" not in h:
            raise InvalidModelError(f"head {i}: needs the keys 'exp_W' and 'v'")
        try:
            out.append(Head(h["exp_W"], h["v"], h.get("exp_w"), field=field))
        except InvalidModelError as exc:
            raise InvalidModelError(f"head {i}: {exc}") from None
    if "d" in data and (isinstance(data["d"], bool) or not isinstance(data["d"], int)):
        raise InvalidModelError(f"the model's field 'd' must be an integer, "
                                f"got {type(data['d']).__name__} "
                                f"{data['d']!r}")
    if "d" in data and out and data["d"] != out[0].d:
        raise InvalidModelError(f"the model's field 'd' = {data['d']!r} disagrees with its heads, whose "
                                f"exp_W matrices are {out[0].d} x {out[0].d} (token width {out[0].d})")
    return out


def _field_of(data: dict) -> NumberField | None:
    """The number field of a model's JSON (its ``field`` entry), ``None`` without one."""
    if "field" not in data:
        return None
    try:
        return NumberField.from_dict(data["field"])
    except ExactLearnError as exc:
        raise InvalidModelError(f"the model's field: {exc}") from None
