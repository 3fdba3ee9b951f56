"""Adapters that turn real models into black-box oracles for :mod:`exactlearn.approx`.

* :func:`torch_attention` -- a ``torch.nn.MultiheadAttention`` (with or without
  biases: affine attention) plus a readout vector, evaluated in float64 (needs the
  optional extra ``pip install "exactlearn[torch]"``).

torch is imported only when an adapter is used, so ``import exactlearn.targets``
works without it.
"""

from .torch_mha import (
    AffineParameters,
    TorchAttentionOracle,
    torch_attention,
    torch_model,
    torch_parameters,
    torch_vector_parameters,
)

__all__ = ["torch_attention", "torch_parameters", "torch_model", "TorchAttentionOracle", "AffineParameters",
           "torch_vector_parameters"]
