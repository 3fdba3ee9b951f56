"""Number fields: models whose weights are algebraic numbers, learned exactly (docs/number-fields.md).

* :mod:`.syntax` -- reading polynomials and elements from text;
* :mod:`.embedding` -- the real root that fixes the embedding, signs decided exactly;
* :mod:`.element`, :mod:`.field` -- :class:`NumberField` ``K = Q(a)`` and its elements.

>>> K = NumberField("a^3 - 2")          # one real root: no root= needed
>>> print(K("a")**3, K.degree)
2 3
"""

from .element import NumberFieldElement
from .field import NumberField

__all__ = ["NumberField", "NumberFieldElement"]
