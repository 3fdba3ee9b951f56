"""Run many independent instances: in-process, on a local process pool, or on Dask.

One small executor interface for grids of ``(d, H, seed)`` instances
(proofs_check, benchmarks). No home-made scheduler: local parallelism is
:class:`concurrent.futures.ProcessPoolExecutor`; a cluster is a Dask
``distributed`` scheduler (``pip install "exactlearn[dask]"``).

>>> map_tasks(abs, [-1, 2, -3])
[1, 2, 3]
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Iterable, Sequence

from .errors import InvalidArgumentError

__all__ = ["map_tasks"]


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
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidArgumentError(f"workers must be a positive integer, got {workers!r}")
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
            "a Dask scheduler was given but dask.distributed is not installed: pip install \"exactlearn[dask]\""
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
