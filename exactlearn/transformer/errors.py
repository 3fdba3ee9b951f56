"""The errors of the Transformer learner: named conditions, never a silent guess.

Every failure of :func:`~exactlearn.transformer.learn_transformer` is a
:class:`~exactlearn.RecoveryError`. :class:`TransformerConditionError` says
which stated condition the answers violate in its ``condition`` attribute (a
:class:`~exactlearn.transformer.errors.Condition`).
"""

from __future__ import annotations

import enum

from ..errors import RecoveryError

__all__ = ["Condition", "TransformerConditionError", "TransformerVerificationError"]


class Condition(enum.Enum):
    """The conditions under which the Transformer learner is exact (docs/transformer.md)."""

    ODD_ATTENTION = "the odd part T(X) - T(-X) is a multi-head attention with the stated heads"
    HEADS_VISIBLE = "every head is visible in the odd part (v_h = V_h^T sum_j a_j u_j != 0)"
    NO_RESIDUAL = "no residual connection (y = sum_h V_h o_h, without x_N), unless residual=True"
    LINES_ON_SLICE = "every line is visible on the uniform slice, and distinct lines stay distinct there"
    PER_HEAD_SPLIT = ("every line's per-head split is found along the copy-ratio families "
                      "within the length cap")
    WIDTH = "the learned FFN fits through a hidden layer of width d (y in Q^d)"
    RATIONAL = "the attention weights exp(W_h) are rational"


class TransformerConditionError(RecoveryError):
    """The answers violate a stated condition of the learner; ``condition`` says which."""

    def __init__(self, condition: Condition, message: str):
        super().__init__(f"condition failed ({condition.name}: {condition.value}): {message}")
        self.condition = condition


class TransformerVerificationError(RecoveryError):
    """The learned Transformer disagrees with the oracle on a fresh random sequence."""
