"""Figures and demonstrations, outside the library core.

* :mod:`.evidence` -- the approximate path's evidence (docs/algorithm.md section 7):
  noise sweeps, the refusal demo, the sharpness of ``C``, guided constants; used by
  ``exactlearn approx``, claim ``c20``, notebook 04 and the tests;
* :mod:`.approx` -- ``exactlearn approx`` (``python -m exactlearn approx``): prints them.

The library (:mod:`exactlearn.approx` included) never imports this package.
"""
