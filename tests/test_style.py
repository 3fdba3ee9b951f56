"""Style and types: ruff and mypy pass on the tree (configured in pyproject.toml)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(tool: str, *args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec(tool) is None:
        pytest.skip(f"{tool} is not installed (pip install -e '.[test]')")
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_ruff_finds_nothing():
    done = run("ruff", "check", "--no-cache", "--output-format", "concise",
               "exactlearn", "proofs_check", "tests", "benchmarks")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow  # type-checks the whole package: about 40 s of CPU
def test_mypy_finds_nothing():
    done = run("mypy", "exactlearn")
    assert done.returncode == 0, done.stdout + done.stderr
