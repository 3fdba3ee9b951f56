"""Sweeps give identical results in one process, on a local process pool, and on Dask.

A grid of (d, H, seed) recoveries goes through :func:`exactlearn.sweep.map_tasks`
three ways; the recovered canonical models and every measured count (queries
from the oracle's log, longest query, redraws, planned and formula counts) must
be equal. Timings and memory are measured per instance and naturally differ, so
they are left out of the comparison.
"""

from __future__ import annotations

import pytest

from exactlearn.errors import InvalidArgumentError
from exactlearn.sweep import map_tasks, recover_instance

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
