"""JSON files of models: the format check, ``to_json``/``from_json`` and ``save``/``load``.

A model class supplies ``to_dict`` and ``from_dict``; :class:`JsonModel` adds
the rest, with every failure raised as :class:`~exactlearn.errors.InvalidModelError`:

>>> from exactlearn import MultiHeadAttention
>>> MultiHeadAttention.from_json("[1")
Traceback (most recent call last):
...
exactlearn.errors.InvalidModelError: not valid JSON: Expecting ',' delimiter: line 1 column 3 (char 2)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from .errors import InvalidModelError

__all__ = ["JsonModel", "json_object"]

M = TypeVar("M", bound="JsonModel")


def json_object(data: Any, what: str, fmt: str, unknown: str = "unknown format") -> dict:
    """``data`` if it is a JSON object of format ``fmt`` (the default when absent), else raise."""
    if not isinstance(data, dict):
        raise InvalidModelError(f"{what} is a JSON object, got {type(data).__name__}")
    found = data.get("format", fmt)
    if found != fmt:
        raise InvalidModelError(f"{unknown} {found!r}; expected {fmt!r}")
    return data


class JsonModel:
    """``to_json``, ``from_json``, ``save`` and ``load`` over a class's ``to_dict``/``from_dict``."""

    def to_dict(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_dict(cls: type[M], data: Any) -> M:
        raise NotImplementedError

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **({"indent": 2} | kwargs))

    @classmethod
    def from_json(cls: type[M], text: str) -> M:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidModelError(f"not valid JSON: {exc}") from None
        return cls.from_dict(data)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n")

    @classmethod
    def load(cls: type[M], path: str | Path) -> M:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidModelError(f"cannot read model file {str(path)!r}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise InvalidModelError(f"model file {str(path)!r} is not a UTF-8 text (JSON) file") from None
        return cls.from_json(text)
