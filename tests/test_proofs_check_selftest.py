"""The self-test: every planted fault takes effect (in whichever process) and is caught; broken plants are
reported as broken, never as caught."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import exactlearn
from proofs_check import selftest
from proofs_check.faults import FAULTS, SELF_TEST_CHECKS, find_fault
from proofs_check.probe import Probe, merge, patch
from proofs_check.wire import Role

ROOT = Path(__file__).resolve().parents[1]
#: the faults of issue 22 (an outside review's round of planted faults), each in its own form
ROUND_TWO = ("introspecting-learner", "log-eraser", "dropped-crash", "json-verdict-any",
             "self-reported-length", "first-row-canonical", "missing-exceptional-factor", "lean-mislabel",
             "refused-transformers", "dedup-log")
#: the faults of issue 21 (number fields): one in the learner's process, one in the judge's evaluator
NUMBER_FIELDS = ("unit-factor", "field-library-evaluator")


@pytest.fixture(scope="module")
def self_test():
    env = dict(os.environ, COLUMNS="80")
    command = [sys.executable, "-m", "proofs_check", "--self-test"]
    return subprocess.run(command, capture_output=True, text=True, timeout=1800, env=env, cwd=ROOT)


def _row(stdout: str, key: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith(f"│ {key} "))


@pytest.mark.slow  # the whole self-test: about 75 s
def test_self_test_catches_every_planted_fault(self_test):
    assert self_test.returncode == 0, self_test.stdout[-3000:] + self_test.stderr[-3000:]
    assert len(FAULTS) == 28 and set(ROUND_TWO) | set(NUMBER_FIELDS) <= {f.key for f in FAULTS}
    for fault in FAULTS:
        row = _row(self_test.stdout, fault.key)
        assert "caught" in row and not re.search("MISSED|BROKEN|NOT EXERCISED", row), row
    assert self_test.stdout.count("took effect:") == len(FAULTS)
    assert "none (control)" in self_test.stdout and "PASS: the control passes" in self_test.stdout
    for key in ("tf-wrong-line", "tf-uncounted-verify", "tf-unpaired-step1", "tf-oracle-peek",
                "refused-transformers"):
        assert re.search(r"│ 50 +│ caught", _row(self_test.stdout, key)), key
    for key in NUMBER_FIELDS:
        assert re.search(r"│ 21 +│ 21 +│ caught", _row(self_test.stdout, key)), key
    assert max(len(line) for line in self_test.stdout.splitlines()) <= 80


def test_faults_are_planted_where_they_act():
    assert find_fault("first-row-canonical").where == (Role.JUDGE, Role.LEARNER, Role.ORACLE)
    assert find_fault("dedup-log").where == (Role.LEARNER, Role.ORACLE)
    assert find_fault("dropped-crash").where == (Role.JUDGE,)
    assert all(f.expects for f in FAULTS)  # every fault must prove that it took effect


def test_self_test_exits_1_when_a_fault_is_missed(capsys):
    # a real fault, but only a claim that cannot see it runs: wrong matching tokens still end in a refusal
    # when the learner is told too few heads
    unseen = dataclasses.replace(find_fault("spec-matching-tokens"), claims=("6",))
    results = selftest.run_self_test([unseen], parallel=1, control=False)
    assert [r["ok"] for r in results] == [False]
    selftest.render(__import__("rich.console").console.Console(width=80), results)
    assert "MISSED" in capsys.readouterr().out


@pytest.mark.slow  # three plants in subprocesses: about 12 s
def test_self_test_reports_broken_and_unexercised_plants():
    """A plant that cannot be planted (in the learner's process), one that crashes (wrong signature)
    and one whose effect never occurs in the claims run are failures of the self-test, never catches."""
    lenient = find_fault("lenient-bound")
    results = selftest.run_self_test([*SELF_TEST_CHECKS, dataclasses.replace(lenient, claims=("3",))],
                                     parallel=2, control=False)
    verdicts = {r["fault"]: r["verdict"] for r in results}
    assert verdicts == {"stale-target": "BROKEN PLANT", "wrong-signature": "BROKEN PLANT",
                        "lenient-bound": "NOT EXERCISED"}, results
    assert not any(r["ok"] or r["caught by"] for r in results)
    wrong = next(r for r in results if r["fault"] == "wrong-signature")
    assert any("TypeError" in why for why in wrong["why"])
    stale = next(r for r in results if r["fault"] == "stale-target")
    assert any("learner hook failed" in why for why in stale["why"])


def test_probe_counts_effects_and_unexpected_exceptions():
    from exactlearn.errors import InconsistentAnswersError, OracleOutputError

    probe = Probe()

    def refuse():
        raise InconsistentAnswersError("a refusal")

    def crash():
        raise TypeError("a crash")

    def chained():
        try:
            crash()
        except TypeError as exc:
            raise OracleOutputError("the oracle raised") from exc

    for fn, error in ((refuse, InconsistentAnswersError), (crash, TypeError), (chained, OracleOutputError)):
        with pytest.raises(error):
            probe.wrap(fn.__name__, fn)()
    probe.effect("seen")
    assert dict(probe.calls) == {"refuse": 1, "crash": 1, "chained": 1}
    assert [u.split(":")[0] for u in probe.unexpected] == ["crash", "chained"]
    merged = merge([probe.snapshot(), {"calls": {}, "effects": {"seen": 2}, "unexpected": ["x: y"]}])
    assert merged["effects"] == {"seen": 3} and len(merged["unexpected"]) == 3
    with pytest.raises(AttributeError, match="retarget"):
        patch(exactlearn, "no_such_function", None)
