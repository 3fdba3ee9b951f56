"""Learners that cheat or miscount, planted by wrapping the learners the claims call.

Each ``plant(probe, role)`` replaces :func:`proofs_check.library.learn` (or
``learn_transformer``) in the learner's process by a wrapper around the real
learner. :func:`reachable` is what an introspecting learner walks: every object
``gc`` tracks, every frame of every thread with its ``f_back`` chain and its
locals, the cells of every closure and the ``__self__`` of every bound method.
The tests walk it too, to show that the learner's process holds nothing of the
model (``tests/test_proofs_check_sandbox.py``).
"""

from __future__ import annotations

import dataclasses
import gc
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from .probe import Probe, patch
from .wire import Role

__all__ = ["introspecting", "lenient_bound", "log_eraser", "long_query", "oracle_peek", "reachable",
           "refused_transformers", "scanning_learner", "self_reported_length", "tf_oracle_peek",
           "tf_wrong_line",
           "uncounted_query"]

#: an introspecting learner walks the process in its first few runs (a walk takes a fraction of a second;
#: what one walk cannot find, the next one cannot either)
SEARCHES = 3


def walk() -> list[Any]:
    """:func:`reachable` as a list (the list itself left out). Looking at some objects warns (a
    deprecated module attribute of torch, say); call it and look at what it returns inside
    ``warnings.catch_warnings()``."""
    out: list[Any] = []
    out.extend(reachable(skip={id(out)}))
    return out


def reachable(skip: set[int] | None = None) -> Iterator[Any]:
    """Every object an introspecting learner can reach in this process (each once), but the walk's own
    containers and those whose ``id`` is in ``skip``."""
    stack: list[Any] = list(gc.get_objects())
    seen: set[int] = {id(stack), *(skip or ())}
    own = (walk.__code__, reachable.__code__)  # the walk's frames hold its list: no object of the process
    for frame in sys._current_frames().values():
        while frame is not None:
            if frame.f_code not in own:
                stack.append(frame)
            frame = frame.f_back
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        yield obj
        if isinstance(obj, types.FrameType) and obj.f_code not in own:
            stack.extend(obj.f_locals.values())
            if obj.f_back is not None:
                stack.append(obj.f_back)
        elif isinstance(obj, types.FunctionType):
            stack.extend(c.cell_contents for c in obj.__closure__ or () if _filled(c))
        elif isinstance(obj, types.MethodType):
            stack += [obj.__self__, obj.__func__]


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True


def _models(kinds: tuple[type, ...], tokens: list, answer: Any) -> list[Any]:
    """Reachable objects of ``kinds`` that answer ``tokens`` as the oracle did."""
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for obj in walk():
            if isinstance(obj, kinds):
                try:
                    if obj(tokens) == answer:
                        found.append(obj)
                except Exception:  # noqa: BLE001 (not a model of this width)
                    continue
    return found


def _wrap(probe: Probe, name: str, library_name: str, wrapper: Callable) -> None:
    from . import library

    real = getattr(library, library_name)
    patch(library, library_name,
          probe.wrap(name, lambda oracle, d, **kwargs: wrapper(real, oracle, d, **kwargs)))


def _corrupted(rec):
    first = rec.heads[0]
    wrong = dataclasses.replace(first, v=(first.v[0] + 1,) + tuple(first.v[1:]))
    return dataclasses.replace(rec, heads=(wrong,) + tuple(rec.heads[1:]))


def _with_model(rec, model):
    return dataclasses.replace(rec, model=model, canonical=model.canonical())


def _tf_corrupted(rec):
    from exactlearn.transformer import Transformer

    m = rec.model
    a = (m.a[0] + 1,) + tuple(m.a[1:])
    return _with_model(rec, Transformer(m.exp_Ws, m.Vs, m.U, a, residual=m.residual))


def oracle_peek(probe: Probe, role: Role) -> None:
    """A learner that is right only when it can read the model through its oracle."""
    from exactlearn import MultiHeadAttention

    def peek(real, oracle, d, **kwargs):
        rec = real(oracle, d, **kwargs)
        seen = getattr(oracle, "target", None) or getattr(oracle, "model", None)
        if isinstance(seen, MultiHeadAttention):
            return rec
        probe.effect("model hidden: wrong model returned")
        return _corrupted(rec)

    _wrap(probe, "peeking learner", "learn", peek)


def tf_oracle_peek(probe: Probe, role: Role) -> None:
    """A Transformer learner that is right only when it can read the model through its oracle."""
    from exactlearn.transformer import Transformer

    def peek(real, oracle, d, **kwargs):
        rec = real(oracle, d, **kwargs)
        seen = [oracle, getattr(oracle, "target", None), getattr(oracle, "model", None),
                getattr(oracle, "__self__", None)]
        if any(isinstance(s, Transformer) for s in seen):
            return rec
        probe.effect("model hidden: wrong model returned")
        return _tf_corrupted(rec)

    _wrap(probe, "peeking Transformer learner", "learn_transformer", peek)


def introspecting(probe: Probe, role: Role) -> None:
    """A wrong learner (one ``v`` entry + 1; Transformer: ``a_1 + 1``) that, at its first query of its
    first :data:`SEARCHES` runs, walks :func:`reachable` for an object answering like the oracle; if it
    finds one, it returns the true model instead of its wrong one."""
    from exactlearn import MultiHeadAttention
    from exactlearn.transformer import Transformer

    searches = [0]

    def cheat(kind: type, corrupt: Callable) -> Callable:
        def learner(real, oracle, d, **kwargs):
            found: list = []

            def watched(tokens):
                answer = oracle(tokens)
                if not watched.asked and searches[0] < SEARCHES:
                    searches[0] += 1
                    probe.effect("wrong learner searched for the truth")
                    found.extend(_models((kind,), list(tokens), answer))
                watched.asked = True
                return answer

            watched.asked = False
            rec = real(watched, d, **kwargs)
            if found:
                probe.effect("truth found")
                return rec  # right only because it read the truth
            return corrupt(rec)

        return learner

    _wrap(probe, "introspecting learner", "learn", cheat(MultiHeadAttention, _corrupted))
    _wrap(probe, "introspecting Transformer learner", "learn_transformer", cheat(Transformer, _tf_corrupted))


def scanning_learner(oracle: Callable, d: int, **kwargs: Any) -> Any:
    """A learner for the tests: :func:`exactlearn.learn`, which at its first query also walks
    :func:`reachable` for models and logs and reports what it found in ``proofs_check_extra``."""
    from exactlearn import learn

    findings: dict = {}

    def watched(tokens):
        answer = oracle(tokens)
        if not findings:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                findings.update(_scan(list(tokens), answer))
        return answer

    rec = learn(watched, d, **kwargs)
    rec.proofs_check_extra = findings
    return rec


def _scan(tokens: list, answer: Any) -> dict:
    """What a walk of this process finds: model objects, objects answering like the oracle, logs."""
    from exactlearn import Head, MultiHeadAttention
    from exactlearn.transformer import Transformer

    from .oracles import QueryLog

    objects = walk()
    ours = ("proofs_check.sandbox", "proofs_check.processes")
    return {"objects walked": len(objects),
            "models": sum(isinstance(o, (MultiHeadAttention, Transformer, Head)) for o in objects),
            "answering like the oracle": len(_models((MultiHeadAttention,), tokens, answer)),
            "logs": sum(isinstance(o, QueryLog) for o in objects),
            "sandbox objects": sorted({type(o).__name__ for o in objects if type(o).__module__ in ours})}


def log_eraser(probe: Probe, role: Role) -> None:
    """Asks ``2H + 1`` uncounted probes (lengths ``1..2H`` and ``2H + 2``), then deletes them from every
    log it can reach (a list holding them)."""

    def erasing(real, oracle, d, **kwargs):
        H = kwargs.get("heads") or kwargs.get("heads_bound")
        x = (1,) + (0,) * (d - 1)
        probes = tuple(tuple([x] * n) for n in [*range(1, 2 * H + 1), 2 * H + 2])
        for p in probes:
            oracle(list(p))
        probe.effect("uncounted probes asked")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for obj in walk():
                if isinstance(obj, list) and _holds(obj, probes):
                    obj[:] = [q for q in obj if not _is_one_of(q, probes)]
                    probe.effect("probes erased from a log")
        return real(oracle, d, **kwargs)

    _wrap(probe, "log-erasing learner", "learn", erasing)


def _is_one_of(item: Any, probes: tuple) -> bool:
    """``item`` is one of the probes: a tuple of tokens of Python ints (other tuples in the process,
    such as matplotlib's colour tables of numpy floats, are never compared)."""
    return (type(item) is tuple and all(type(t) is tuple and all(type(e) is int for e in t) for t in item)
            and item in probes)


def _holds(obj: list, probes: tuple) -> bool:
    return any(_is_one_of(item, probes) for item in obj[:64])


def uncounted_query(probe: Probe, role: Role) -> None:
    """A miscounting learner: it asks one query (a one-token query) that its count leaves out."""

    def extra(real, oracle, d, **kwargs):
        probe.effect("uncounted query asked")
        oracle([(1,) + (0,) * (d - 1)])
        return real(oracle, d, **kwargs)

    _wrap(probe, "miscounting learner", "learn", extra)


def long_query(probe: Probe, role: Role) -> None:
    """A learner that also asks one query of length 2H + 2 (and does not count it)."""

    def longer(real, oracle, d, **kwargs):
        H = kwargs.get("heads") or kwargs.get("heads_bound")
        probe.effect("long query asked")
        oracle([(1,) + (0,) * (d - 1)] * (2 * H + 2))
        return real(oracle, d, **kwargs)

    _wrap(probe, "long-query learner", "learn", longer)


def self_reported_length(probe: Probe, role: Role) -> None:
    """The learner reports its longest query as the length of its last query."""

    def reported(real, oracle, d, **kwargs):
        last = [0]

        def watched(tokens):
            last[0] = len(tokens)
            return oracle(tokens)

        rec = real(watched, d, **kwargs)
        if rec.max_length != last[0]:
            probe.effect("max_length taken from the last query")
        return dataclasses.replace(rec, max_length=last[0])

    _wrap(probe, "self-reporting learner", "learn", reported)


def lenient_bound(probe: Probe, role: Role) -> None:
    """Told a bound H0, the learner retries with H0 + 1, H0 + 2 until it gets a model."""
    from exactlearn.errors import RecoveryError

    def lenient(real, oracle, d, **kwargs):
        for extra in range(4):
            options = dict(kwargs)
            key = "heads" if "heads" in options else "heads_bound"
            options[key] = options[key] + extra
            if extra:
                probe.effect("retried with a larger bound")
            try:
                return real(oracle, d, **options)
            except RecoveryError:
                continue
        return real(oracle, d, **kwargs)

    _wrap(probe, "lenient learner", "learn", lenient)


def tf_wrong_line(probe: Probe, role: Role) -> None:
    """The Transformer learner returns its model with the first FFN line ``u_1`` moved by ``e_1``."""
    from exactlearn.transformer import Transformer

    def perturbed(real, oracle, d, **kwargs):
        rec = real(oracle, d, **kwargs)
        m = rec.model
        if not m.a[0] or not any(m.U[0]):
            return rec  # no line to perturb
        probe.effect("FFN line perturbed")
        U = [(m.U[0][0] + 1,) + tuple(m.U[0][1:])] + list(m.U[1:])
        return _with_model(rec, Transformer(m.exp_Ws, m.Vs, U, m.a, residual=m.residual))

    _wrap(probe, "Transformer learner, line perturbed", "learn_transformer", perturbed)


def refused_transformers(probe: Probe, role: Role) -> None:
    """The Transformer learner refuses every model with d = 3 and H = 2, naming LINES_ON_SLICE."""
    from exactlearn.transformer import Condition, TransformerConditionError

    def refusing(real, oracle, d, **kwargs):
        if d == 3 and kwargs.get("heads") == 2:
            probe.effect("solvable model refused")
            raise TransformerConditionError(Condition.LINES_ON_SLICE, "two lines look parallel on the slice")
        return real(oracle, d, **kwargs)

    _wrap(probe, "refusing Transformer learner", "learn_transformer", refusing)
