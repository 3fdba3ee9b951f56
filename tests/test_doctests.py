"""Every docstring example in the package runs (mpmath style: examples are tests)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import exactlearn

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(exactlearn.__path__, prefix="exactlearn.")
    if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # optional extras (torch, dask) may be absent
        pytest.skip(f"{name}: optional dependency missing ({exc})")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} failing examples in {name}"
