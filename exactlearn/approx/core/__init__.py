"""The core of the approximate path: real balls, the field, copy functions, the schedule run, models.

* :mod:`.balls` -- python-flint ``arb`` conversions and the working precision;
* :mod:`.copyfun` -- the copy function over real balls (fit, first-order radii, Krawczyk certificate);
* :mod:`.field` -- :class:`~.field.RealBalls`, the field behind the schedule's seam;
* :mod:`.run` -- the schedule run over real balls;
* :mod:`.learner` -- the learner over real balls, its configurations chosen by a
  :class:`~.learner.Guidance` (random without one);
* :mod:`.recovery` -- what the learner returns or refuses with, and the comparison with a known model;
* :mod:`.models` -- real-valued attention and approximate oracles.

The core imports neither the bounds layer nor the guide layer
(``tests/test_imports.py`` checks it).
"""
