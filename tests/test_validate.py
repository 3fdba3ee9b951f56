"""validate: the one integer-argument check, its messages and its error types."""

from __future__ import annotations

import pytest

from exactlearn import InvalidArgumentError, InvalidModelError
from exactlearn.validate import describe, integer, is_sequence, optional_integer, seed


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


# -- seeds, sequences and safe descriptions (issue 25) ------------------------------------------
class _BrokenStr(int):
    def __str__(self):
        raise ZeroDivisionError("no text")

    __format__ = lambda self, spec: str(self)  # noqa: E731 - f"{seed}" goes through __str__


class _Opaque:
    def __repr__(self):
        raise RuntimeError("no repr")


@pytest.mark.parametrize("value", [0, -7, 2**256 - 1, "", "run-3", "x" * 256],
                         ids=["0", "-7", "2^256-1", "empty", "run-3", "256 chars"])
def test_seeds_within_the_sizes_pass_through(value):
    assert seed(value) is value


@pytest.mark.parametrize("value, text", [
    (10**5000, "an integer of about 5001 digits"), (2**256, "an integer of about 78 digits"),
    ("x" * 257, "a str of 257 characters"), (None, "got None"), (True, "got True"), (1.5, "got 1.5"),
    ((1, 2), "got (1, 2)"), (_Opaque(), "its repr raised"),
], ids=["10^5000", "2^256", "long str", "None", "True", "float", "tuple", "opaque"])
def test_bad_seeds_are_refused_by_name(value, text):
    with pytest.raises(InvalidArgumentError, match=r"^seed must be an int with \|seed\| < 2\^256") as info:
        seed(value)
    assert text in str(info.value)


def test_a_seed_whose_text_raises_is_refused():
    with pytest.raises(InvalidArgumentError, match="formatting it raised ZeroDivisionError"):
        seed(_BrokenStr(3))


def test_describe_never_raises_and_never_prints_huge_numbers():
    assert describe(10**5000) == "an integer of about 5001 digits"
    assert describe(-(10**50)) == str(-(10**50))  # up to 200 bits: the digits
    assert "repr raised" in describe(_Opaque())
    assert describe("x" * 100, limit=10) == "'xxxxxx..."
    with pytest.raises(InvalidArgumentError, match="about 5001 digits is above the limit 32"):
        integer("d", 10**5000, 1, 32)  # the message of a huge value is short and does not raise
    with pytest.raises(InvalidArgumentError, match="repr raised"):
        integer("d", _Opaque())


def test_sequences_exclude_sets_mappings_and_text():
    assert is_sequence([1]) and is_sequence((1,)) and is_sequence(range(3))
    for value in ({1}, frozenset([1]), {1: 2}, "12", b"12", 3, iter([1])):
        assert not is_sequence(value), value
