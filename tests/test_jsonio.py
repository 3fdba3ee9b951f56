"""The JSON seam every model class shares (exactlearn.jsonio)."""

from __future__ import annotations

import json

import pytest

from exactlearn import InvalidModelError, MultiHeadAttention
from exactlearn.jsonio import JsonModel, json_object
from exactlearn.transformer import Transformer

MODELS = [MultiHeadAttention.random(2, 2, seed=1), Transformer.random(2, 1, 2, seed=1)]


@pytest.mark.parametrize("model", MODELS, ids=type)
def test_round_trip_through_text_and_file(model, tmp_path):
    assert isinstance(model, JsonModel)
    text = model.to_json()
    assert json.loads(text) == model.to_dict() and text.startswith("{\n  ")  # indented by default
    assert model.to_json(indent=None) == json.dumps(model.to_dict())
    assert type(model).from_json(text) == model
    path = tmp_path / "m.json"
    model.save(path)
    assert path.read_text().endswith("}\n") and type(model).load(path) == model


@pytest.mark.parametrize("cls", [MultiHeadAttention, Transformer])
def test_bad_files_raise_the_named_error(cls, tmp_path):
    with pytest.raises(InvalidModelError, match="not valid JSON"):
        cls.from_json("{")
    with pytest.raises(InvalidModelError, match="cannot read model file"):
        cls.load(tmp_path / "absent.json")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InvalidModelError, match="not a UTF-8 text"):
        cls.load(binary)
    with pytest.raises(InvalidModelError, match="is a JSON object, got list"):
        cls.from_json("[]")


def test_format_check():
    assert json_object({"d": 1}, "a model", "f/1") == {"d": 1}  # absent format: the default
    assert json_object({"format": "f/1"}, "a model", "f/1") == {"format": "f/1"}
    with pytest.raises(InvalidModelError, match="unknown model format 'f/2'; expected 'f/1'"):
        json_object({"format": "f/2"}, "a model", "f/1", "unknown model format")
    with pytest.raises(InvalidModelError, match="a Transformer is a JSON object, got str"):
        json_object("x", "a Transformer", "f/1")
