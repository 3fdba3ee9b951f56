"""Multi-head softmax attention with exp-parametrised weights, evaluated exactly.

The model (docs/algorithm.md section 1) maps a sequence ``X = (x_1, ..., x_N)`` of
integer tokens in ``Z^d`` to the scalar

    f(X) = sum_h sum_i softmax_i(x_i^T W_h x_N) * v_h^T x_i .

Each head stores ``exp_W = exp(W_h)`` entrywise, a ``d x d`` matrix of positive
rationals, and ``v_h`` in ``Q^d`` (section 2). For integer tokens every
attention score ``exp(x_i^T W_h x_N) = prod_{a,b} exp_W[a][b] ** (x_i[a] x_N[b])``
is then a positive rational, so ``f(X)`` is an exact ``flint.fmpq``.

>>> m = MultiHeadAttention.from_lists([[[2, 1], [1, 3]]], [[1, -1]])
>>> m([(1, 0), (0, 1)])   # weights exp_W[0][1] = 1 and exp_W[1][1] = 3: (1*1 + 3*(-1)) / 4
-1/2
>>> m.canonical() == m
True
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from flint import fmpq, fmpz

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


@dataclass(frozen=True)
class Head:
    """One attention head: ``exp_W`` (d x d positive rationals, ``W = log exp_W``) and ``v``.

    Construct with any exact rationals (ints, Fractions, ``"p/q"`` strings); they
    are validated and stored as ``flint.fmpq``. Over a number field ``K``
    (``field=K``, or entries that are elements of ``K``) the entries are elements
    of ``K`` (texts such as ``"1 + a"`` are read by ``K``), ``exp_W`` positive in
    its real embedding (:mod:`exactlearn.numberfield.models`).
    """

    exp_W: Matrix
    v: Vector

    def __init__(self, exp_W: Any, v: Any, field: NumberField | None = None):
        K = field if field is not None else field_models.field_in(exp_W, v)
        object.__setattr__(self, "_field", K)
        if K is not None:
            matrix = field_models.field_matrix(K, exp_W)
            object.__setattr__(self, "exp_W", matrix)
            object.__setattr__(self, "v", field_models.field_vector(K, v, len(matrix)))
            return
        matrix = _matrix(exp_W, "exp_W")
        object.__setattr__(self, "exp_W", matrix)
        object.__setattr__(self, "v", _vector(v, "v", len(matrix)))

    @property
    def field(self) -> NumberField | None:
        """The number field of the entries (``None``: rationals)."""
        return self.__dict__.get("_field")

    @property
    def d(self) -> int:
        return len(self.v)

    def key(self) -> tuple:
        """A total order on heads, used to list canonical heads deterministically."""
        return (tuple(e for row in self.exp_W for e in row), self.v)

    def score_factors(self, last: Token) -> tuple[fmpq, ...]:
        """``g[a] = prod_b exp_W[a][b] ** last[b]``, so ``exp(x^T W last) = prod_a g[a] ** x[a]``."""
        out = []
        for row in self.exp_W:
            g = fmpq(1)
            for e, t in zip(row, last):
                if t:
                    g *= e**t
            out.append(g)
        return tuple(out)

    def score(self, token: Token, last: Token) -> fmpq:
        """The exact attention score ``exp(token^T W last)``."""
        return _apply(self.score_factors(last), token)

    def to_dict(self) -> dict:
        return {
            "exp_W": [[entry_str(e) for e in row] for row in self.exp_W],
            "v": [entry_str(e) for e in self.v],
        }

    def __repr__(self) -> str:
        exp_w = [[entry_str(e) for e in row] for row in self.exp_W]
        return f"Head(exp_W={exp_w}, v={[entry_str(e) for e in self.v]})"


def entry_str(e: Any) -> str:
    """An entry as text: ``"p/q"`` for a rational, the field's notation (``"1 + a"``) for an element."""
    return rational_str(e) if isinstance(e, fmpq) else str(e)


def _apply(factors: Sequence[fmpq], token: Token) -> fmpq:
    w = fmpq(1)
    for g, t in zip(factors, token):
        if t:
            w *= g**t
    return w


class MultiHeadAttention(JsonModel):
    """A multi-head attention regressor with exact rational outputs.

    ``MultiHeadAttention(heads)`` takes a sequence of :class:`Head` (at least
    one, all of the same width ``d``). Calling the model on a non-empty sequence
    of integer tokens returns the exact output ``f(X)`` as ``flint.fmpq``.

    Equality (``==``) compares the head lists exactly and in order; use
    :meth:`canonical` (which sorts) or :meth:`equivalent` to compare functions.

    Over a number field ``K`` (``field=K``, or heads whose entries are elements
    of ``K``) outputs are elements of ``K`` (docs/number-fields.md).
    """

    def __init__(self, heads: Iterable[Head], field: NumberField | None = None):
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

    # -- construction ------------------------------------------------------------
    @classmethod
    def from_lists(cls, exp_Ws: Sequence[Any], vs: Sequence[Any], *,
                   field: NumberField | None = None) -> MultiHeadAttention:
        """Build from parallel lists of ``exp_W`` matrices and ``v`` vectors (over ``field`` if given)."""
        if not is_sequence(exp_Ws) or not is_sequence(vs):
            raise InvalidModelError("from_lists takes a list of exp_W matrices and a list of value vectors")
        if len(exp_Ws) != len(vs):
            raise InvalidModelError(f"got {len(exp_Ws)} exp_W matrices but {len(vs)} value vectors")
        return cls((Head(e, v, field=field) for e, v in zip(exp_Ws, vs)), field=field)

    @classmethod
    def random(cls, d: int, heads: int, seed: int | str = 0, *, height: int = 30,
               limits: Limits = DEFAULT_LIMITS, field: NumberField | None = None) -> MultiHeadAttention:
        """A random model whose canonical form has exactly ``heads`` heads.

        ``exp_W`` entries are ``p/q`` with ``1 <= p, q <= height``; ``v`` entries are
        ``p/q`` with ``|p| <= height``, ``1 <= q <= height``. Heads have pairwise
        different ``exp_W`` and nonzero ``v``. Reproducible from ``seed`` (an int
        or a short str, :func:`~exactlearn.validate.seed`); uses its own
        ``random.Random`` (no global state). Sizes above ``limits`` (``model_d``,
        ``model_heads``, ``model_entries``, ``height``) are refused with the
        estimated time and memory. Over a number field ``field=K`` every
        coordinate of an entry is such a ``p/q`` (an ``exp_W`` entry negative in
        the embedding is negated).
        """
        check_random_model(d, heads, height, limits, error=InvalidModelError)
        check_seed(seed)
        if field is not None:
            pairs = field_models.random_heads(field, d, heads, seed, height)
            return cls((Head(e, v, field=field) for e, v in pairs), field=field)
        return cls(random_heads(d, heads, seed, height))

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
        return evaluate_heads(self._prepared(), self._ratio, tokens, max_bits)

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
        sums: dict[Matrix, list[fmpq]] = defaultdict(lambda: [fmpq(0)] * self._d)
        order: list[Matrix] = []
        for h in self._heads:
            if h.exp_W not in sums:
                order.append(h.exp_W)
            acc = sums[h.exp_W]
            sums[h.exp_W] = [a + b for a, b in zip(acc, h.v)]
        merged = [Head(e, sums[e], field=self.field) for e in order if any(x != 0 for x in sums[e])]
        merged.sort(key=Head.key)
        return MultiHeadAttention._unchecked(merged, self._d, self.field)

    @classmethod
    def _unchecked(cls, heads: list[Head], d: int, field: NumberField | None = None) -> MultiHeadAttention:
        obj = cls.__new__(cls)
        obj._heads = tuple(heads)
        obj._d = d
        obj._zero_heads = not heads
        obj._field = field
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
        return self._d == other._d and self._heads == other._heads

    def __hash__(self) -> int:
        return hash((self._d, self._heads))

    # -- serialisation ------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-ready dict; rationals are ``"p/q"`` strings (over a number field: its notation, and a
        ``field`` entry with the minimal polynomial and an isolating interval of the root)."""
        out: dict[str, Any] = {"format": MODEL_FORMAT, "d": self._d}
        if self.field is not None:
            out["field"] = self.field.to_dict()
        out["heads"] = [h.to_dict() for h in self._heads]
        return out

    @classmethod
    def from_dict(cls, data: Any) -> MultiHeadAttention:
        data = json_object(data, "a model", MODEL_FORMAT, "unknown model format")
        field = _field_of(data)
        out = _heads_of(data, field)
        if not out:
            if "d" not in data:
                raise InvalidModelError("a model with no heads needs an integer 'd' >= 1")
            return cls._unchecked([], integer("d", data["d"], error=InvalidModelError), field)
        return cls(out, field=field)

    def __repr__(self) -> str:
        over = "" if self.field is None else f", field={self.field!r}"
        return f"MultiHeadAttention(d={self._d}, heads={list(self._heads)!r}{over})"


def random_heads(d: int, heads: int, seed: Any, height: int) -> list[Head]:
    """The heads of :meth:`MultiHeadAttention.random` over the rationals: ``heads`` heads with pairwise
    different ``exp_W`` (entries ``p/q``, ``1 <= p, q <= height``) and nonzero ``v`` (entries ``p/q``,
    ``|p| <= height``, ``1 <= q <= height``), reproducible from ``seed`` (its own ``random.Random``)."""
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
    return out


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
            out.append(Head(h["exp_W"], h["v"], field=field))
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
