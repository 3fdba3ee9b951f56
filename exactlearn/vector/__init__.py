"""Vector outputs: attention whose heads carry value matrices ``V_h`` (docs/algorithm.md section 10).

:class:`VectorMultiHeadAttention` answers the whole output vector;
:func:`exactlearn.learn` learns it from an oracle that declares ``outputs``
(:class:`~exactlearn.Oracle` of a vector model does) or whose answers are
tuples, over :class:`VectorRationals` with the common-denominator fit
:func:`vector_copy_terms`.
"""

from .field import VectorRationals
from .fit import vector_copy_terms
from .model import VectorHead, VectorMultiHeadAttention

__all__ = ["VectorHead", "VectorMultiHeadAttention", "VectorRationals", "vector_copy_terms"]
