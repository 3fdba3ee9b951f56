"""The judge's side of learning: the model and its log in one process, the learner in another.

A claim never lets a learner run in its own process. :meth:`Sandbox.learn`
loads a :class:`Recipe` into the oracle process (the model is built there from
the recipe's builder and arguments, e.g. a seed), sends a
:class:`~proofs_check.learners.Job` to the learner process, waits for the
learner's summary and only then asks the oracle process for the truth and the
log. What comes back is a :class:`Seen`.

While a learner runs, its process holds the asker (a function that sends
tokens and receives answers), its job and whatever it computes: no model, no
log, no truth, no recipe, no seed of a model, not the judge's command line.
Walking ``gc.get_objects()``, frames, closures or bound methods there finds
nothing of the model (``tests/test_proofs_check_sandbox.py``). The boundary
is a process boundary, no more: a learner that reads ``/proc``, attaches a
debugger or signals the oracle process can still see or disturb it
(docs/claims.md, section What 'opaque' means).

Integrity of a session, checked by :attr:`Seen.problems`: the queries the
learner's asker sent, the query messages the oracle received, the queries it
answered (or refused) and the length of its log must all agree, and the
learner's pipe must have carried nothing but queries.

The process pair is started on first use and reused for every session (one
pair per judge process; a pool's workers each start their own), restarted
after a learner dies or runs out of time, and stopped at exit.

>>> seen = current().learn(Recipe("proofs_check.instances:random_model", (2, 1, 0)),
...                        Job(LearnerKind.EXACT, 2, {"heads": 1, "seed": 0}))
>>> seen.result["queries"], seen.log.count, seen.problems
(15, 15, [])
>>> seen.truth == MultiHeadAttention.from_dict(seen.result["model"])
True
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import pickle
import time
from dataclasses import dataclass, field
from typing import Any

from exactlearn import MultiHeadAttention  # noqa: F401  (the doctest)

from . import processes
from .learners import Job, LearnerKind
from .oracles import QueryLog
from .wire import Tag

__all__ = ["SANDBOX", "Job", "LearnerKind", "Recipe", "Sandbox", "SandboxError", "Seen", "current",
           "use_hooks"]


@dataclass(frozen=True)
class SandboxSettings:
    """The sandbox's waiting times."""

    start_timeout: float = 120.0  # seconds for a new process to import and report ready
    session_timeout: float = 900.0  # seconds a learner may run one job before it is stopped
    oracle_timeout: float = 120.0  # seconds for the oracle process to load a recipe or reveal


SANDBOX = SandboxSettings()


class SandboxError(RuntimeError):
    """The sandbox itself failed: a process did not start, or a recipe could not be built."""


@dataclass(frozen=True)
class Recipe:
    """How the oracle process builds a model: ``builder`` (``"module:function"``) called with ``args``.
    The builder returns a model (a callable on tokens) or a :class:`proofs_check.processes.Built`."""

    builder: str
    args: tuple = ()


@dataclass
class Seen:
    """What the judge sees of one session, after the learner returned."""

    result: dict  # the learner's summary (proofs_check.learners): model, reported figures, or a refusal
    truth: Any  # the model the oracle answered from
    log: QueryLog  # every query the oracle answered, in order
    problems: list[str] = field(default_factory=list)  # the session's integrity problems
    refused_queries: list[str] = field(default_factory=list)  # queries the model raised on
    seconds: float = 0.0

    @property
    def refused(self) -> bool:
        return "refused" in self.result

    @property
    def crashed(self) -> bool:
        return "crashed" in self.result


def _integrity(sent: int | None, counts: dict, logged: int) -> list[str]:
    out = list(counts["problems"])
    if sent is not None and sent != counts["received"]:
        out.append(f"the learner's asker sent {sent} queries, the oracle process received "
                   f"{counts['received']}")
    if counts["received"] != counts["answered"] + len(counts["refused"]):
        out.append(f"the oracle received {counts['received']} queries but answered {counts['answered']} "
                   f"and refused {len(counts['refused'])}")
    if logged != counts["answered"]:
        out.append(f"the oracle answered {counts['answered']} queries but its log holds {logged}")
    return out


class Sandbox:
    """An oracle process and a learner process, connected by a pipe that carries only queries."""

    def __init__(self, hooks: processes.Hooks = (), settings: SandboxSettings = SANDBOX):
        self.hooks = tuple(hooks)
        self.settings = settings
        self.snapshots: dict[tuple[str, int], dict] = {}  # (role, incarnation) -> the probe's last snapshot
        self.hook_errors: list[str] = []
        self.incarnation = 0
        self.sessions = 0  # learning sessions run
        self.queries = 0  # queries answered in them (every log's count)
        self.seconds = 0.0  # wall time spent in them (start of the processes excluded)
        self._procs: list[Any] = []

    # -- processes --------------------------------------------------------------------------------
    def start(self) -> None:
        if multiprocessing.current_process().daemon:
            raise SandboxError("a daemonic process cannot start the sandbox's processes; Dask workers need "
                               "DASK_DISTRIBUTED__WORKER__DAEMON=False (docs/reproduce.md)")
        ctx = multiprocessing.get_context("spawn")
        judge_oracle, oracle_judge = ctx.Pipe()
        judge_learner, learner_judge = ctx.Pipe()
        learner_oracle, oracle_learner = ctx.Pipe()
        self.incarnation += 1
        self._oracle = ctx.Process(target=processes.oracle_main,
                                   args=(oracle_judge, oracle_learner, self.hooks),
                                   daemon=True, name="proofs_check-oracle")
        self._learner = ctx.Process(target=processes.learner_main,
                                    args=(learner_judge, learner_oracle, self.hooks),
                                    daemon=True, name="proofs_check-learner")
        self._oracle.start()
        self._learner.start()
        for conn in (oracle_judge, oracle_learner, learner_judge, learner_oracle):
            conn.close()  # the children hold their ends
        self.to_oracle, self.to_learner = judge_oracle, judge_learner
        self._procs = [self._oracle, self._learner]
        for conn in (self.to_oracle, self.to_learner):
            reply = self._receive(conn, self.settings.start_timeout)
            if isinstance(reply, str) or reply[0] is not Tag.READY:
                self.stop()
                raise SandboxError(f"a sandbox process did not start: {reply}")
            if reply[1]:
                self.hook_errors.append(reply[1])

    def stop(self) -> None:
        for conn in (getattr(self, "to_oracle", None), getattr(self, "to_learner", None)):
            if conn is not None:
                try:
                    conn.send((Tag.STOP,))
                except (OSError, ValueError):
                    pass
                conn.close()
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
        self._procs = []
        self.to_oracle = self.to_learner = None

    def _alive(self) -> bool:
        return bool(self._procs) and all(p.is_alive() for p in self._procs)

    @staticmethod
    def _receive(conn: Any, timeout: float) -> tuple | str:
        """The next message on ``conn``; ``"died"`` if the other end is gone, ``"silent"`` if it sent
        nothing for ``timeout`` s."""
        try:
            if not conn.poll(timeout):
                return "silent"
            return conn.recv()
        except (EOFError, OSError):
            return "died"

    def _oracle_call(self, message: tuple) -> tuple:
        try:
            self.to_oracle.send(message)
        except (OSError, ValueError) as exc:
            raise SandboxError(f"the oracle process is gone: {exc}") from None
        reply = self._receive(self.to_oracle, self.settings.oracle_timeout)
        if isinstance(reply, str):
            self.stop()
            raise SandboxError("the oracle process died or did not reply")
        if reply[0] is Tag.FAILED:
            raise SandboxError(reply[1])
        return reply

    # -- sessions ---------------------------------------------------------------------------------
    def learn(self, recipe: Recipe, job: Job) -> Seen:
        """Load ``recipe`` into the oracle process, run ``job`` in the learner process, then reveal."""
        if not self._alive():
            self.stop()
            self.start()
        start = time.perf_counter()
        self._oracle_call((Tag.LOAD, recipe))
        self.sessions += 1
        self.to_learner.send((Tag.LEARN, job))
        reply = self._receive(self.to_learner, self.settings.session_timeout)
        sent = None
        if isinstance(reply, str) or reply[0] is not Tag.RESULT:
            result = {"crashed": f"the learner did not return within {self.settings.session_timeout} s"
                      if reply == "silent" else "the learner process died"}
        else:
            _, result, sent, snapshot = reply
            self._keep("learner", snapshot)
        _, truth, queries, counts, snapshot = self._oracle_call((Tag.REVEAL,))
        truth = pickle.loads(truth)
        self._keep("oracle", snapshot)
        if isinstance(reply, str):
            self.stop()  # a dead or hanging learner: both processes start afresh for the next session
        log = QueryLog(list(queries))
        seconds = time.perf_counter() - start
        self.queries += log.count
        self.seconds += seconds
        return Seen(result, truth, log, _integrity(sent, counts, log.count), list(counts["refused"]), seconds)

    def build(self, recipe: Recipe) -> Any:
        """The model of ``recipe``, built in the oracle process and revealed at once (no learner)."""
        if not self._alive():
            self.stop()
            self.start()
        self._oracle_call((Tag.LOAD, recipe))
        _, truth, _, _, snapshot = self._oracle_call((Tag.REVEAL,))
        self._keep("oracle", snapshot)
        return pickle.loads(truth)

    def _keep(self, role: str, snapshot: dict | None) -> None:
        if snapshot is not None:
            self.snapshots[(role, self.incarnation)] = snapshot


class _Shared:
    """The sandbox of this process: started on first use, stopped at exit; a forked child (a pool's
    worker) starts its own."""

    def __init__(self) -> None:
        self.box: Sandbox | None = None
        self.pid = 0
        self.hooks: processes.Hooks = ()

    def get(self) -> Sandbox:
        if self.box is None or self.pid != os.getpid():
            self.box, self.pid = Sandbox(self.hooks), os.getpid()
        return self.box

    def stop(self) -> None:
        if self.box is not None and self.pid == os.getpid():
            self.box.stop()
        self.box = None


_SHARED = _Shared()
atexit.register(_SHARED.stop)


def current() -> Sandbox:
    """This process's sandbox (started on first use)."""
    return _SHARED.get()


def use_hooks(hooks: processes.Hooks) -> Sandbox:
    """Start this process's sandboxes with ``hooks`` from now on (the self-test plants faults so)."""
    _SHARED.stop()
    _SHARED.hooks = tuple(hooks)
    return _SHARED.get()
