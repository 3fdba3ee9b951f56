"""The JSON seam every model class shares (exactlearn.jsonio)."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import time

import pytest
from flint import fmpq

from exactlearn import DEFAULT_LIMITS, InvalidArgumentError, InvalidModelError, MultiHeadAttention
from exactlearn.jsonio import JsonModel, json_object, writable_problem, write_text
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


# -- the one parser: sizes, nesting, digits, entries named (issue 25) ---------------------------
def _one_head(entry: str) -> str:
    return '{"heads": [{"exp_W": [[' + entry + ']], "v": ["1"]}]}'


@pytest.mark.parametrize("cls", [MultiHeadAttention, Transformer])
def test_text_must_be_a_str_or_bytes(cls):
    for value in (None, 5, ["{}"]):
        with pytest.raises(InvalidModelError, match="JSON text must be a str"):
            cls.from_json(value)


def test_a_leading_plus_is_read_as_python_reads_it():
    model = MultiHeadAttention.from_json(_one_head('"+2"'))
    assert model.heads[0].exp_W[0][0] == 2
    assert MultiHeadAttention.from_json(_one_head('" 3 / 4 "')).heads[0].exp_W[0][0] == fmpq(3, 4)


@pytest.mark.parametrize("entry", ['"\u0663"', '"\uff13"', '"1\u0660"', '"2\\n"', '"+-2"', '"2/-3"'])
def test_only_ascii_rationals_and_the_entry_is_named(entry):
    with pytest.raises(InvalidModelError, match=r"^head 0: exp_W\[0\]\[0\]: .* \(ASCII digits 0-9\)$"):
        MultiHeadAttention.from_json(_one_head(entry))


@pytest.mark.parametrize("entry", ["9" * 10_001, '"%s"' % ("9" * 10_001), '"1/%s"' % ("7" * 10_001)],
                         ids=["number", "string", "denominator"])
def test_long_numbers_are_refused_before_conversion(entry):
    with pytest.raises(InvalidModelError, match=r"^entry heads\[0\]\.exp_W\[0\]\[0\]: .*entry_digits"):
        MultiHeadAttention.from_json(_one_head(entry))
    lifted = DEFAULT_LIMITS.lifted(entry_digits=12_000)
    assert MultiHeadAttention.from_json(_one_head(entry), limits=lifted).d == 1  # read exactly when lifted


def test_numbers_beyond_pythons_int_string_limit_are_read_exactly():
    for entry in ("9" * 5000, '"%s/7"' % ("9" * 5000)):  # int() stops at 4300 digits; flint does not
        value = MultiHeadAttention.from_json(_one_head(entry)).heads[0].exp_W[0][0]
        assert value * (7 if "/" in entry else 1) == 10**5000 - 1


def test_deep_nesting_is_refused_without_recursion_error():
    for text in ("[" * 100_000, "[" * 40 + "]" * 40, '{"a":' * 40 + "1" + "}" * 40):
        with pytest.raises(InvalidModelError, match="nested deeper than 32"):
            MultiHeadAttention.from_json(text)


def test_size_cap_is_read_before_parsing(tmp_path):
    start = time.process_time()
    with pytest.raises(InvalidModelError, match=r"^model file '/dev/zero': .*larger than the limit"):
        MultiHeadAttention.load("/dev/zero")  # reads file_bytes + 1 bytes, not until MemoryError
    assert time.process_time() - start < 2
    small = DEFAULT_LIMITS.lifted(file_bytes=100)
    path = tmp_path / "m.json"
    MultiHeadAttention.random(2, 2, seed=1).save(path)
    with pytest.raises(InvalidModelError, match=r"larger than the limit of 100 bytes.*file_bytes"):
        MultiHeadAttention.load(path, limits=small)
    with pytest.raises(InvalidModelError, match="larger than the limit of 100 bytes"):
        MultiHeadAttention.from_json(path.read_text(), limits=small)
    assert MultiHeadAttention.load(path) == MultiHeadAttention.random(2, 2, seed=1)


@pytest.mark.parametrize("cls", [MultiHeadAttention, Transformer])
def test_load_names_the_file(cls, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"heads": [{"exp_W": [["\u0663"]], "v": ["1"], "V": [["1"]]}], "U": [[1]], "a": [1]}')
    with pytest.raises(InvalidModelError, match=rf"^model file '{re.escape(str(path))}': .*exp_W\[0\]\[0\]"):
        cls.load(path)
    with pytest.raises(InvalidModelError, match="Is a directory"):
        cls.load(tmp_path)
    with pytest.raises(InvalidModelError, match="path must be a str or a path, got NoneType"):
        cls.load(None)


# -- saving: the file is replaced whole or not at all -------------------------------------------
def test_save_replaces_whole_or_leaves_the_old_file(tmp_path, monkeypatch):
    import exactlearn.jsonio as jsonio

    path = tmp_path / "m.json"
    old = MultiHeadAttention.random(2, 1, seed=1)
    old.save(path)
    path.chmod(0o600)
    before = path.read_bytes()

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(jsonio.os, "fsync", full_disk)  # the write "fails" once the data are out
    with pytest.raises(OSError, match="No space left"):
        MultiHeadAttention.random(2, 2, seed=2).save(path)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]
    monkeypatch.undo()
    MultiHeadAttention.random(2, 2, seed=2).save(path)
    assert MultiHeadAttention.load(path) == MultiHeadAttention.random(2, 2, seed=2)
    assert path.stat().st_mode & 0o777 == 0o600  # the old file's permissions are kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no temporary left


def test_save_to_a_directory_or_a_missing_one_raises_oserror(tmp_path):
    model = MultiHeadAttention.random(2, 1, seed=1)
    with pytest.raises(IsADirectoryError):
        model.save(tmp_path)
    with pytest.raises(FileNotFoundError) as info:
        model.save(tmp_path / "missing" / "m.json")
    assert info.value.filename == str(tmp_path / "missing" / "m.json")  # the path asked for, not a temporary
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InvalidArgumentError, match="must be a str or os.PathLike, got NoneType"):
        model.save(None)


def test_a_named_pipe_without_a_writer_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "model.json"
    os.mkfifo(fifo)  # nobody writes: open() alone would block forever

    def hung(signum, frame):
        raise TimeoutError("load waited on the pipe")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)  # a regression fails here instead of hanging the suite
    try:
        with pytest.raises(InvalidModelError, match="model.json'.*not valid JSON"):
            MultiHeadAttention.load(fifo)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_special_files_are_written_directly(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_text(fifo, "hello\n")  # a rename would replace the pipe with a regular file
        assert os.read(reader, 100) == b"hello\n" and stat.S_ISFIFO(os.stat(fifo).st_mode)
    finally:
        os.close(reader)


def test_writable_problem_is_checked_before_work(tmp_path):
    assert writable_problem(tmp_path / "new.json") is None
    assert writable_problem(tmp_path) == "it is a directory"
    assert "does not exist" in writable_problem(tmp_path / "missing" / "x.json")
    assert "not writable" in writable_problem("/proc/x.json")  # a directory no file can be created in
    assert list(tmp_path.iterdir()) == []  # the probe file is gone
