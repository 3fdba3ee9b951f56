"""Number fields: models whose weights are algebraic numbers, learned exactly (docs/number-fields.md).

* :mod:`~exactlearn.numberfield.syntax` -- reading polynomials and elements from text;
* :mod:`~exactlearn.numberfield.embedding` -- the real root that fixes the embedding, signs
  decided exactly;
* :mod:`~exactlearn.numberfield.element`, :mod:`~exactlearn.numberfield.field` --
  :class:`NumberField` ``K = Q(a)`` and its elements;
* :mod:`~exactlearn.numberfield.kpoly`, :mod:`~exactlearn.numberfield.copyfun` -- polynomials over
  ``K``, copy functions over ``K``, their poles (roots in ``K``) and residues;
* :mod:`~exactlearn.numberfield.recognise`, :mod:`~exactlearn.numberfield.exp` -- elements of ``K``
  from their real values, and ``exp(W)`` in ``K`` from the measured poles, checked exactly;
* :mod:`~exactlearn.numberfield.exactfield` -- the schedule's field seam over ``K``;
* :mod:`~exactlearn.numberfield.models` -- models over ``K``: entries, evaluation, random draws.

>>> K = NumberField("a^3 - 2")          # one real root: no root= needed
>>> print(K("a")**3, K.degree)
2 3
"""

from .element import NumberFieldElement
from .field import NumberField

__all__ = ["NumberField", "NumberFieldElement"]
