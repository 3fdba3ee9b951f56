"""Every command line documents itself: descriptions, a help string per option, usage errors in 80 columns.

Walks the argparse trees of ``exactlearn`` (every subcommand), ``exactlearn approx`` and
``python -m proofs_check``.
"""

from __future__ import annotations

import argparse

import pytest

from exactlearn.cli import build_parser, main
from exactlearn.demos.approx import build_parser as approx_parser
from proofs_check.cli import build_parser as proofs_check_parser
from proofs_check.cli import main as proofs_check_main


def _parsers(parser: argparse.ArgumentParser, path: str = ""):
    """``(path, parser)`` for ``parser`` and every subcommand under it."""
    yield path or parser.prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path or parser.prog} {name}")


def undocumented(parser: argparse.ArgumentParser) -> list[str]:
    """What ``parser`` and its subcommands leave undocumented: descriptions, options, subcommands."""
    missing = []
    for path, p in _parsers(parser):
        if path == "exactlearn approx":  # a placeholder: `exactlearn approx` runs approx_parser()
            continue
        if not (p.description or "").strip():
            missing.append(f"{path}: no description")
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{path} {c.dest}: no help" for c in action._choices_actions if not c.help]
            elif not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}: no help")
    return missing


PARSERS = {"exactlearn": build_parser, "exactlearn approx": approx_parser,
           "proofs_check": proofs_check_parser}


@pytest.mark.parametrize("name", PARSERS)
def test_every_option_of_every_subcommand_has_help(name):
    parser = PARSERS[name]()
    assert len(list(_parsers(parser))) >= (6 if name == "exactlearn" else 1)
    assert undocumented(parser) == []


def test_the_walk_finds_an_undocumented_option():
    # the check above can fail: a subcommand without a description and an option without help
    parser = argparse.ArgumentParser(prog="x", description="x")
    sub = parser.add_subparsers()
    p = sub.add_parser("run", help="run it")
    p.add_argument("--d", type=int)
    assert undocumented(parser) == ["x run: no description", "x run --d: no help"]


def test_random_model_help_describes_d_heads_seed(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(["random-model", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--d D token width d (default 3)" in text
    assert "--heads HEADS number of heads H (default 2)" in text
    assert "--seed SEED seed of the random model (default 0)" in text


@pytest.mark.parametrize("command", ["recover", "random-model", "certify", "transformer"])
def test_an_unknown_option_shows_the_subcommands_usage(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--bogus"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.startswith(f"usage: exactlearn {command} ")
    assert f"exactlearn {command}: error: unrecognized arguments: --bogus" in err


@pytest.mark.parametrize("argv", [
    ["certify", "--limit", "foo=3"],  # lists every field of Limits: 400 characters
    ["transformer", "--heads", "0"],
    ["recover", "--d", "x"],
    ["recover", "--schedule", "fastest"],
    ["random-model", "--height", "1"],
    ["recover", "--limit", "d=many"],
    ["approx", "--json", "/nonexistent-directory-with-a-long-name/and/a/long/file/name/figures.json"],
])
def test_argument_errors_fit_80_columns(argv, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "error:" in err
    assert [line for line in err.splitlines() if len(line) > 80] == []


def test_proofs_check_argument_errors_fit_80_columns(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exc:
        proofs_check_main(["--claim", "nonexistent-claim"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "unknown claim" in err
    assert len(err.splitlines()) > 3  # the list of claims, wrapped
    assert [line for line in err.splitlines() if len(line) > 80] == []
