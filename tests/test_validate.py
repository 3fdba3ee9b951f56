"""validate: the one integer-argument check, its messages and its error types."""

from __future__ import annotations

import pytest

from exactlearn import InvalidArgumentError, InvalidModelError
from exactlearn.validate import integer, optional_integer


def test_integers_in_range_pass_through():
    assert integer("d", 3) == 3
    assert integer("verify", 0, 0) == 0
    assert integer("heads", 5, 1, 5) == 5
    assert optional_integer("budget", None, 0) is None
    assert optional_integer("budget", 7, 0) == 7


@pytest.mark.parametrize("value", [0, -2, True, False, 1.0, "2", None])
def test_non_integers_and_small_values_are_refused(value):
    with pytest.raises(InvalidArgumentError, match=r"^heads must be an integer >= 1, got "):
        integer("heads", value)


def test_the_upper_limit_names_how_to_lift_it():
    with pytest.raises(InvalidArgumentError, match=r"^d = 9 is above the limit 8; pass --force$"):
        integer("d", 9, 1, 8, lift="pass --force")
    with pytest.raises(InvalidArgumentError, match=r"^d = 9 is above the limit 8$"):
        integer("d", 9, 1, 8)


def test_the_error_type_is_the_callers():
    with pytest.raises(InvalidModelError, match="heads must be"):
        integer("heads", 0, error=InvalidModelError)
    with pytest.raises(InvalidModelError, match="above the limit"):
        optional_integer("heads", 3, 1, 2, error=InvalidModelError)
    assert issubclass(InvalidArgumentError, ValueError) and issubclass(InvalidArgumentError, TypeError)
