"""The sandbox: the model and its log in one process, the learner in another, and what the learner sees.

A learner that walks ``gc.get_objects()``, every frame (``sys._current_frames``,
``f_back``, ``f_locals``), every closure and every bound method's ``__self__``
finds nothing of the model or its log while it learns through the sandbox; the
same walk finds both when the model and its log live in the learner's process
(the control, so the walk has power). A learner that misuses its pipe, dies or
hangs is reported, and the next session starts afresh.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from exactlearn import MultiHeadAttention
from proofs_check import cheats, sandbox
from proofs_check.faults import Probe
from proofs_check.instances import exact_problems, fresh_sequences
from proofs_check.learners import Job, LearnerKind
from proofs_check.oracles import model_oracle
from proofs_check.sandbox import Recipe, Sandbox, SandboxError, SandboxSettings
from proofs_check.wire import Role

RECIPE = Recipe("proofs_check.instances:random_model", (2, 2, 3))


def _job(entry: str | None = None, **options) -> Job:
    return Job(LearnerKind.EXACT, 2, {"heads": 2, "seed": 1, **options}, entry=entry)


@pytest.fixture(scope="module")
def box():
    box = Sandbox()
    box.start()
    yield box
    box.stop()


def test_a_session_reveals_the_truth_and_the_log_after_the_learner(box):
    seen = box.learn(RECIPE, _job())
    assert seen.problems == [] and not seen.refused and not seen.crashed
    assert seen.truth == MultiHeadAttention.random(2, 2, seed=3)  # built in the oracle process
    assert seen.result["queries"] == seen.log.count == 4 * 2 * 4 - 2 * 2 + 1
    assert seen.result["max_length"] == seen.log.max_length == 5
    assert exact_problems(seen.result["model"], seen.truth, fresh_sequences("sandbox", 2, 7)) == []


def test_the_learner_finds_no_model_and_no_log_while_it_learns(box):
    seen = box.learn(RECIPE, _job("proofs_check.cheats:scanning_learner"))
    found = seen.result["extra"]
    assert found["objects walked"] > 10_000  # the walk covers the process
    assert found["answering like the oracle"] == 0 and found["models"] == 0
    assert found["logs"] == 0 and found["sandbox objects"] == []
    assert seen.problems == [] and seen.log.count == seen.result["queries"]


def test_the_same_walk_finds_model_and_log_in_one_process():
    """The control: with the model and its log in the learner's process the walk finds both."""
    truth = MultiHeadAttention.random(2, 2, seed=3)
    oracle, log = model_oracle(truth)
    found = cheats.scanning_learner(oracle, 2, heads=2, seed=1).proofs_check_extra
    assert found["answering like the oracle"] >= 1 and found["logs"] >= 1
    del truth, oracle, log


def test_an_introspecting_learner_is_right_only_in_one_process(monkeypatch):
    """The introspecting cheat returns the truth when it can reach it, its wrong model when it cannot."""
    from proofs_check import library

    monkeypatch.setattr(library, "learn", library.learn)
    probe = Probe()
    cheats.introspecting(probe, Role.LEARNER)
    truth = MultiHeadAttention.random(2, 2, seed=3)
    oracle, _ = model_oracle(truth)
    rec = library.learn(oracle, 2, heads=2, seed=1)
    assert rec.model == truth.canonical() and probe.effects["truth found"] == 1

    hooked = Sandbox(hooks=[("proofs_check.faults:install", ("introspecting-learner",))])
    try:
        seen = hooked.learn(RECIPE, _job())
    finally:
        hooked.stop()
    effects = [snap["effects"] for snap in hooked.snapshots.values()]
    assert {"wrong learner searched for the truth": 1} in effects
    assert exact_problems(seen.result["model"], seen.truth, fresh_sequences("peek", 2, 7))


def test_a_log_eraser_erases_only_a_log_in_its_own_process(monkeypatch):
    """The control of the log-eraser fault: with the log in the learner's process its probes vanish from
    the log (so counts agree); through the sandbox they stay (tests/test_proofs_check_selftest.py)."""
    from proofs_check import library

    monkeypatch.setattr(library, "learn", library.learn)
    probe = Probe()
    cheats.log_eraser(probe, Role.LEARNER)
    oracle, log = model_oracle(MultiHeadAttention.random(2, 2, seed=3))
    rec = library.learn(oracle, 2, heads=2, seed=1)
    assert probe.effects["uncounted probes asked"] == 1 and probe.effects["probes erased from a log"] >= 1
    assert log.count == rec.queries  # the five probes were asked, and erased


def rogue_learner(oracle, d, **kwargs):
    """Sends a message that is not a query down the oracle's pipe, then learns."""
    from exactlearn import learn

    conn = next(c.cell_contents for c in oracle.__closure__ if hasattr(c.cell_contents, "send"))
    conn.send(("reveal",))
    conn.recv()
    return learn(oracle, d, **kwargs)


def argv_learner(oracle, d, **kwargs):
    from exactlearn import learn

    rec = learn(oracle, d, **kwargs)
    rec.proofs_check_extra = {"argv": list(sys.argv), "parent seed visible": "--seed" in " ".join(sys.argv)}
    return rec


def dying_learner(oracle, d, **kwargs):
    oracle([(1, 0)])
    os._exit(3)


def hanging_learner(oracle, d, **kwargs):
    time.sleep(60)


def test_a_message_that_is_not_a_query_is_a_problem(box):
    seen = box.learn(RECIPE, _job("tests.test_proofs_check_sandbox:rogue_learner"))
    assert any("not a query" in p for p in seen.problems)


def test_the_learner_never_sees_the_judges_command_line(box, monkeypatch):
    fresh = Sandbox()
    monkeypatch.setattr(sys, "argv", [sys.argv[0], "--seed", "7"])
    try:
        seen = fresh.learn(RECIPE, _job("tests.test_proofs_check_sandbox:argv_learner"))
    finally:
        fresh.stop()
    assert seen.result["extra"]["parent seed visible"] is False and len(seen.result["extra"]["argv"]) == 1


@pytest.mark.slow  # waits out a hanging learner: about 12 s
def test_a_dying_or_hanging_learner_is_reported_and_replaced():
    box = Sandbox(settings=SandboxSettings(session_timeout=5.0))
    try:
        died = box.learn(RECIPE, _job("tests.test_proofs_check_sandbox:dying_learner"))
        assert died.crashed and "died" in died.result["crashed"] and died.log.count == 1
        hung = box.learn(RECIPE, _job("tests.test_proofs_check_sandbox:hanging_learner"))
        assert hung.crashed and "did not return" in hung.result["crashed"]
        after = box.learn(RECIPE, _job())
        assert after.problems == [] and not after.crashed and box.incarnation == 3
    finally:
        box.stop()


def test_a_recipe_that_fails_is_a_sandbox_error(box):
    with pytest.raises(SandboxError, match="recipe"):
        box.learn(Recipe("proofs_check.instances:no_such_builder"), _job())
    assert box.learn(RECIPE, _job()).problems == []  # the oracle process serves on


def test_integrity_counts_must_agree():
    counts = {"received": 5, "answered": 5, "refused": [], "problems": []}
    assert sandbox._integrity(5, counts, 5) == []
    assert sandbox._integrity(6, counts, 5) == ["the learner's asker sent 6 queries, the oracle process "
                                                "received 5"]
    assert sandbox._integrity(5, counts, 4) == ["the oracle answered 5 queries but its log holds 4"]
