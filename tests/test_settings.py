"""exactlearn.settings: one frozen settings object, every field saying what it controls."""

from __future__ import annotations

import ast
import dataclasses
import inspect

import pytest

from exactlearn import settings
from exactlearn.settings import DEFAULT_SETTINGS, Settings


def sections() -> list[type]:
    return [f.default_factory for f in dataclasses.fields(Settings)]  # type: ignore[misc]


def test_every_field_says_what_it_controls():
    source = inspect.getsource(settings)
    lines = source.splitlines()
    tree = ast.parse(source)
    undocumented = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in {s.__name__ for s in sections()}:
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign):
                    above = lines[stmt.lineno - 2].strip()
                    if not above.startswith("#:"):
                        undocumented.append(f"{node.name}.{stmt.target.id}")  # type: ignore[attr-defined]
    assert sections() and not undocumented, undocumented


def test_the_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_SETTINGS.schedule.token_bound = 3  # type: ignore[misc]


def test_the_modules_read_their_values_from_the_settings():
    from exactlearn.chain import MAX_PRE_QUERY_DRAWS
    from exactlearn.learn import DEFAULT_TOKEN_BOUND, MAX_PREDICTION_DRAWS

    schedule = DEFAULT_SETTINGS.schedule
    assert (DEFAULT_TOKEN_BOUND, MAX_PRE_QUERY_DRAWS, MAX_PREDICTION_DRAWS) == (
        schedule.token_bound, schedule.pre_query_draws, schedule.prediction_draws)
