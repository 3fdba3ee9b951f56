"""Style and types: ruff and mypy pass on the tree (configured in pyproject.toml), and the
house rules of exactlearn/ hold (docs/algorithm.md's rooms stay small and honest):

* no function over ``FUNCTION_LINES`` lines and no class over ``CLASS_LINES`` (docstrings not
  counted);
* no ``# type: ignore`` on a line about query counts or schedule names (counts reach errors
  through ``ExactLearnError.with_counts``, schedules are the ``Schedule`` enum);
* no module reads a field attribute outside the ``Field`` protocol (``getattr(self.field``)
  or passes a fitted value at infinity beside its ``CopyTerms`` (``fitted_infinity``).

The import graph has no cycle: ``tests/test_imports.py``. Each check here is run once on a
planted violation to show that it can fail.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "exactlearn"

#: the longest function and the longest class allowed in exactlearn/ (lines, docstrings excluded)
FUNCTION_LINES = 60
CLASS_LINES = 200


def run(tool: str, *args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec(tool) is None:
        pytest.skip(f"{tool} is not installed (pip install -e '.[test]')")
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_ruff_finds_nothing():
    done = run("ruff", "check", "--no-cache", "--output-format", "concise",
               "exactlearn", "proofs_check", "tests", "benchmarks")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow  # type-checks the whole package: about 10 s of CPU
def test_mypy_finds_nothing():
    done = run("mypy", "exactlearn")
    assert done.returncode == 0, done.stdout + done.stderr


# -- sizes ------------------------------------------------------------------------------


def _docstring_lines(node: ast.AST) -> int:
    body = getattr(node, "body", None)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not body:
        return 0
    first = body[0]
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return 0
    return (first.end_lineno or first.lineno) - first.lineno + 1


def code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int:
    """The lines from ``def``/``class`` to the end, less every docstring in them (its own and
    those of the methods and functions inside)."""
    total = (node.end_lineno or node.lineno) - node.lineno + 1
    return total - sum(_docstring_lines(inner) for inner in ast.walk(node))


def oversized(root: Path) -> list[str]:
    """``path:line name (N lines)`` for every function over FUNCTION_LINES and class over CLASS_LINES."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                limit = FUNCTION_LINES
            elif isinstance(node, ast.ClassDef):
                limit = CLASS_LINES
            else:
                continue
            if (size := code_lines(node)) > limit:
                found.append(f"{path.relative_to(root.parent).as_posix()}:{node.lineno} {node.name} "
                             f"({size} lines, limit {limit})")
    return found


def test_no_function_or_class_is_too_long():
    assert oversized(PACKAGE) == []


def test_a_long_function_or_class_is_found(tmp_path):
    package = tmp_path / "exactlearn"
    package.mkdir()
    doc = '    """' + "\n".join(["A docstring."] * 30) + '"""\n'
    short = "def f():\n" + doc + "    x = 0\n" * (FUNCTION_LINES - 1)     # 60 lines with its def
    (package / "ok.py").write_text(short)
    assert oversized(package) == []                                       # the docstring is not counted
    (package / "long.py").write_text(short + "    x = 0\n")
    methods = "".join(f"    def m{i}(self):\n" + doc.replace("    ", "        ", 1) + "        return 1\n"
                      for i in range(CLASS_LINES // 2))
    (package / "big.py").write_text("class C:\n" + methods)
    assert oversized(package) == ["exactlearn/big.py:1 C (201 lines, limit 200)",
                                  "exactlearn/long.py:1 f (61 lines, limit 60)"]


# -- type: ignore ---------------------------------------------------------------------------

#: words of a line that is about query counts or schedule names
COUNT_WORDS = re.compile(r"\b(queries|query_count|max_length|redraws?|redraw_reasons|planned|counts?|"
                         r"steps?|formula\w*|schedule|Schedule\w*|paper|lean|budget)\b")


def ignores(root: Path) -> list[tuple[str, str]]:
    """``(path:line, the line)`` for every ``# type: ignore`` comment below ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and re.match(r"#\s*type:\s*ignore", token.string):
                row = token.start[0]
                found.append((f"{path.relative_to(root.parent).as_posix()}:{row}", lines[row - 1]))
    return found


def ignores_about_counts(root: Path) -> list[str]:
    """The ``# type: ignore`` lines whose code names a count or a schedule."""
    return [f"{where}: {line.strip()}" for where, line in ignores(root)
            if COUNT_WORDS.search(line.split("#", 1)[0])]


def test_no_type_ignore_for_counts_or_schedule_names():
    assert ignores(PACKAGE), "the scan finds the package's other type: ignore comments"
    assert ignores_about_counts(PACKAGE) == []


def test_a_type_ignore_on_counts_is_found(tmp_path):
    package = tmp_path / "exactlearn"
    package.mkdir()
    (package / "ok.py").write_text("import x  # type: ignore[import]\n"
                                   "d = 1  # counts: type: ignore elsewhere\n")
    assert ignores_about_counts(package) == []
    (package / "bad.py").write_text(
        "def f(exc):\n"
        "    exc.queries = 3  # type: ignore[attr-defined]\n"
        "    planned = exc.schedule.count  # type: ignore\n")
    assert ignores_about_counts(package) == [
        "exactlearn/bad.py:2: exc.queries = 3  # type: ignore[attr-defined]",
        "exactlearn/bad.py:3: planned = exc.schedule.count  # type: ignore"]


# -- the field seam -------------------------------------------------------------------------

#: what the field seam forbids: reading an attribute of a field outside the protocol, and a fitted
#: value at infinity kept apart from its CopyTerms
SIDE_CHANNELS = ("fitted_infinity", "getattr(self.field")


def side_channels(root: Path) -> list[str]:
    """``path:line`` for every occurrence of a forbidden text in a file below ``root``."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in {".py", ".md", ".txt"}):
        for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.relative_to(root.parent).as_posix()}:{row} {text}"
                      for text in SIDE_CHANNELS if text in line]
    return found


def test_no_field_side_channels():
    assert side_channels(PACKAGE) == []


def test_a_field_side_channel_is_found(tmp_path):
    package = tmp_path / "exactlearn"
    package.mkdir()
    (package / "ok.py").write_text("def link(self):\n    return self.field.link_terms()\n")
    assert side_channels(package) == []
    (package / "bad.py").write_text("def link(self):\n    f = getattr(self.field, 'link_terms', None)\n"
                                    "    self.fitted_infinity = 0\n")
    assert side_channels(package) == ["exactlearn/bad.py:2 getattr(self.field",
                                      "exactlearn/bad.py:3 fitted_infinity"]
