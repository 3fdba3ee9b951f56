"""JSON files of models: the one parser, ``to_json``/``from_json``, ``save``/``load``, safe writes.

A model class supplies ``to_dict`` and ``from_dict``; :class:`JsonModel` adds
the rest. Every model text goes through :func:`parse_json`, which refuses,
before building anything, what the limits do not admit: a file larger than
``Limits.file_bytes`` (only that many bytes are read, so ``/dev/zero`` is
refused at once), arrays nested deeper than :data:`~exactlearn.limits.MAX_JSON_DEPTH`,
a number with more than ``Limits.entry_digits`` digits. Every failure is an
:class:`~exactlearn.errors.InvalidModelError` whose message names the entry
(and, from :meth:`JsonModel.load`, the file):

>>> from exactlearn import MultiHeadAttention
>>> MultiHeadAttention.from_json("[1")
Traceback (most recent call last):
...
exactlearn.errors.InvalidModelError: not valid JSON: Expecting ',' delimiter: line 1 column 3 (char 2)
>>> MultiHeadAttention.from_json('{"heads": [{"exp_W": [["2"]], "v": ["1/3", "5"]}]}')
Traceback (most recent call last):
...
exactlearn.errors.InvalidModelError: head 0: v: has length 2, expected d = 1

:meth:`JsonModel.save` and :func:`write_text` replace a file whole or not at
all: the text goes to a temporary file in the same directory, which is then
renamed over the target (a full disk or a missing directory raises the
``OSError`` and leaves any old file as it was).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any, TypeVar

from flint import fmpz

from .errors import InvalidArgumentError, InvalidModelError
from .limits import DEFAULT_LIMITS, MAX_JSON_DEPTH, Limits, lift
from .validate import describe

__all__ = ["JsonModel", "json_object", "parse_json", "writable_problem", "write_text"]

M = TypeVar("M", bound="JsonModel")

#: Python's int() refuses longer digit strings (sys.get_int_max_str_digits); flint's fmpz does not.
_INT_DIGITS = 4000


class _LongInteger:
    """A JSON integer literal with more digits than the limit (reported with its place by the walk)."""

    def __init__(self, digits: int):
        self.digits = digits


class _Problem(Exception):
    """An entry the walk refuses; ``path`` grows as the walk unwinds."""

    def __init__(self, message: str):
        super().__init__(message)
        self.path: list[Any] = []


def parse_json(text: Any, limits: Limits = DEFAULT_LIMITS) -> Any:
    """The JSON value of a model text (``str`` or UTF-8 ``bytes``), within ``limits``.

    >>> parse_json('{"d": 1}')
    {'d': 1}
    >>> parse_json("[" * 40 + "]" * 40)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    exactlearn.errors.InvalidModelError: arrays and objects are nested deeper than 32 ...
    """
    if not isinstance(limits, Limits):
        raise InvalidModelError(f"limits must be an exactlearn.Limits, got {type(limits).__name__}")
    if isinstance(text, (bytes, bytearray)):
        _check_size(len(text), limits)
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidModelError("not a UTF-8 text (JSON) file") from None
    elif not isinstance(text, str):
        raise InvalidModelError(f"a model's JSON text must be a str (or UTF-8 bytes), "
                                f"got {type(text).__name__}")
    _check_size(len(text), limits)
    digits = limits.entry_digits

    def integer_literal(literal: str) -> Any:
        n = len(literal) - literal.startswith("-")
        if n > digits:
            return _LongInteger(n)
        return int(literal) if n <= _INT_DIGITS else fmpz(literal)

    try:
        data = json.loads(text, parse_int=integer_literal)
    except json.JSONDecodeError as exc:
        raise InvalidModelError(f"not valid JSON: {exc}") from None
    except RecursionError:  # the C parser's own depth guard: far deeper than MAX_JSON_DEPTH
        raise InvalidModelError(_too_deep()) from None
    try:
        _walk(data, 1, re.compile(rf"[0-9]{{{digits + 1}}}", re.ASCII), digits)
    except _Problem as problem:
        where = "".join(f"[{k}]" if isinstance(k, int) else f".{_key(k)}" for k in reversed(problem.path))
        raise InvalidModelError(f"entry {where.lstrip('.')}: {problem}" if where else str(problem)) from None
    return data


def _key(key: str) -> str:
    return key if re.fullmatch(r"\w{1,40}", key, re.ASCII) else describe(key)


def _too_deep() -> str:
    return f"arrays and objects are nested deeper than {MAX_JSON_DEPTH} (the model formats need 5)"


def _check_size(size: int, limits: Limits) -> None:
    if size > limits.file_bytes:
        raise InvalidModelError(f"the JSON text is larger than the limit of {limits.file_bytes} bytes; "
                                f"{lift('file_bytes')}")


def _walk(value: Any, depth: int, long_digits: re.Pattern, digits: int) -> None:
    """Refuse a structure nested too deeply, and numbers with too many digits; names the entry."""
    if isinstance(value, str):
        if len(value) > digits and long_digits.search(value):
            raise _Problem(f"a number with more than {digits} digits, above the limit; "
                           f"{lift('entry_digits')}")
        return
    if isinstance(value, _LongInteger):
        raise _Problem(f"an integer of {value.digits} digits, above the limit of {digits}; "
                       f"{lift('entry_digits')}")
    if isinstance(value, list):
        items: Any = enumerate(value)
    elif isinstance(value, dict):
        items = value.items()
    else:
        return
    if depth >= MAX_JSON_DEPTH:
        raise InvalidModelError(_too_deep())  # no entry to name: the path is the nesting itself
    for key, item in items:
        if isinstance(item, (str, list, dict, _LongInteger)):
            try:
                _walk(item, depth + 1, long_digits, digits)
            except _Problem as problem:
                problem.path.append(key)
                raise


def json_object(data: Any, what: str, fmt: str, unknown: str = "unknown format") -> dict:
    """``data`` if it is a JSON object of format ``fmt`` (the default when absent), else raise."""
    if not isinstance(data, dict):
        raise InvalidModelError(f"{what} is a JSON object, got {type(data).__name__}")
    found = data.get("format", fmt)
    if found != fmt:
        raise InvalidModelError(f"{unknown} {describe(found)}; expected {fmt!r}")
    return data


def _path_text(path: Any) -> str:
    try:
        text = os.fspath(path)
    except TypeError:
        raise InvalidModelError(f"a model file's path must be a str or a path, got {type(path).__name__}") \
            from None
    return text if isinstance(text, str) else os.fsdecode(text)


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
    def from_json(cls: type[M], text: str | bytes, *, limits: Limits = DEFAULT_LIMITS) -> M:
        """The model of a JSON text, read by :func:`parse_json` within ``limits``."""
        return cls.from_dict(parse_json(text, limits))

    def save(self, path: str | Path) -> None:
        """Write the model as JSON: the file is replaced whole, or left as it was (:func:`write_text`)."""
        write_text(path, self.to_json() + "\n")

    @classmethod
    def load(cls: type[M], path: str | Path, *, limits: Limits = DEFAULT_LIMITS) -> M:
        """The model in a JSON file; at most ``limits.file_bytes`` bytes are read.

        Every failure is an :class:`~exactlearn.errors.InvalidModelError` naming the file.
        """
        shown = _path_text(path)
        if not isinstance(limits, Limits):
            raise InvalidModelError(f"limits must be an exactlearn.Limits, got {type(limits).__name__}")
        try:
            data = read_capped(path, limits.file_bytes + 1)
        except OSError as exc:
            raise InvalidModelError(f"cannot read model file {shown!r}: {exc.strerror or exc}") from None
        try:
            return cls.from_json(data, limits=limits)
        except InvalidModelError as exc:
            raise InvalidModelError(f"model file {shown!r}: {exc}") from None


def read_capped(path: str | Path, size: int) -> bytes:
    """At most ``size`` bytes of ``path``. A named pipe is opened without waiting for a writer: one with
    no writer reads as empty instead of blocking forever (a pipe being written, as from the shell's
    ``<(...)``, reads as usual)."""
    nonblock = getattr(os, "O_NONBLOCK", 0)  # POSIX; Windows has no named pipes in the file system
    fd = os.open(path, os.O_RDONLY | nonblock | getattr(os, "O_BINARY", 0))
    try:
        if nonblock:
            os.set_blocking(fd, True)  # opened without waiting; now read as usual
    except OSError:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        return fh.read(size)


def file_format(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> str | None:
    """The ``"format"`` of the JSON object in ``path``, or ``None`` (unreadable, not an object, no format).

    The command lines use it to point a model file of the other kind to the command that learns it.
    """
    try:
        data = parse_json(read_capped(path, limits.file_bytes + 1), limits)
    except (OSError, InvalidModelError):
        return None
    found = data.get("format") if isinstance(data, dict) else None
    return found if isinstance(found, str) else None


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``, replacing the file whole or not at all.

    The text goes to a temporary file in the same directory, flushed to disk and
    renamed over ``path`` (keeping the old file's permissions), so a full disk,
    an interruption or a missing directory never leaves a truncated file. A path
    that is not a regular file (``/dev/stdout``, a pipe) is written directly.
    Failures raise the ``OSError`` (``FileNotFoundError``, ``IsADirectoryError``,
    ``PermissionError``, ``OSError(ENOSPC)``...) naming ``path``; a ``path`` that is
    not a ``str`` or ``os.PathLike`` raises ``InvalidArgumentError``.
    """
    if not isinstance(path, (str, os.PathLike)):
        kind = type(path).__name__
        raise InvalidArgumentError(f"the path to write must be a str or os.PathLike, got {kind}")
    target = Path(os.path.realpath(path))
    data = text.encode("utf-8")
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "Is a directory", str(path))
    if mode is not None and not stat.S_ISREG(mode):
        with open(target, "wb") as fh:
            fh.write(data)
        return
    fd, tmp = _temporary(target)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _temporary(target: Path) -> tuple[int, str]:
    """A new file beside ``target``: ``(descriptor, name)``; created with mode 0666 less the umask."""
    while True:
        name = str(target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp"))
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name
        except FileExistsError:  # pragma: no cover - 48 random bits collided
            continue
        except OSError as exc:  # a missing directory, no permission: name the file asked for, not ours
            raise type(exc)(exc.errno, exc.strerror, str(target)) from None


def writable_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be written, or ``None``: checked before any work (the command lines).

    A regular file is tested by creating (and removing) a temporary file beside it,
    as :func:`write_text` will.
    """
    target = Path(os.path.realpath(path))
    if target.is_dir():
        return "it is a directory"
    if not target.parent.is_dir():
        return f"directory {Path(path).parent} does not exist"
    if target.exists() and not target.is_file():
        return None if os.access(target, os.W_OK) else "permission denied"
    try:
        fd, tmp = _temporary(target)
    except OSError as exc:
        return f"directory {Path(path).parent} is not writable ({exc.strerror or exc})"
    os.close(fd)
    os.unlink(tmp)
    return None
