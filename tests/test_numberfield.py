"""exactlearn.numberfield: the issue's API, end to end (the docs run the same example)."""

from __future__ import annotations

import doctest

import exactlearn

ISSUE_EXAMPLE = '''
>>> from exactlearn import NumberField, MultiHeadAttention, Oracle, learn
>>> K = NumberField("a^2 - 2", root=1.414)        # Q(sqrt 2), the positive root
>>> m = MultiHeadAttention.from_lists(
...     [[["1 + a", "1/2"], ["3", "a"]], [["2", "a/3"], ["1", "1 + a"]]],
...     [["a", "-1"], ["1", "2 - a"]], field=K)
>>> rec = learn(lambda X: m(X), 2, heads=2)       # any callable answering elements of K
>>> rec.model == m.canonical(), rec.queries
(True, 29)
'''


def test_the_issue_example_runs_verbatim():
    test = doctest.DocTestParser().get_doctest(ISSUE_EXAMPLE, {}, "issue 21", None, 0)
    result = doctest.DocTestRunner().run(test)
    assert result.attempted == 5 and result.failed == 0


def test_the_package_exports_the_field():
    assert exactlearn.NumberField is exactlearn.numberfield.NumberField
    assert issubclass(exactlearn.NumberFieldError, exactlearn.ExactLearnError)
    K = exactlearn.NumberField("a^3 - 2")
    assert isinstance(K("a"), exactlearn.NumberFieldElement)
