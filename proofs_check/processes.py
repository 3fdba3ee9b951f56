"""The two processes a claim's learning runs in: the oracle's and the learner's.

Both are started by :class:`proofs_check.sandbox.Sandbox` with the ``spawn``
method, so each is a fresh interpreter that inherits nothing from the judge but
the pipes and the hooks named here.

* :func:`oracle_main` holds one model at a time. The judge *loads* a recipe
  (``"module:function"`` and arguments, built here, never pickled from the
  judge), the learner *asks* queries, the judge *reveals*: the truth, the log
  of answered queries and the counts come back to the judge, and the model is
  dropped. Queries arrive on their own pipe, which carries nothing else: any
  other message there is recorded as a protocol problem and answered with a
  refusal.
* :func:`learner_main` runs jobs (:mod:`proofs_check.learners`). Its learner
  gets :func:`asker`, a plain function that sends tokens and receives answers;
  this process never receives a recipe, a seed of a model, a truth or a log.
  ``sys.argv`` is cleared on start (``spawn`` copies the judge's command line,
  which holds ``--seed``).

A *hook* ``("module:function", args)`` is called as ``function(probe, role,
*args)`` when a process starts: the self-test plants its faults this way
(:mod:`proofs_check.faults`), and each process reports its probe's snapshot
with every reply, so the judge sees what a fault did there.
"""

from __future__ import annotations

import importlib
import pickle
import selectors
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from .oracles import QueryLog
from .wire import Role, Tag, decode_tokens, encode, encode_tokens

__all__ = ["Built", "asker", "install_hooks", "learner_main", "oracle_main", "resolve"]

#: hooks as passed to a process: ((``"module:function"``, args), ...)
Hooks = Sequence[tuple[str, tuple]]


def resolve(path: str) -> Callable[..., Any]:
    """The function named ``"package.module:function"``."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Built:
    """What a recipe builds: the callable that answers queries and the truth revealed afterwards
    (a recipe that returns a model gives ``Built(model, model)``)."""

    answer: Callable[[list], Any]
    truth: Any


def install_hooks(hooks: Hooks, role: Role) -> tuple[Any, str | None]:
    """Call every hook with a fresh probe; ``(probe or None, error or None)``."""
    if not hooks:
        return None, None
    from .probe import Probe

    probe = Probe()
    try:
        for path, args in hooks:
            resolve(path)(probe, role, *args)
    except Exception as exc:  # a hook that cannot be installed: reported, never silently skipped
        return probe, f"{role.value} hook failed: {type(exc).__name__}: {exc}"
    return probe, None


def _snapshot(probe: Any) -> dict | None:
    return None if probe is None else probe.snapshot()


@dataclass
class _Session:
    """The oracle's state between a load and a reveal."""

    built: Built
    truth: bytes  # the truth as loaded, pickled before the first query (a model may cache as it answers)
    log: QueryLog = field(default_factory=QueryLog)
    received: int = 0  # query messages received on the learner's pipe
    answered: int = 0  # queries answered (the log must hold exactly these)
    refused: list[str] = field(default_factory=list)  # queries the model raised on
    problems: list[str] = field(default_factory=list)  # protocol problems


def _load(recipe: Any) -> _Session:
    made = resolve(recipe.builder)(*recipe.args)
    built = made if isinstance(made, Built) else Built(made, made)
    return _Session(built, pickle.dumps(built.truth))


def _is_query(message: Any) -> bool:
    return isinstance(message, tuple) and all(isinstance(t, tuple) for t in message)


def _answer(session: _Session | None, stray: list[str], message: Any) -> tuple:
    """The reply to one message on the learner's pipe."""
    if not _is_query(message):
        where = session.problems if session is not None else stray
        where.append(f"the learner sent a message that is not a query: {str(message)[:80]}")
        return ("!", "ProtocolError", "only queries are answered on this pipe")
    if session is None:
        stray.append("a query arrived while no model was loaded")
        return ("!", "ProtocolError", "no model is loaded")
    session.received += 1
    tokens = decode_tokens(message)
    try:
        value = session.built.answer(list(tokens))
    except Exception as exc:  # the model refused the query (bad tokens, too large an answer)
        session.refused.append(f"{type(exc).__name__}: {exc}"[:200])
        return ("!", type(exc).__name__, str(exc)[:300])
    session.answered += 1
    session.log.record(tokens)
    return encode(value)


def _reveal(session: _Session | None, stray: list[str], probe: Any) -> tuple:
    if session is None:
        return (Tag.FAILED, "reveal without a loaded model")
    counts = {"received": session.received, "answered": session.answered, "refused": session.refused,
              "problems": stray + session.problems}
    stray.clear()
    return (Tag.REVEALED, session.truth, session.log.queries, counts, _snapshot(probe))


def oracle_main(control: Connection, queries: Connection, hooks: Hooks) -> None:
    """The oracle process: serve the judge (``control``) and the learner's queries (``queries``)."""
    probe, error = install_hooks(hooks, Role.ORACLE)
    control.send((Tag.READY, error))
    session: _Session | None = None
    stray: list[str] = []
    sources = selectors.DefaultSelector()
    for conn in (control, queries):
        sources.register(conn, selectors.EVENT_READ)
    while True:
        for key, _ in sources.select():
            conn = key.fileobj
            try:
                message = conn.recv()
            except (EOFError, OSError):
                if conn is control:
                    return
                sources.unregister(conn)  # the learner is gone; the judge may still reveal
                continue
            if conn is queries:
                conn.send(_answer(session, stray, message))
            elif message[0] is Tag.LOAD:
                try:
                    session = _load(message[1])
                    control.send((Tag.READY, None))
                except Exception as exc:
                    session = None
                    control.send((Tag.FAILED, f"recipe {message[1]}: {type(exc).__name__}: {exc}"))
            elif message[0] is Tag.REVEAL:
                try:
                    control.send(_reveal(session, stray, probe))
                except Exception as exc:  # e.g. a log entry that cannot be pickled
                    control.send((Tag.FAILED, f"reveal: {type(exc).__name__}: {exc}"))
                session = None
            else:
                return


class OracleRefusal(RuntimeError):
    """The oracle process did not answer a query (the model raised, or the message was refused)."""


def asker(conn: Connection) -> tuple[Callable[[Sequence], Any], list[int]]:
    """A plain function that sends a query to the oracle process and returns its answer, and the
    one-element list counting the queries it sent."""
    from .wire import decode

    sent = [0]
    fields: dict = {}  # the number fields of this session's answers, each built once

    def ask(tokens: Sequence) -> Any:
        sent[0] += 1
        conn.send(encode_tokens(tokens))
        reply = conn.recv()
        if reply[0] != "!":
            return decode(reply, fields)
        raise OracleRefusal(f"the oracle refused the query: {reply[1]}: {reply[2]}")

    return ask, sent


def learner_main(control: Connection, oracle: Connection, hooks: Hooks) -> None:
    """The learner process: run each job the judge sends against the oracle process."""
    del sys.argv[1:]  # the judge's command line (with --seed) is none of the learner's business
    probe, error = install_hooks(hooks, Role.LEARNER)
    control.send((Tag.READY, error))
    from .learners import run_job

    while True:
        try:
            message = control.recv()
        except (EOFError, OSError):
            return
        if message[0] is not Tag.LEARN:
            return
        ask, sent = asker(oracle)
        try:
            summary = run_job(message[1], ask)
        except BaseException as exc:  # noqa: BLE001 (reported to the judge: a crash is a FAIL there)
            summary = {"crashed": f"{type(exc).__name__}: {exc}"[:500],
                       "traceback": traceback.format_exc()[-1500:]}
        del ask
        control.send((Tag.RESULT, summary, sent[0], _snapshot(probe)))
