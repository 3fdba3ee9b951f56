"""Run many independent instances: in-process, on a local process pool, or on Dask.

One small executor interface for grids of ``(d, H, seed)`` instances
(proofs_check, benchmarks). No home-made scheduler: local parallelism is
:class:`concurrent.futures.ProcessPoolExecutor`; a cluster is a Dask
``distributed`` scheduler (``pip install "exactlearn[dask]"``).

>>> map_tasks(abs, [-1, 2, -3])
[1, 2, 3]
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from .errors import InvalidArgumentError
from .validate import integer

__all__ = ["map_tasks", "recover_instance"]


def map_tasks(
    fn: Callable[[Any], Any],
    tasks: Iterable[Any],
    *,
    workers: int = 1,
    scheduler: Any = None,
    on_result: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """``[fn(t) for t in tasks]``, possibly in parallel; results are in task order.

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
    items: Sequence[Any] = list(tasks)
    integer("workers", workers)
    results: list[Any] = []
    if scheduler is not None:
        results = _dask_map(fn, items, scheduler, on_result)
    elif workers == 1 or len(items) <= 1:
        for i, item in enumerate(items):
            results.append(fn(item))
            if on_result is not None:
                on_result(i, results[-1])
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for i, result in enumerate(pool.map(fn, items)):
                results.append(result)
                if on_result is not None:
                    on_result(i, result)
    return results


def _dask_map(fn, items, scheduler, on_result) -> list[Any]:
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - depends on the environment
        raise InvalidArgumentError(
            "a Dask scheduler was given but dask.distributed is not installed: "
            'pip install "exactlearn[dask]"'
        ) from None
    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        futures = client.map(fn, items, pure=False)
        results = []
        for i, future in enumerate(futures):
            results.append(future.result())
            if on_result is not None:
                on_result(i, results[-1])
        return results
    finally:
        if own:
            client.close()


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
