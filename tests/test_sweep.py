"""Sweeps give identical results in one process, on a local process pool, and on Dask.

A grid of (d, H, seed) recoveries goes through :func:`exactlearn.sweep.map_tasks`
three ways; the recovered canonical models and every measured count (queries
from the oracle's log, longest query, redraws, planned and formula counts) must
be equal. Timings and memory are measured per instance and naturally differ, so
they are left out of the comparison.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from concurrent.futures.process import BrokenProcessPool

import pytest

from exactlearn.errors import InvalidArgumentError, SweepError
from exactlearn.sweep import DASK_CONNECT_SECONDS, map_tasks, recover_instance

GRID = [
    {"d": d, "heads": h, "seed": seed, "schedule": schedule}
    for d, h, seed, schedule in [
        (1, 1, 0, "paper"),
        (2, 1, 1, "paper"),
        (2, 2, 0, "lean"),
        (3, 2, 2, "paper"),
        (2, 3, 3, "lean"),
        (3, 1, 4, "lean"),
    ]
] + [{"d": 2, "heads": 2, "seed": 5, "heads_bound": 3}]

MEASURED = ("task", "exact", "model", "num_heads", "queries", "max_length", "planned", "formula", "redraws")


def _comparable(results):
    return [{key: r[key] for key in MEASURED} for r in results]


@pytest.fixture(scope="module")
def serial():
    return _comparable(map_tasks(recover_instance, GRID, workers=1))


def test_serial_sweep_is_exact_and_counts_match(serial):
    for r in serial:
        assert r["exact"], r["task"]
        if r["redraws"] == 0:
            assert r["queries"] == r["planned"], r["task"]
        if r["task"].get("schedule", "paper") == "paper" and not r["task"].get("heads_bound"):
            assert r["planned"] == r["formula"]


def test_process_pool_gives_identical_results(serial):
    assert _comparable(map_tasks(recover_instance, GRID, workers=2)) == serial


def test_results_arrive_in_task_order(serial):
    seen = []
    map_tasks(recover_instance, GRID[:3], workers=2, on_result=lambda i, r: seen.append((i, r["task"])))
    assert seen == [(i, GRID[i]) for i in range(3)]


def test_local_dask_cluster_gives_identical_results(serial):
    distributed = pytest.importorskip("distributed")
    # in-process workers, but a real tcp:// scheduler address as `--scheduler` would pass
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tcp://")
        # by address ...
        by_address = map_tasks(recover_instance, GRID, scheduler=cluster.scheduler_address)
        # ... and with a Client the caller already holds
        with distributed.Client(cluster) as client:
            by_client = map_tasks(recover_instance, GRID, scheduler=client)
    assert _comparable(by_address) == serial
    assert _comparable(by_client) == serial


def test_bad_worker_counts_are_refused():
    with pytest.raises(InvalidArgumentError):
        map_tasks(abs, [1], workers=0)


# -- failures: one named error, what to change, the finished results kept (issue 25) ----------
def _tenfold_dying_at_two(n):
    if n == 2:
        time.sleep(1)  # tasks 0 and 1 finish first (a dying worker breaks the tasks still running)
        os.kill(os.getpid(), signal.SIGKILL)  # a worker that dies (a signal, the OOM killer)
    return 10 * n


def test_a_task_without_d_names_the_key_and_keeps_the_finished_results():
    tasks = [{"d": 1, "heads": 1, "seed": 0}, {"heads": 1, "seed": 0}, {"d": 1, "heads": 1, "seed": 1}]
    with pytest.raises(SweepError, match=r"task 1 .* lacks 'd'; 1 of 3 tasks finished") as info:
        map_tasks(recover_instance, tasks)
    err = info.value
    assert err.results[0]["exact"] and err.results[1:] == [None, None]
    assert isinstance(err.failures[1], InvalidArgumentError) and err.__cause__ is err.failures[1]


def test_a_lambda_is_refused_before_any_worker_starts():
    start = time.perf_counter()
    with pytest.raises(SweepError, match="cannot be pickled .* define it at module level .* workers=1"):
        map_tasks(lambda t: t, [1, 2], workers=2)
    with pytest.raises(SweepError, match=r"cannot send task 1 .* cannot be pickled"):
        map_tasks(abs, [1, threading.Lock()], workers=2)
    assert time.perf_counter() - start < 5
    assert map_tasks(lambda t: t + 1, [1, 2]) == [2, 3]  # in this process a lambda is fine


def test_a_worker_that_dies_keeps_the_results_that_finished():
    seen = []
    with pytest.raises(SweepError, match="a worker process died") as info:
        map_tasks(_tenfold_dying_at_two, [0, 1, 2, 3], workers=2, on_result=lambda i, r: seen.append(i))
    err = info.value
    assert err.results[:2] == [0, 10] and err.results[2] is None and seen == [0, 1]
    assert isinstance(err.failures[2], BrokenProcessPool)


def test_an_unreachable_scheduler_fails_fast():
    pytest.importorskip("distributed")
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.perf_counter()
    with pytest.raises(SweepError, match=rf"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}.*workers=N"):
        map_tasks(abs, [1], scheduler=f"tcp://127.0.0.1:{port}")
    assert time.perf_counter() - start < DASK_CONNECT_SECONDS  # not the 30 s of dask's default
    with pytest.raises(SweepError, match="scheduler must be an address"):
        map_tasks(abs, [1], scheduler=8786)
