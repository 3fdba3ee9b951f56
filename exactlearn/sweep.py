"""Run many independent instances: in-process, on a local process pool, or on Dask.

One small executor interface for grids of ``(d, H, seed)`` instances
(proofs_check, benchmarks). No home-made scheduler: local parallelism is
:class:`concurrent.futures.ProcessPoolExecutor`; a cluster is a Dask
``distributed`` scheduler (``pip install "exactlearn[dask]"``).

A task that raises, a worker process that dies, a function that cannot be sent
to other processes and a scheduler that cannot be reached are each a
:class:`~exactlearn.SweepError` that says what to change and carries the
results of the tasks that finished (``err.results``, ``err.failures``).

>>> map_tasks(abs, [-1, 2, -3])
[1, 2, 3]
"""

from __future__ import annotations

import pickle
import resource
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any
from urllib.parse import urlsplit

from .errors import InvalidArgumentError, SweepError
from .validate import describe, integer

__all__ = ["DASK_CONNECT_SECONDS", "map_tasks", "recover_instance"]

#: Seconds to wait for a Dask scheduler before the sweep fails (a refused connection fails at once).
DASK_CONNECT_SECONDS = 5.0

_Outcome = tuple[int, Any, BaseException | None]  # (index, result, exception)


def map_tasks(
    fn: Callable[[Any], Any],
    tasks: Iterable[Any],
    *,
    workers: int = 1,
    scheduler: Any = None,
    on_result: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """``[fn(t) for t in tasks]``, possibly in parallel; results are in task order.

    The sweep stops at the first task that fails (tasks already running on other
    workers are finished) and raises :class:`~exactlearn.SweepError` with every
    finished result.

    Parameters
    ----------
    fn:
        A picklable (module-level) function of one argument.
    workers:
        ``1`` runs in this process; ``N > 1`` uses a local pool of ``N`` processes.
    scheduler:
        A Dask scheduler address (``"tcp://host:port"``) or a
        ``distributed.Client``; overrides ``workers``.
    on_result:
        Called as ``on_result(index, result)`` as results arrive (in task order).
    """
    if not callable(fn):
        raise InvalidArgumentError(f"fn must be callable, got {type(fn).__name__}")
    items: Sequence[Any] = list(tasks)
    integer("workers", workers)
    results: list[Any] = [None] * len(items)
    if scheduler is not None:
        _check_picklable(fn, items, "on a Dask cluster")
        outcomes = _dask_outcomes(fn, items, scheduler)
    elif workers == 1 or len(items) <= 1:
        outcomes = _serial_outcomes(fn, items)
    else:
        _check_picklable(fn, items, f"on {workers} worker processes")
        outcomes = _pool_outcomes(fn, items, workers)
    failures: dict[int, BaseException] = {}
    finished = 0
    for index, result, error in outcomes:
        if error is not None:
            failures[index] = error
            continue
        results[index] = result
        finished += 1
        if on_result is not None and not failures:  # after a failure results are kept, not reported
            on_result(index, result)
    if failures:
        raise _failed(fn, items, results, failures, finished)
    return results


def _serial_outcomes(fn, items) -> Iterator[_Outcome]:
    for i, item in enumerate(items):
        try:
            result = fn(item)
        except Exception as exc:  # noqa: BLE001 - reported with the finished results (SweepError)
            yield i, None, exc
            return
        yield i, result, None


def _pool_outcomes(fn, items, workers: int) -> Iterator[_Outcome]:
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(fn, item) for item in items]
        for i, future in enumerate(futures):
            error = future.exception()
            if error is None:
                yield i, future.result(), None
                continue
            for f in futures[i + 1:]:
                f.cancel()
            yield i, None, error
            pool.shutdown(wait=True)  # tasks already running finish: their results are kept
            yield from _finished(futures[i + 1:], i + 1)
            return


def _finished(futures: list[Future], first: int) -> Iterator[_Outcome]:
    """The results of futures that completed normally (after the sweep failed)."""
    for j, f in enumerate(futures, start=first):
        if f.done() and not f.cancelled() and f.exception() is None:
            yield j, f.result(), None


def _check_picklable(fn, items, where: str) -> None:
    """Refuse, before starting, a function or task that cannot be sent to other processes."""
    try:
        pickle.dumps(fn)
    except Exception as exc:  # noqa: BLE001 - pickling raises PicklingError, AttributeError, TypeError
        raise SweepError(
            f"cannot run {_name(fn)} {where}: it cannot be pickled ({type(exc).__name__}: "
            f"{str(exc)[:120]}); define it at module level (not a lambda or a nested function), "
            f"or run with workers=1") from exc
    for i, item in enumerate(items):
        try:
            pickle.dumps(item)
        except Exception as exc:  # noqa: BLE001
            raise SweepError(f"cannot send task {i} ({describe(item)}) {where}: it cannot be pickled "
                             f"({type(exc).__name__}); pass plain data (dicts, numbers, strings) as tasks, "
                             f"or run with workers=1") from exc


def _name(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None)
    return f"{getattr(fn, '__module__', '?')}.{name}" if isinstance(name, str) else describe(fn)


def _failed(fn, items, results: list, failures: dict[int, BaseException], finished: int) -> SweepError:
    """The SweepError of a failed sweep: what failed, what finished, what to change."""
    first = min(failures)
    cause = failures[first]
    kept = f"{finished} of {len(items)} tasks finished (their results are in err.results)"
    if isinstance(cause, BrokenProcessPool):
        message = (f"a worker process died (killed by a signal, or out of memory) before task {first} "
                   f"({describe(items[first])}) finished; {kept}. Run the unfinished tasks with "
                   f"workers=1 to see which one fails, or give each worker more memory (fewer workers)")
    else:
        message = (f"task {first} ({describe(items[first])}) raised {type(cause).__name__}: "
                   f"{str(cause)[:300]}; {kept}. Fix the task or the function {_name(fn)}")
    error = SweepError(message, results=results, failures=failures)
    error.__cause__ = cause
    return error


def _dask_outcomes(fn, items, scheduler) -> Iterator[_Outcome]:
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - depends on the environment
        raise SweepError(
            "a Dask scheduler was given but dask.distributed is not installed: "
            'pip install "exactlearn[dask]", or run with workers=N'
        ) from None
    own = not isinstance(scheduler, Client)
    client = _connect(Client, scheduler) if own else scheduler
    try:
        futures = client.map(fn, items, pure=False)
        for i, future in enumerate(futures):
            try:
                result = future.result()
            except Exception as exc:  # noqa: BLE001 - the task's error, or a worker that died
                for f in futures[i + 1:]:
                    f.cancel()
                yield i, None, exc
                return
            yield i, result, None
    finally:
        if own:
            client.close()


def _connect(client_class, address: Any):
    """A Client of the scheduler at ``address``, or a SweepError within DASK_CONNECT_SECONDS."""
    if not isinstance(address, str):
        raise SweepError(f"scheduler must be an address such as 'tcp://host:8786' or a "
                         f"distributed.Client, got {type(address).__name__}")
    remedy = ("start one (dask scheduler) or check the address; or run without a scheduler "
              "(workers=N)")
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme == "tcp" and parts.hostname:
        try:
            address_pair = (parts.hostname, parts.port or 8786)
            socket.create_connection(address_pair, timeout=DASK_CONNECT_SECONDS).close()
        except (OSError, ValueError) as exc:
            raise SweepError(f"cannot reach the Dask scheduler at {address}: "
                             f"{getattr(exc, 'strerror', None) or exc}; {remedy}") from None
    try:
        return client_class(address, timeout=DASK_CONNECT_SECONDS)
    except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, or whatever a non-Dask peer causes
        raise SweepError(f"cannot connect to the Dask scheduler at {address} within "
                         f"{DASK_CONNECT_SECONDS:g} s ({type(exc).__name__}: {str(exc)[:120]}); "
                         f"{remedy}") from None


def _reset_peak_rss() -> bool:
    """Reset this process's peak resident set size (Linux ``clear_refs``); False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _peak_rss_bytes(reset_worked: bool) -> tuple[int, str]:
    """Peak RSS since the last reset (``VmHWM``), else the process's lifetime peak."""
    if reset_worked:
        try:
            with open("/proc/self/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024, "instance"
        except OSError:
            pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "process"


def recover_instance(task: dict) -> dict:
    """Build a random model, learn it through a logged oracle, and report what was measured.

    ``task`` holds ``d``, ``heads`` and ``seed`` (the model is
    ``MultiHeadAttention.random(d, heads, seed)``, the learner uses the same
    seed), optionally ``schedule``, ``heads_bound`` (learn with the bound
    instead of the known ``H``), ``token_bound`` and ``model`` (a model as a
    JSON dict, used instead of a random one). Module-level and picklable, so
    :func:`map_tasks` can ship it to processes or a Dask cluster; timings and
    peak memory are measured here, inside the worker.

    Returns a JSON-ready dict: the task, ``exact`` (canonical forms equal),
    ``model`` (the recovered canonical model as a dict), ``queries`` and
    ``max_length`` from the oracle's own log, the learner's ``planned`` and
    ``formula`` counts, ``redraws``, ``seconds`` (wall) and ``cpu_seconds``
    (CPU time of the running thread: FLINT is single-threaded, and a Dask
    worker's own threads are not counted) for the whole run and inside the
    oracle, and ``peak_rss``.

    >>> r = recover_instance({"d": 2, "heads": 1, "seed": 0})
    >>> r["exact"], r["queries"], r["formula"]
    (True, 15, 15)
    """
    from .learn import DEFAULT_TOKEN_BOUND, learn
    from .model import MultiHeadAttention
    from .oracle import Oracle

    missing = [key for key in ("d", "heads", "seed") if not isinstance(task, dict) or key not in task]
    if missing:
        raise InvalidArgumentError(f"a recover_instance task is a dict with the keys 'd', 'heads' and 'seed' "
                                   f"(optionally 'schedule', 'heads_bound', 'token_bound', 'model'); "
                                   f"{describe(task)} lacks {', '.join(repr(k) for k in missing)}")
    d, heads, seed = task["d"], task["heads"], task["seed"]
    schedule = task.get("schedule", "paper")
    token_bound = task.get("token_bound") or DEFAULT_TOKEN_BOUND
    truth = (MultiHeadAttention.from_dict(task["model"]) if task.get("model") is not None
             else MultiHeadAttention.random(d, heads, seed=seed))

    oracle = Oracle(truth)
    reset = _reset_peak_rss()
    wall, cpu = time.perf_counter(), time.thread_time()
    kwargs: dict[str, Any] = (
        {"heads_bound": task["heads_bound"]} if task.get("heads_bound") else {"heads": heads}
    )
    rec = learn(oracle, d, seed=seed, schedule=schedule, token_bound=token_bound, **kwargs)
    cpu = time.thread_time() - cpu
    wall = time.perf_counter() - wall
    peak, peak_scope = _peak_rss_bytes(reset)
    recovered = rec.model
    return {
        "task": {k: v for k, v in task.items() if k != "model"},
        "exact": recovered == truth.canonical(),
        "model": recovered.to_dict(),
        "num_heads": rec.num_heads,
        "queries": oracle.queries,
        "max_length": oracle.max_length,
        "planned": rec.planned,
        "formula": rec.formula,
        "lean_formula": rec.lean_formula,
        "redraws": rec.redraws,
        "seconds": wall,
        "oracle_seconds": oracle.seconds,
        "cpu_seconds": cpu,
        "oracle_cpu_seconds": oracle.cpu_seconds,
        "peak_rss": peak,
        "peak_rss_scope": peak_scope,
    }
