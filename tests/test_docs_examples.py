"""Every code block of README.md and docs/*.md runs, or is checked, in the tests.

* ``python`` blocks are executed (the blocks of one file in one namespace, in a
  temporary directory); ``pycon`` blocks, and ``python`` blocks that start with
  ``>>>``, are run as doctests, so the outputs they show are compared with what
  the code prints.
* ``bash``/``sh``/``console`` blocks: every command is checked. Options of the
  project's own programs (``exactlearn``, ``python -m ...``, ``python
  benchmarks/*.py``) are parsed by the program's own argument parser; the cheap
  ones (:func:`cheap`) are also run and must exit 0. ``pip install`` must name
  existing extras, ``pytest`` existing test files.
* ``text`` and untagged blocks are printed output or usage synopses: every
  ``--option`` a synopsis line names must exist in that program's parser.
* A block preceded by ``<!-- not-run: reason -->`` is skipped on purpose; any
  other language tag fails the test until it is taught here or marked.
"""

from __future__ import annotations

import argparse
import doctest
import os
import re
import runpy
import shlex
import subprocess
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

MarkdownIt = pytest.importorskip("markdown_it", reason="markdown-it-py (a myst-parser dependency)").MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"<!--\s*not-run:\s*\S.*-->")
COMMAND_WORDS = {"pip", "python", "python3", "exactlearn", "pytest", "sphinx-build", "jupyter"}
PYTHON, PYCON = {"python", "py", "python3"}, {"pycon"}
SHELL, TEXT = {"bash", "sh", "shell", "console"}, {"text", ""}


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    skipped: bool

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The code blocks of a Markdown file, fenced and indented (MyST directives are not code).

    Parsed with markdown-it (CommonMark, as GitHub and MyST read the file). An
    indented block counts as ``bash`` if every line is a command of a known
    program, otherwise as an untagged (text) block.
    """
    text = path.read_text()
    lines = text.splitlines()
    out = []
    for token in MarkdownIt("commonmark").parse(text):
        if token.type not in ("fence", "code_block") or token.map is None:
            continue
        lang = token.info.split()[0].lower() if token.type == "fence" and token.info.strip() else ""
        if lang.startswith("{"):
            continue
        commands = [ln for ln in token.content.splitlines() if ln.strip()]
        if token.type == "code_block" and all(ln.split()[0] in COMMAND_WORDS and "[" not in ln
                                              for ln in commands):
            lang = "bash"
        start = token.map[0]
        before = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        out.append(Block(path, start + 1, lang, token.content, bool(NOT_RUN.search(before))))
    return out


ALL_BLOCKS = [b for path in DOC_FILES for b in blocks(path)]


def ids(items):
    return [b.where for b in items]


def test_every_block_has_a_known_kind():
    unknown = [f"{b.where} ({b.lang})" for b in ALL_BLOCKS
               if not b.skipped and b.lang not in PYTHON | PYCON | SHELL | TEXT]
    assert unknown == [], "tag these blocks python/pycon/bash/text or mark them <!-- not-run: reason -->"


def test_the_readme_example_is_checked():
    kinds = {b.lang for b in ALL_BLOCKS if b.path.name == "README.md" and not b.skipped}
    assert kinds & (PYTHON | PYCON) and kinds & SHELL


# --- python and pycon ------------------------------------------------------------------------


@contextmanager
def chdir(path: Path):
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


PY_FILES = sorted({b.path for b in ALL_BLOCKS if b.lang in PYTHON | PYCON and not b.skipped})


@pytest.mark.parametrize("path", PY_FILES, ids=[str(p.relative_to(ROOT)) for p in PY_FILES])
def test_python_blocks_run(path, tmp_path):
    namespace: dict = {"__name__": "__docs__"}
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    parser = doctest.DocTestParser()
    with chdir(tmp_path):
        for b in blocks(path):
            if b.skipped:
                continue
            if b.lang in PYTHON and not b.code.lstrip().startswith(">>>"):
                exec(compile(b.code, b.where, "exec"), namespace)
            elif b.lang in PYTHON | PYCON:  # a session (``>>>``) is a doctest, however it is tagged
                test = parser.get_doctest(b.code, namespace, b.where, str(path), b.line)
                result = runner.run(test, clear_globs=False)
                assert result.failed == 0, f"{b.where}: {result.failed} doctest example(s) failed (see above)"
                namespace.update(test.globs)


# --- commands --------------------------------------------------------------------------------


class _Parsed(Exception):
    def __init__(self, parser, namespace):
        self.parser, self.namespace = parser, namespace


@contextmanager
def intercept_parse(parse: bool):
    """``ArgumentParser.parse_args`` raises ``_Parsed`` (after parsing if ``parse``) instead of returning."""
    original = argparse.ArgumentParser.parse_args

    def fake(self, args=None, namespace=None):
        ns = original(self, args, namespace) if parse else None
        raise _Parsed(self, ns)

    argparse.ArgumentParser.parse_args = fake
    try:
        yield
    finally:
        argparse.ArgumentParser.parse_args = original


def program(argv: list[str]) -> tuple[str, str, list[str]] | None:
    """``(kind, target, args)`` for a command of this project: kind ``module`` or ``script``."""
    if argv[0] == "exactlearn":
        return "module", "exactlearn", argv[1:]
    if argv[0] in ("python", "python3") and len(argv) >= 3 and argv[1] == "-m":
        if argv[2].split(".")[0] in ("exactlearn", "proofs_check"):
            return "module", argv[2], argv[3:]
    if argv[0] in ("python", "python3") and len(argv) >= 2 and argv[1].endswith(".py"):
        return "script", argv[1], argv[2:]
    return None


def run_parser(kind: str, target: str, args: list[str], parse: bool):
    old_argv = sys.argv
    sys.argv = [target, *args]
    try:
        with intercept_parse(parse), warnings.catch_warnings():
            # runpy warns when a package's __main__ was imported before (by an earlier check)
            warnings.simplefilter("ignore", RuntimeWarning)
            if kind == "module":
                runpy.run_module(target, run_name="__main__", alter_sys=False)
            else:
                runpy.run_path(str(ROOT / target), run_name="__main__")
    except _Parsed as parsed:
        return parsed
    finally:
        sys.argv = old_argv
    return None  # the program has no argparse parser


def cheap(kind: str, target: str, args: list[str]) -> bool:
    """Commands run for real by the tests (each takes seconds at most)."""
    if kind != "module" or {"--full", "--torch", "--large", "--workers"} & set(args):
        return False
    if target == "exactlearn" and args[:1] in (["recover"], ["random-model"]):
        return True
    if target == "exactlearn" and args[:1] == ["certify"]:
        d = int(args[args.index("--d") + 1]) if "--d" in args else 2
        heads = int(args[args.index("--heads") + 1]) if "--heads" in args else 2
        return d * d * heads <= 8
    return target == "exactlearn.approx"


def extras() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([a-z][a-z0-9_-]*)\s*=", section, flags=re.M))


def shell_commands(code: str) -> list[list[str]]:
    """The commands of a shell block: prompts, comments and continuation lines handled; split at && ; |."""
    text = re.sub(r"\\\n", " ", code)
    commands = []
    for line in text.splitlines():
        line = re.sub(r"^\s*\$\s", "", line)
        tokens = shlex.split(line, comments=True)
        current: list[str] = []
        for tok in tokens + [";"]:
            if tok in ("&&", ";", "||", "|"):
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(tok)
    return commands


def check_command(argv: list[str], where: str, tmp_path: Path) -> None:
    name = Path(argv[0]).name
    if name in ("pip", "pip3") or argv[:3] in (["python", "-m", "pip"], ["python3", "-m", "pip"]):
        for tok in argv:
            m = re.fullmatch(r"\.?\[([a-z0-9_,-]+)\]", tok.lstrip("."))
            if m:
                missing = set(m.group(1).split(",")) - extras()
                assert not missing, f"{where}: pip extra(s) {missing} not in pyproject.toml"
        return
    if name in ("pytest",):
        for prev, tok in zip(argv, argv[1:]):
            if not tok.startswith("-") and prev not in ("-m", "-k", "-p"):  # not an option's value
                assert (ROOT / tok.split("::")[0]).exists(), f"{where}: {tok} does not exist"
        return
    if argv[:3] in (["python", "-m", "venv"], ["python3", "-m", "venv"]) or argv[0] in (".", "source", "cd"):
        return
    if name in ("sphinx-build", "jupyter"):
        assert all((ROOT / t).exists() for t in argv[1:] if "/" in t and not t.startswith("-")
                   and "_build" not in t and "<" not in t), f"{where}: a path in {argv} does not exist"
        return
    found = program(argv)
    assert found is not None, f"{where}: unknown command {shlex.join(argv)} (teach this test or mark it)"
    kind, target, args = found
    if kind == "script":
        assert (ROOT / target).is_file(), f"{where}: no script {target}"
        if "argparse" not in (ROOT / target).read_text():  # never run it; its file arguments must exist
            for tok in args:
                if "/" in tok or re.search(r"\.[a-z]+$", tok):
                    assert (ROOT / Path(target).parent / tok).exists(), f"{where}: {tok} does not exist"
            return
    with chdir(tmp_path):
        try:
            parsed = run_parser(kind, target, args, parse=True)
        except SystemExit as exc:  # argparse refused the options
            pytest.fail(f"{where}: {shlex.join(argv)} does not parse (exit {exc.code})")
    assert parsed is not None, f"{where}: {target} ran without parsing its arguments"
    if cheap(kind, target, args):
        result = subprocess.run([sys.executable, "-m", target, *args], cwd=tmp_path, capture_output=True,
                                text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert result.returncode == 0, (f"{where}: {shlex.join(argv)} exited {result.returncode}\n"
                                        + result.stderr)


SHELL_BLOCKS = [b for b in ALL_BLOCKS if b.lang in SHELL and not b.skipped]
# commands that run for about a minute (the approximate path's figures): only in the full run
SLOW_TARGETS = {"exactlearn.approx"}


def runs_slowly(block: Block) -> bool:
    found = [program(argv) for argv in shell_commands(block.code)]
    return any(f is not None and cheap(*f) and f[1] in SLOW_TARGETS for f in found)


@pytest.mark.parametrize("block", [pytest.param(b, marks=pytest.mark.slow) if runs_slowly(b) else b
                                   for b in SHELL_BLOCKS], ids=ids(SHELL_BLOCKS))
def test_shell_blocks(block, tmp_path):
    commands = shell_commands(block.code)
    assert commands, f"{block.where}: empty shell block"
    for argv in commands:
        check_command(argv, block.where, tmp_path)


# --- synopses in text blocks -------------------------------------------------------------------


def synopses(code: str) -> list[list[str]]:
    """Lines of a text block that show a command of this project (continuation lines joined)."""
    out: list[list[str]] = []
    for line in code.splitlines():
        stripped = line.strip()
        if out and line[:1].isspace() and stripped.startswith(("[", "--")):
            out[-1] += stripped.split()
        elif stripped.startswith(("exactlearn ", "python -m exactlearn", "python -m proofs_check",
                                  "python benchmarks/")):
            out.append(stripped.split())
    return out


def option_strings(parser: argparse.ArgumentParser, sub: str | None) -> set[str]:
    if sub is not None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) and sub in action.choices:
                parser = action.choices[sub]
    return {s for action in parser._actions for s in action.option_strings}


def shown_defaults(words: list[str]) -> list[tuple[str, str]]:
    """``("--d", "3")`` for every optional ``[--d 3]`` of a synopsis whose value is a number."""
    pairs = []
    for first, second in zip(words, words[1:]):
        if first.startswith("[-") and re.fullmatch(r"\d+\]", second):
            pairs.append((first[1:], second[:-1]))
    return pairs


def option_action(parser: argparse.ArgumentParser, sub: str | None, option: str) -> argparse.Action:
    if sub is not None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) and sub in action.choices:
                parser = action.choices[sub]
    return next(a for a in parser._actions if option in a.option_strings)


TEXT_BLOCKS = [b for b in ALL_BLOCKS if b.lang in TEXT and not b.skipped and synopses(b.code)]


@pytest.mark.parametrize("block", TEXT_BLOCKS, ids=ids(TEXT_BLOCKS))
def test_synopses_name_existing_options(block):
    for words in synopses(block.code):
        kind, target, args = program(words)
        sub = args[0] if args and not args[0].startswith(("-", "[")) else None
        if target == "exactlearn" and sub == "approx":
            target, sub = "exactlearn.demos.approx", None
        parsed = run_parser(kind, target, [], parse=False)
        assert parsed is not None, f"{block.where}: {target} has no argument parser"
        known = option_strings(parsed.parser, sub)
        named = {re.match(r"-{1,2}[a-z][a-z0-9-]*", w.strip("[]")).group(0) for w in words
                 if re.match(r"-{1,2}[a-z]", w.strip("[]"))}
        assert named <= known, f"{block.where}: {sorted(named - known)} not options of {' '.join(words[:3])}"
        for option, value in shown_defaults(words):  # "[--d 3]": 3 must be the default
            action = option_action(parsed.parser, sub, option)
            helped = re.search(rf"default {value}[);]", action.help or "")  # default given as None
            assert str(action.default) == value or helped, \
                f"{block.where}: {option} {value} is not its default"


# --- the checks can fail -----------------------------------------------------------------------


def test_the_checks_catch_planted_mistakes(tmp_path):
    with pytest.raises(pytest.fail.Exception, match="does not parse"):
        check_command(["exactlearn", "recover", "--no-such-option"], "planted", tmp_path)
    with pytest.raises(AssertionError, match="not in pyproject"):
        check_command(["pip", "install", "-e", ".[no-such-extra]"], "planted", tmp_path)
    with pytest.raises(AssertionError, match="unknown command"):
        check_command(["make", "all"], "planted", tmp_path)
    md = tmp_path / "planted.md"
    md.write_text("```pycon\n>>> 1 + 1\n3\n```\n\n"
                  "<!-- not-run: planted -->\n```python\nraise SystemExit\n```\n\n"
                  "Indented:\n\n    exactlearn recover --d 2\n\nand a formula:\n\n    f(x) = x\n")
    found = blocks(md)
    assert [(b.lang, b.skipped) for b in found] == [("pycon", False), ("python", True), ("bash", False),
                                                    ("", False)]
    test = doctest.DocTestParser().get_doctest(found[0].code, {}, "planted", str(md), 1)
    runner = doctest.DocTestRunner()
    assert runner.run(test, out=lambda s: None).failed == 1
