"""A one-layer Transformer (multi-head attention + bias-free ReLU FFN), learned exactly.

>>> from exactlearn.transformer import Transformer, learn_transformer
>>> truth = Transformer.random(d=2, heads=1, width=2, seed=1)
>>> rec = learn_transformer(truth, d=2, heads=1)
>>> rec.model == truth
True
"""

from .canonical import CanonicalTransformer
from .errors import Condition, TransformerConditionError, TransformerVerificationError
from .model import Transformer

__all__ = [
    "CanonicalTransformer",
    "Condition",
    "Transformer",
    "TransformerConditionError",
    "TransformerVerificationError",
]

from .learn import StepCount, TransformerRecovery, learn_transformer, step1_formula

__all__ += ["StepCount", "TransformerRecovery", "learn_transformer", "step1_formula"]
