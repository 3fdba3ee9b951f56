"""Exact rationals and tokens (exactlearn.exact): the token check's fast path keeps its validation."""

from __future__ import annotations

import pytest
from flint import fmpz

from exactlearn.errors import InvalidQueryError
from exactlearn.exact import as_token


def test_token_fast_path_keeps_validation():
    assert as_token((1, -2), 2) == (1, -2)
    with pytest.raises(InvalidQueryError):
        as_token((True, 1), 2)
    with pytest.raises(InvalidQueryError):
        as_token((1, 2, 3), 2)
    assert as_token([fmpz(2), 3], 2) == (2, 3)
