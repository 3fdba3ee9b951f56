"""Probes of issue 25 (round two): model files, arguments, sizes, sweeps, saving, the command line.

Each probe takes a trial number and returns ``(outcome, detail)`` like the probes of
tests/reliability_probe.py, which runs them in child processes (its ``PROBES``). A
probe is ``refused`` only when the error is the named one and its message says what
the issue asks (the entry, the file, the field, the flag); ``exact`` when a valid
input was read or written correctly; ``wrong`` for accepted nonsense or a vague or
mistyped error. Any other exception escapes to the harness: a ``crash``.

``ANSWERS`` lists the probes of the answer families (answers converted inside the
guard, answer sizes, an oracle that mutates its query); they are part of the suite.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: digits of other scripts (Arabic-Indic, fullwidth, Persian, Devanagari, Bengali, Thai, math bold)
FOREIGN_DIGITS = "\u0663\uff13\u06f3\u0969\u09e9\u0e53\U0001d7d1"
#: a valid entry: what an accepted model file may hold
_ASCII_RATIONAL = re.compile(r"[ \t]*[+-]?[0-9]+[ \t]*(/[ \t]*[0-9]+[ \t]*)?", re.ASCII)


def _expect(call, error, *needles: str):
    """``refused`` if ``call()`` raises ``error`` whose message contains every regex in ``needles``."""
    from exactlearn import ExactLearnError

    try:
        value = call()
    except error as exc:
        text = str(exc)
        missing = [n for n in needles if not re.search(n, text)]
        if missing:
            return "wrong", f"{type(exc).__name__} without {missing}: {text[:160]}"
        if len(text) > 2000:
            return "wrong", f"a message of {len(text)} characters"
        return "refused", type(exc).__name__
    except ExactLearnError as exc:
        return "wrong", f"{type(exc).__name__} instead of {error.__name__}: {str(exc)[:160]}"
    return "wrong", f"accepted: {str(value)[:120]}"


# -- model files --------------------------------------------------------------------------------
def _entry_paths(data, path=()):
    """Paths (tuples of keys) of every numeric entry (a str) of a model dict."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key not in ("format", "d", "residual"):
                yield from _entry_paths(value, path + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _entry_paths(value, path + (i,))
    elif isinstance(data, str):
        yield path


def _get(data, path):
    for key in path:
        data = data[key]
    return data


def _set(data, path, value):
    _get(data, path[:-1])[path[-1]] = value


def _same_numbers(reference, ours) -> bool:
    """Every entry of the reference JSON (read by Python's own Fraction) equals the model's."""
    if isinstance(reference, dict):  # the keys that hold numbers (others are ignored by the reader)
        keys = [k for k in reference if k in ("heads", "exp_W", "v", "V", "U", "a")]
        return isinstance(ours, dict) and all(_same_numbers(reference[k], ours.get(k)) for k in keys)
    if isinstance(reference, list):
        return isinstance(ours, list) and len(reference) == len(ours) and all(
            _same_numbers(a, b) for a, b in zip(reference, ours))
    if isinstance(reference, str) and not _ASCII_RATIONAL.fullmatch(reference):
        return False
    try:
        return Fraction(str(reference).replace(" ", "").replace("\t", "")) == Fraction(ours)
    except (ValueError, TypeError, ZeroDivisionError):
        return False


def _a_model(rng: random.Random, trial: int):
    from exactlearn import MultiHeadAttention
    from exactlearn.transformer import Transformer

    if trial % 2 == 0:
        return MultiHeadAttention, MultiHeadAttention.random(rng.randint(1, 3), rng.randint(1, 3), seed=trial)
    d, heads, width = rng.randint(2, 3), rng.randint(1, 2), rng.randint(1, 3)
    return Transformer, Transformer.random(d, heads, width, seed=trial)


def _mutated(text: str, rng: random.Random) -> str:
    pool = '0123456789+-/ "[]{},:.eE' + FOREIGN_DIGITS + "\u00a0\n"
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(chars))
        kind = rng.randrange(3)
        if kind == 0:
            chars[i] = rng.choice(pool)
        elif kind == 1:
            chars.insert(i, rng.choice(pool))
        elif len(chars) > 1:
            del chars[i]
    return "".join(chars)


def probe_model_files(trial: int):
    """Model texts and files, malformed on purpose: InvalidModelError naming the entry (or the file)."""
    from exactlearn import DEFAULT_LIMITS, InvalidModelError

    rng = random.Random(f"modelfiles:{trial}")
    cls, model = _a_model(rng, trial)
    data = model.to_dict()
    path = rng.choice(list(_entry_paths(data)))
    where = re.escape(f"[{path[-1]}]")  # every entry is named by its index, at least
    case = (trial // 2) % 9
    if case == 0:  # a digit of another script
        value = _get(data, path)
        i = rng.choice([k for k, c in enumerate(value) if c.isdigit()])
        _set(data, path, value[:i] + rng.choice(FOREIGN_DIGITS) + value[i + 1:])
        return _expect(lambda: cls.from_json(json.dumps(data)), InvalidModelError, "ASCII digits", where)
    if case == 1:  # a leading "+": read as int("+2") reads it
        value = _get(data, path)
        if value.startswith("-"):
            return "exact", "negative entry: nothing to plant"
        _set(data, path, "+" + value)
        again = cls.from_json(json.dumps(data))
        return ("exact", "'+p' read as p") if again == model else ("wrong", "'+p' read as another number")
    if case in (2, 3):  # a number with too many digits, as a JSON number or as a string
        digits = rng.randint(DEFAULT_LIMITS.entry_digits + 1, 3 * DEFAULT_LIMITS.entry_digits)
        number = "9" * digits
        text = json.dumps(data).replace(json.dumps(_get(data, path)), "@", 1)
        text = text.replace("@", number if case == 2 else f'"{number}"')
        return _expect(lambda: cls.from_json(text), InvalidModelError, "entry_digits", r"^entry ")
    if case == 4:  # deep nesting around an entry
        depth = rng.choice([33, 100, 1000, 10**5])
        text = json.dumps(data).replace(json.dumps(_get(data, path)), "[" * depth + "1" + "]" * depth, 1)
        return _expect(lambda: cls.from_json(text), InvalidModelError, "nested deeper than 32")
    if case == 5:  # shapes: an empty matrix, a ragged row, an empty FFN, a set as a row
        parent = _get(data, path[:-2]) if len(path) >= 3 else None
        if isinstance(parent, list) and parent and isinstance(parent[0], list):
            choice = rng.randrange(3)
            if choice == 0:
                parent.clear()
            elif choice == 1:
                parent[rng.randrange(len(parent))].pop()
            else:
                parent[0] = set(parent[0])  # from_dict: a set is no row
                return _expect(lambda: cls.from_dict(data), InvalidModelError, "set|expected")
        elif "U" in data:
            data["U"], data["a"] = [], []
        else:
            _get(data, path[:-1]).pop()
        return _expect(lambda: cls.from_json(json.dumps(data)), InvalidModelError, ".")
    if case == 6:  # not text
        value = rng.choice([None, 5, 1.5, ["{}"], {"heads": []}, b"\xff\xfe\x00"])
        return _expect(lambda: cls.from_json(value), InvalidModelError, "JSON text must be a str|UTF-8")
    if case == 7:  # a file larger than the limit: only the first bytes are read
        start = time.process_time()
        small = DEFAULT_LIMITS.lifted(file_bytes=rng.randint(10, 200))
        source = rng.choice(["/dev/zero", "/dev/urandom"])
        outcome = _expect(lambda: cls.load(source, limits=small), InvalidModelError,
                          re.escape(f"model file '{source}'"), "larger than the limit")
        if time.process_time() - start > 2:
            return "wrong", "the size was not checked before reading"
        return outcome
    text = _mutated(model.to_json(indent=None), rng)  # random damage: refused, or read exactly
    try:
        again = cls.from_json(text)
    except InvalidModelError as exc:
        return "refused", f"mutant: {str(exc)[:60]}"
    try:
        reference = json.loads(text)
    except ValueError:
        return "wrong", f"accepted a text Python's json refuses: {text[:80]}"
    if not _same_numbers(reference, again.to_dict()):
        return "wrong", f"accepted nonsense: {text[:120]}"
    return "exact", "mutant read exactly"


# -- arguments: Limits fields and seeds ---------------------------------------------------------
class _NoText(int):
    def __format__(self, spec):
        raise ZeroDivisionError("no text")


class _NoRepr:
    def __repr__(self):
        raise RuntimeError("no repr")

    __str__ = __repr__


def probe_arguments(trial: int):
    """Limits fields of the wrong type or range, unknown fields, and bad seeds at every entry point."""
    from dataclasses import fields

    from exactlearn import DEFAULT_LIMITS, InvalidArgumentError, Limits, MultiHeadAttention, Oracle, learn
    from exactlearn.approx import NoisyOracle, learn_approx
    from exactlearn.symbolic import certify
    from exactlearn.transformer import Transformer, learn_transformer

    rng = random.Random(f"arguments:{trial}")
    case = trial % 4
    if case == 0:
        field = rng.choice([f.name for f in fields(Limits)])
        lowest = {"height": 2, "precision": 16, "redraws": 0}.get(field, 1)  # below it: out of range
        bad = rng.choice([None, 2.5, "3", float("nan"), float("inf"), True, lowest - 1, -1, 10**101,
                          _NoRepr(), [3]])
        return _expect(lambda: Limits(**{field: bad}), InvalidArgumentError, re.escape(f"Limits.{field}"))
    if case == 1:
        name = rng.choice(["bogus", "D", "max_d", "tokens", "seed"])
        return _expect(lambda: DEFAULT_LIMITS.lifted(**{name: 1}), InvalidArgumentError,
                       f"no field '{name}'")
    truth = MultiHeadAttention.random(2, 1, seed=trial)
    entry_points = [
        lambda s: learn(Oracle(truth), 2, heads=1, seed=s),
        lambda s: MultiHeadAttention.random(2, 1, seed=s),
        lambda s: Transformer.random(2, 1, 2, seed=s),
        lambda s: learn_transformer(Transformer.random(2, 1, 2), 2, heads=1, seed=s),
        lambda s: learn_approx(NoisyOracle(truth, eps=0), 2, heads=1, seed=s),
        lambda s: certify(1, 1, seed=s, check_point=False),
    ]
    call = rng.choice(entry_points)
    if case == 2:
        bad = rng.choice([10**5000, -(10**100), 2**256, None, 1.5, "x" * 300, (1, 2), _NoText(3), _NoRepr(),
                          b"seed"])
        return _expect(lambda: call(bad), InvalidArgumentError, "seed")
    good = rng.choice([-(2**255), 2**255, "", "run 3", "x" * 256, trial])
    call(good)
    rec = learn(Oracle(truth), 2, heads=1, seed=good)
    return ("exact", "valid seed") if rec.model.equivalent(truth) else ("wrong", "valid seed, wrong model")


# -- sizes at every entry point, refused before the first query ----------------------------------
class _Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def probe_sizes(trial: int):
    """Sizes above the limits at every entry point: refused in well under a second, naming the limit."""
    from exactlearn import InvalidArgumentError, InvalidModelError, MultiHeadAttention, OracleError, learn
    from exactlearn.approx import NoisyOracle, learn_approx
    from exactlearn.limits import certify_estimate
    from exactlearn.symbolic import certify
    from exactlearn.transformer import Transformer, learn_transformer

    rng = random.Random(f"sizes:{trial}")
    truth = MultiHeadAttention.random(2, 1, seed=trial)
    case = trial % 7
    start = time.process_time()
    if case == 0:
        d = rng.randint(64, 256)
        heads = rng.randint(2**20 // (d * d) + 1, 4096)
        outcome = _expect(lambda: MultiHeadAttention.random(d, heads, seed=trial), InvalidModelError,
                          "model_entries", r"about [\d.]+ (s|min|h) and [\d.]+ (MB|GB)")
    elif case == 1:
        width = rng.choice([1025, 10**6, 10**7, 10**9])
        outcome = _expect(lambda: Transformer.random(2, 1, width), InvalidModelError, r"Limits\(width=")
    elif case == 2:
        kwargs = rng.choice([{"verify": 10 ** rng.randint(6, 12)}, {"max_length": 10 ** rng.randint(7, 12)}])
        outcome = _expect(lambda: learn_transformer(Transformer.random(2, 1, 2), 2, heads=1, **kwargs),
                          InvalidArgumentError, r"Limits\((queries|query_length)=")
    elif case == 3:
        precision = 10 ** rng.randint(5, 13)
        outcome = _expect(lambda: learn_approx(NoisyOracle(truth, eps=0), 2, heads=1, precision=precision),
                          InvalidArgumentError, r"Limits\(precision=")
    elif case == 4:
        other = rng.choice([1, 3, 4])
        outcome = _expect(lambda: learn_approx(NoisyOracle(truth, eps=0), 2, heads=1,
                                               guide=MultiHeadAttention.random(other, 1)),
                          InvalidArgumentError, f"token width d = {other}, but d = 2")
    elif case == 5:
        sizes = [(d, H) for d in range(1, 9) for H in range(1, 7) if certify_estimate(d, H)[0] > 120]
        d, H = rng.choice(sizes)
        outcome = _expect(lambda: certify(d, H), InvalidArgumentError, r"Limits\(certify_")
    else:  # admitted but slow: the estimate comes before the first query
        def unplugged(tokens):
            raise ConnectionError("unplugged")

        handler = _Warnings()
        logging.getLogger("exactlearn").addHandler(handler)
        try:
            d, H = rng.choice([(16, 16), (20, 10), (24, 8)])  # estimated 10-30 s
            learn(unplugged, d, heads=H)
        except OracleError as exc:
            ok = exc.queries == 0 and any(re.search(r"estimated \d+ s of CPU", m) for m in handler.messages)
            outcome = ("refused", "estimate before the first query") if ok else (
                "wrong", f"no estimate before the first query: {handler.messages}")
        finally:
            logging.getLogger("exactlearn").removeHandler(handler)
    if time.process_time() - start > 5:
        return "wrong", f"case {case}: refused after {time.process_time() - start:.1f} s CPU"
    return outcome


# -- sweeps -------------------------------------------------------------------------------------
def _tenfold_dying_at(n):
    """A task for a process pool: the worker of task 2 dies by SIGKILL (after the others finished)."""
    if n == 2:
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)
    return 10 * n


def probe_sweeps(trial: int):
    """map_tasks: a task without a key, a lambda, a dying worker, an unreachable scheduler."""
    from exactlearn import SweepError
    from exactlearn.sweep import map_tasks, recover_instance

    rng = random.Random(f"sweeps:{trial}")
    case = trial % 4
    if case == 0:
        key = rng.choice(["d", "heads", "seed"])
        at = rng.randint(1, 2)
        tasks = [{"d": 1, "heads": 1, "seed": i} for i in range(3)]
        del tasks[at][key]
        outcome = _expect(lambda: map_tasks(recover_instance, tasks), SweepError, f"lacks '{key}'",
                          f"{at} of 3 tasks finished")
        try:
            map_tasks(recover_instance, tasks)
        except SweepError as exc:
            if len([r for r in exc.results if r is not None]) != at:
                return "wrong", "finished results lost"
        return outcome
    if case == 1:
        fn = rng.choice([lambda t: t, _local_function()])
        return _expect(lambda: map_tasks(fn, [1, 2, 3], workers=2), SweepError, "cannot be pickled")
    if case == 2:
        try:
            map_tasks(_tenfold_dying_at, [0, 1, 2, 3], workers=2)
        except SweepError as exc:
            kept = exc.results[:2] == [0, 10] and "worker process died" in str(exc)
            return ("refused", "SweepError, finished results kept") if kept else ("wrong", str(exc)[:160])
        return "wrong", "a dead worker went unnoticed"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.perf_counter()
    outcome = _expect(lambda: map_tasks(abs, [1], scheduler=f"tcp://127.0.0.1:{port}"), SweepError,
                      "cannot reach the Dask scheduler")
    return outcome if time.perf_counter() - start < 10 else ("wrong", "slow to fail")


def _local_function():
    def nested(t):
        return t

    return nested


# -- saving -------------------------------------------------------------------------------------
def probe_saving(trial: int):
    """save: a directory, a missing directory, a full disk: OSError, and never a truncated file."""
    import exactlearn.jsonio as jsonio
    from exactlearn import MultiHeadAttention

    rng = random.Random(f"saving:{trial}")
    model = MultiHeadAttention.random(rng.randint(1, 3), rng.randint(1, 3), seed=trial)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        old = folder / "m.json"
        MultiHeadAttention.random(1, 1, seed=trial).save(old)
        before = old.read_bytes()
        case = trial % 4
        target, error = [(folder, IsADirectoryError), (folder / "missing" / "m.json", FileNotFoundError),
                         (old, OSError), (old, None)][case]
        real_fsync = jsonio.os.fsync
        if case == 2:  # the disk fills while the data are written
            def full(fd):
                raise OSError(28, "No space left on device")

            jsonio.os.fsync = full
        try:
            model.save(target)
        except OSError as exc:
            if error is None or not isinstance(exc, error):
                return "wrong", f"{type(exc).__name__}: {exc}"
            intact = old.read_bytes() == before and sorted(p.name for p in folder.iterdir()) == ["m.json"]
            return ("refused", type(exc).__name__) if intact else ("wrong", "a file was left truncated")
        finally:
            jsonio.os.fsync = real_fsync
        if error is not None:
            return "wrong", f"saved to {target} without an error"
        again = MultiHeadAttention.load(old)
        clean = sorted(p.name for p in folder.iterdir()) == ["m.json"]
        return ("exact", "saved whole") if again == model and clean else ("wrong", "saved wrongly")


# -- the command line, in a child process ---------------------------------------------------------
def probe_cli(trial: int):
    """``exactlearn ...`` with inputs above the limits or malformed: exit 2, one message, no traceback."""
    rng = random.Random(f"cli:{trial}")
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "bad.json"
        bad.write_text(rng.choice([
            '{"heads": [{"exp_W": [["\u0663"]], "v": ["1"]}]}', "[" * 10**5,
            '{"heads": [{"exp_W": [[%s]], "v": ["1"]}]}' % ("7" * 10_001),
            '{"heads": [{"exp_W": [[2, 1], [1, 3]], "V": [[1, 0], [0, 1]]}], "U": [], "a": []}']))
        cases = [
            (["random-model", "--d", "256", "--heads", "4096"], "--limit model_entries="),
            (["transformer", "--width", "1000000"], "--limit width="),
            (["certify", "--d", str(rng.randint(5, 8)), "--heads", "4"], "--limit certify_"),
            (["recover", "--d", "40"], "--limit d="),
            (["recover", "--model", "/dev/zero"], "larger than the limit"),
            (["recover", "--model", str(bad)], re.escape(str(bad))),
            (["transformer", "--model", str(bad)], re.escape(str(bad))),
            (["recover", "--seed", "9" * rng.randint(80, 4000)], "seed"),
            (["random-model", "--limit", rng.choice(["bogus=1", "d=x", "d"])], "argument --limit"),
            (["random-model", "-o", tmp], "cannot write"),
            ([rng.choice(["recover", "certify"]), "--json", "/proc/x.json"], "cannot write"),
            (["transformer", "--json", "/proc/x.json"], "cannot write"),
            (["approx", "--json", "/proc/x.json"], "cannot write"),
        ]
        argv, needle = cases[trial % len(cases)]
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "exactlearn", *argv], capture_output=True, text=True,
                              timeout=60, cwd=tmp, env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="80"))
    seconds = time.perf_counter() - start
    err = " ".join(proc.stderr.split())
    if "Traceback" in proc.stderr:
        raise RuntimeError(f"a traceback from {argv[:3]}: {proc.stderr[-300:]}")
    if proc.returncode != 2 or proc.stdout or not re.search(needle, err) or "Limits(" in err:
        return "wrong", f"{argv[:4]}: exit {proc.returncode}, stderr {err[:160]!r}"
    return ("refused", f"{argv[0]} in {seconds:.1f} s") if seconds < 20 else ("wrong", f"{seconds:.0f} s")


# -- answers: converted inside the guard, their size, an oracle that changes its query --------------
def probe_answers(trial: int):
    """Answer objects whose numerator or __int__ raises, and an oracle whose ``d`` raises: OracleOutputError
    / OracleError with the counts (the counter converts answers inside its guard)."""
    import numbers

    from exactlearn import MultiHeadAttention, Oracle, OracleError, OracleOutputError, learn

    class BadRational(numbers.Rational):
        numerator = property(lambda self: 1 / 0)
        denominator = property(lambda self: 1)

    for name in ("__abs__", "__add__", "__ceil__", "__eq__", "__floor__", "__floordiv__", "__le__", "__lt__",
                 "__mod__", "__mul__", "__neg__", "__pos__", "__pow__", "__radd__", "__rfloordiv__",
                 "__rmod__", "__rmul__", "__round__", "__rpow__", "__rtruediv__", "__truediv__",
                 "__trunc__"):
        setattr(BadRational, name, lambda *a: NotImplemented)
    BadRational.__abstractmethods__ = frozenset()

    class BadInt(int):
        def __int__(self):
            raise ValueError("no int")

        def __index__(self):
            raise ValueError("no index")

    class NoWidth:
        @property
        def d(self):
            raise RuntimeError("no width")

        def __call__(self, tokens):
            return 1

    truth = MultiHeadAttention.random(2, 1, seed=trial)
    case = trial % 3
    if case == 2:
        return _expect(lambda: learn(NoWidth(), 2, heads=1), (OracleError, OracleOutputError), ".")
    bad = BadRational() if case == 0 else BadInt(3)
    count = [0]

    def oracle(tokens):
        count[0] += 1
        return bad if count[0] == 2 else Oracle(truth)(tokens)

    return _expect(lambda: learn(oracle, 2, heads=1), (OracleError, OracleOutputError), ".")


def probe_mutation(trial: int):
    """An oracle that changes the token list after answering: the counts are those of the queries as
    asked (the counter reads a query's length before handing it over)."""
    from exactlearn import MultiHeadAttention, Oracle, learn

    truth = MultiHeadAttention.random(2, 2, seed=trial)
    inner = Oracle(truth)

    def oracle(tokens):
        value = inner(tokens)
        if trial % 2:
            tokens.extend(tokens * 200)
        else:
            tokens.clear()
        return value

    rec = learn(oracle, 2, heads=2)
    ok = rec.max_length == inner.max_length == 5 and rec.model.equivalent(truth)
    return ("exact", "counts as asked") if ok else ("wrong", f"max_length {rec.max_length} != 5")


def probe_answer_size(trial: int):
    """The truth plus 1/10^1000000 (under the oracle's 2^22-bit bound): refused within the child's CPU
    limit (at d = 2, H = 1 the answers are within what the run affords,
    exactlearn.limits.affordable_answer_bits, and found inconsistent in seconds)."""
    from flint import fmpq

    from exactlearn import ExactLearnError, MultiHeadAttention, Oracle, learn

    truth = MultiHeadAttention.random(2, 1, seed=trial)
    inner = Oracle(truth)
    tiny = fmpq(1, 10**1_000_000)
    return _expect(lambda: learn(lambda X: inner(X) + tiny, 2, heads=1), ExactLearnError, ".")


def probe_round_two(trial: int):
    """Every family of the suite in turn (trial t runs family t mod 6): one child for the default tests."""
    family = SUITE[trial % len(SUITE)]
    outcome, detail = PROBES[family](trial // len(SUITE))
    return outcome, f"{family}: {detail}"


PROBES = {name[len("probe_"):]: f for name, f in sorted(globals().items()) if name.startswith("probe_")}
#: the input families (the suite) and the answer families (see the docstring)
SUITE = ("model_files", "arguments", "sizes", "sweeps", "saving", "cli")
ANSWERS = ("answers", "mutation", "answer_size")
