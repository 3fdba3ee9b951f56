"""``torch.nn.MultiheadAttention`` as a black-box float64 oracle (floats by design).

The mapping (docs/algorithm.md section 1, the final token as the attention query)
---------------------------------------------------------------------------------
For tokens ``x_1..x_N`` (rows of ``X``, width ``d = embed_dim``) the oracle calls
the module with ``query = x_N`` and ``key = value = X`` and returns
``readout . out``. PyTorch computes, for head ``h`` with the row block
``B_h = [h * d_head, (h + 1) * d_head)`` of the input projections
(``W_Q = in_proj_weight[0:d]``, ``W_K = in_proj_weight[d:2d]``,
``W_V = in_proj_weight[2d:3d]``, each ``d x d``; ``W_Q,h = W_Q[B_h, :]``,
``d_head x d``) and ``W_O = out_proj.weight`` (``d x d``, ``W_O,h = W_O[:, B_h]``)::

    score_{h,i} = (W_Q,h x_N) . (W_K,h x_i) / sqrt(d_head)
                = x_i^T (W_K,h^T W_Q,h / sqrt(d_head)) x_N
    out         = W_O concat_h( sum_i softmax_i(score_{h,i}) W_V,h x_i )
    readout . out = sum_h sum_i softmax_i(score_{h,i}) (W_V,h^T W_O,h^T readout)^T x_i

so the module is the attention of :mod:`exactlearn` with

    W_h = W_K,h^T W_Q,h / sqrt(d_head)        (key on the left, query on the right)
    v_h = W_V,h^T W_O,h^T readout .

Orientation: ``W_h[a][b]`` multiplies key coordinate ``a`` and query coordinate
``b``; the transpose ``W_Q,h^T W_K,h`` would describe attention with the roles
of key and query swapped. :func:`torch_parameters` returns these ``(W_h, v_h)``
computed in high precision from the (float64) weights, and the tests check
numerically that :func:`torch_model` reproduces the module's outputs.

Biases (``bias=True``, PyTorch's default): with ``in_proj_bias = [b_Q; b_K; b_V]``
and ``b_O = out_proj.bias`` the score is
``(W_Q,h x_N + b_Q,h) . (W_K,h x_i + b_K,h) / sqrt(d_head)``. Its terms
``b_K,h . (W_Q,h x_N + b_Q,h)`` depend on the final token only and cancel in the
softmax; the term ``x_i^T W_K,h^T b_Q,h / sqrt(d_head)`` stays. The value bias
passes through the softmax unchanged (its weights sum to 1). So the module is
*affine attention* (docs/algorithm.md section 9) with the same ``W_h`` and ``v_h``,

    w_h = W_K,h^T b_Q,h / sqrt(d_head)       (a key-side score term w_h^T x_i)
    c0  = readout . (W_O b_V + b_O)          (= the output at x_N = 0, f([0]))

(:func:`torch_parameters` with ``affine=True``; :func:`torch_model` includes them).
The oracle declares ``affine = True`` for such a module, so
:func:`~exactlearn.approx.learn_approx` learns ``w_h`` and ``c0`` by default.

Requirements: no key/value bias rows (``add_bias_kv=False``), no zero
attention (``add_zero_attn=False``), ``kdim = vdim = embed_dim``, and no
dropout at evaluation. The module is copied and computes in float64 (float32
weights are exactly representable, so the function is the same, evaluated more
accurately) or in the ``dtype`` given (``torch.float32``: the layer answers as
in use, with a declared ``eps`` to match, :func:`default_eps`); the caller's
module is not changed.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, NamedTuple

import mpmath
from flint import fmpq

from ..approx.core.balls import as_fmpq, working_precision
from ..approx.core.models import RealMultiHeadAttention
from ..approx.valuetruth import VectorParameters
from ..errors import InvalidArgumentError, InvalidQueryError
from ..querylog import QueryLog
from ..validate import integer

__all__ = ["torch_attention", "torch_parameters", "torch_model", "TorchAttentionOracle", "AffineParameters",
           "torch_vector_parameters",
           "DEFAULT_TORCH_EPS", "default_eps"]

#: The error bound the float64 oracle declares by default (absolute, per answer).
#: Outputs of a small layer with O(1) weights and tokens are computed with errors
#: around 1e-16..1e-15; 1e-13 leaves a wide margin. Checked against a 256-bit
#: evaluation in tests/test_torch_target.py; pass ``eps`` for other magnitudes.
DEFAULT_TORCH_EPS = fmpq(1, 10**13)


def default_eps(dtype) -> fmpq:
    """The error bound declared for answers computed in ``dtype``: :data:`DEFAULT_TORCH_EPS` scaled by the
    dtype's unit roundoff against float64's (float32: ``1e-13 * 2^29``, about 5.4e-5; measured errors of
    float32 layers with default initialisation: 1e-7 to 2.4e-6, d = 4 to 16).

    >>> import torch
    >>> default_eps(torch.float64) == DEFAULT_TORCH_EPS, float(default_eps(torch.float32))
    (True, 5.36870912e-05)
    """
    torch = _torch()
    if not dtype.is_floating_point:
        raise InvalidArgumentError(f"a torch oracle computes in a floating-point dtype, got {dtype}")
    digits = int(round(-mpmath.log(torch.finfo(dtype).eps, 2)))  # float64: 52, float32: 23
    return DEFAULT_TORCH_EPS * fmpq(2 ** max(0, 52 - digits))


def _torch():
    try:
        import torch
    except ImportError:  # pragma: no cover - depends on the environment
        raise InvalidArgumentError(
            'the torch target needs PyTorch: pip install "exactlearn[torch]" (CPU build: '
            "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu)"
        ) from None
    return torch


def _check_module(module) -> None:
    torch = _torch()
    if not isinstance(module, torch.nn.MultiheadAttention):
        raise InvalidArgumentError(f"expected a torch.nn.MultiheadAttention, got {type(module).__name__}")
    if module.bias_k is not None or module.bias_v is not None:
        raise InvalidArgumentError(
            "the attention module has add_bias_kv=True; exactlearn needs add_bias_kv=False"
        )
    if module.add_zero_attn:
        raise InvalidArgumentError(
            "the attention module has add_zero_attn=True; exactlearn needs add_zero_attn=False"
        )
    if module.kdim != module.embed_dim or module.vdim != module.embed_dim:
        raise InvalidArgumentError(
            "kdim and vdim must equal embed_dim (keys, values and queries are the same tokens)"
        )
    if module.training and module.dropout > 0:
        raise InvalidArgumentError("the module is in training mode with dropout; call module.eval() first")


def _projections(module):
    """``(W_Q, W_K, W_V, W_O)`` as float64 tensors (each ``d x d``)."""
    torch = _torch()
    with torch.no_grad():
        if module._qkv_same_embed_dim:
            wq, wk, wv = module.in_proj_weight.detach().to(torch.float64).chunk(3, dim=0)
        else:
            wq = module.q_proj_weight.detach().to(torch.float64)
            wk = module.k_proj_weight.detach().to(torch.float64)
            wv = module.v_proj_weight.detach().to(torch.float64)
        wo = module.out_proj.weight.detach().to(torch.float64)
    return wq, wk, wv, wo


def _has_biases(module) -> bool:
    return module.in_proj_bias is not None or module.out_proj.bias is not None


def _biases(module):
    """``(b_Q, b_K, b_V, b_O)`` as float64 tensors (zeros where the module has none)."""
    torch = _torch()
    d = int(module.embed_dim)
    with torch.no_grad():
        if module.in_proj_bias is None:
            bq = bk = bv = torch.zeros(d, dtype=torch.float64)
        else:
            bq, bk, bv = module.in_proj_bias.detach().to(torch.float64).chunk(3)
        bo = (torch.zeros(d, dtype=torch.float64) if module.out_proj.bias is None
              else module.out_proj.bias.detach().to(torch.float64))
    return bq, bk, bv, bo


def _readout(readout, d: int):
    torch = _torch()
    r = torch.as_tensor(readout, dtype=torch.float64).detach().reshape(-1)
    if r.numel() != d:
        raise InvalidArgumentError(f"the readout must have embed_dim = {d} entries, got {r.numel()}")
    return r


class TorchAttentionOracle(QueryLog):
    """A ``torch.nn.MultiheadAttention`` and a readout as a black box computing in ``dtype``.

    Call it with a list of real token vectors (length ``d``); it returns the
    Python float ``readout . MHA(query = x_N, key = value = X)`` computed in
    ``dtype`` (float64 unless given); without a readout (``readout=None``) the
    whole output vector ``MHA(...)`` as a tuple of ``d`` Python floats, and it
    declares ``outputs = d`` (vector outputs: docs/algorithm.md section 10, and
    docs/approximate.md "Vector outputs"). Keeps its own log (:class:`~exactlearn.querylog.QueryLog`);
    declares ``eps`` (default :func:`default_eps` of ``dtype``: 1e-13 for
    float64), the bound on its output error, and ``affine`` (the module has
    biases), which :func:`exactlearn.approx.learn_approx` use.
    """

    def __init__(self, module, readout=None, *, eps: Any = None, dtype: Any = None):
        torch = _torch()
        _check_module(module)
        self.dtype = torch.float64 if dtype is None else dtype
        self.module = copy.deepcopy(module).to(self.dtype).eval()
        self.d = int(module.embed_dim)
        self.heads = int(module.num_heads)
        self.head_dim = self.d // self.heads
        self.batch_first = bool(module.batch_first)
        self.readout = None if readout is None else _readout(readout, self.d).to(self.dtype)
        self.outputs = self.d if readout is None else None  # vector answers without a readout
        self.eps = default_eps(self.dtype) if eps is None else as_fmpq(eps, "eps")
        self.affine = _has_biases(module)
        self.reset()

    def __call__(self, tokens: Sequence[Sequence[Any]]) -> float | tuple[float, ...]:
        # distinct token objects once each (a copy query repeats one token k times)
        index: dict[int, int] = {}
        distinct: list[list[float]] = []
        order = []
        for t in tokens:
            i = index.get(id(t))
            if i is None:
                i = index[id(t)] = len(distinct)
                distinct.append([float(x) for x in t])
            order.append(i)
        if not order or any(len(r) != self.d for r in distinct):
            raise InvalidQueryError(f"a query is a non-empty list of tokens of length d = {self.d}")
        with self.answering(order):
            return self._answer(distinct, order)

    def _answer(self, distinct: list[list[float]], order: list[int]) -> float | tuple[float, ...]:
        torch = _torch()
        X = torch.tensor(distinct, dtype=self.dtype)[torch.tensor(order)]
        if self.batch_first:
            q, kv = X[-1:].unsqueeze(0), X.unsqueeze(0)
        else:
            q, kv = X[-1:].unsqueeze(1), X.unsqueeze(1)
        with torch.no_grad():
            out, _ = self.module(q, kv, kv, need_weights=False)
        if self.readout is None:
            return tuple(float(x) for x in out.reshape(-1))
        return float(torch.dot(out.reshape(-1), self.readout))


def torch_attention(module, readout=None, *, eps: Any = None, dtype: Any = None) -> TorchAttentionOracle:
    """Wrap a ``torch.nn.MultiheadAttention`` and a readout vector as a black-box oracle; without a
    readout the oracle answers the output vector (``d`` floats, ``outputs = d``).

    The oracle's function is the multi-head attention of :mod:`exactlearn` with
    ``W_h = W_K,h^T W_Q,h / sqrt(d_head)`` and ``v_h = W_V,h^T W_O,h^T readout``,
    and for a module with biases affine attention with ``w_h = W_K,h^T b_Q,h /
    sqrt(d_head)`` and ``c0 = readout . (W_O b_V + b_O)`` (see the module
    documentation for the derivation and the orientation).
    It computes in ``dtype`` (default float64: the module's function evaluated
    accurately; ``dtype=torch.float32`` answers as a float32 layer does in use)
    and declares ``eps`` (default: :func:`default_eps` of that dtype).
    """
    return TorchAttentionOracle(module, readout, eps=eps, dtype=dtype)


class AffineParameters(NamedTuple):
    """A module's parameters as affine attention: ``heads[h] = (W_h, w_h, v_h)`` and the offset ``c0``."""

    heads: list[tuple[list[list[mpmath.mpf]], list[mpmath.mpf], list[mpmath.mpf]]]
    c0: mpmath.mpf


def torch_parameters(module, readout, precision: int = 256, *, affine: bool = False) -> Any:
    """The heads ``(W_h, v_h)`` of the module, computed in mpmath at ``precision`` bits.

    Every float64 weight is converted exactly; the products and the division
    by ``sqrt(d_head)`` are carried out at ``precision`` bits. ``affine=True``:
    :class:`AffineParameters`, with ``w_h`` and ``c0`` (zero without biases); a
    module with biases needs it.
    """
    integer("precision (bits)", precision, 8)
    _check_module(module)
    if not affine and _has_biases(module):
        raise InvalidArgumentError("the attention module has biases: torch_parameters(..., affine=True) "
                                   "returns them as w_h and c0 of affine attention")
    d, H = int(module.embed_dim), int(module.num_heads)
    dh = d // H
    wq, wk, wv, wo = (t.tolist() for t in _projections(module))
    bq, _, bv, bo = (t.tolist() for t in _biases(module))
    r = _readout(readout, d).tolist()
    heads = []
    with working_precision(precision):
        mp = mpmath.mp
        root = mp.sqrt(dh)
        for h in range(H):
            block = range(h * dh, (h + 1) * dh)
            W = [[mp.fsum(mp.mpf(wk[i][a]) * mp.mpf(wq[i][b]) for i in block) / root for b in range(d)]
                 for a in range(d)]
            # v_h = W_V,h^T (W_O,h^T r):  (W_O,h^T r)_i = sum_e W_O[e][i] r[e]
            u = {i: mp.fsum(mp.mpf(wo[e][i]) * mp.mpf(r[e]) for e in range(d)) for i in block}
            v = [mp.fsum(mp.mpf(wv[i][a]) * u[i] for i in block) for a in range(d)]
            # w_h = W_K,h^T b_Q,h / sqrt(d_head): the key-side score term
            w = [mp.fsum(mp.mpf(wk[i][a]) * mp.mpf(bq[i]) for i in block) / root for a in range(d)]
            heads.append((W, w, v))
        # c0 = r . (W_O b_V + b_O)
        out = [mp.fsum(mp.mpf(wo[e][i]) * mp.mpf(bv[i]) for i in range(d)) + mp.mpf(bo[e]) for e in range(d)]
        c0 = mp.fsum(mp.mpf(r[e]) * out[e] for e in range(d))
    if affine:
        return AffineParameters(heads, c0)
    return [(W, v) for W, _, v in heads]


def torch_vector_parameters(module, precision: int = 256) -> VectorParameters:
    """The module as vector attention: ``(W_h, w_h, V_h)`` per head with ``V_h = W_O,h W_V,h``
    (``d x d``), and ``c0 = W_O b_V + b_O``, at ``precision`` bits (row ``j`` of ``V_h`` is the ``v_h``
    of the readout ``e_j``)."""
    _check_module(module)
    d = int(module.embed_dim)
    units = [torch_parameters(module, [float(a == j) for a in range(d)], precision, affine=True)
             for j in range(d)]
    heads = [(W, w, [units[j].heads[h][2] for j in range(d)]) for h, (W, w, _) in enumerate(units[0].heads)]
    return VectorParameters(heads, [units[j].c0 for j in range(d)])


def torch_model(module, readout, precision: int = 256) -> RealMultiHeadAttention:
    """The module as a :class:`~exactlearn.approx.RealMultiHeadAttention` (entries at ``precision`` bits;
    affine attention with ``w_h`` and ``c0`` for a module with biases)."""
    _check_module(module)
    if not _has_biases(module):
        heads = torch_parameters(module, readout, precision)
        return RealMultiHeadAttention([W for W, _ in heads], [v for _, v in heads])
    params = torch_parameters(module, readout, precision, affine=True)
    return RealMultiHeadAttention([W for W, _, _ in params.heads], [v for _, _, v in params.heads],
                                  [w for _, w, _ in params.heads], params.c0)
