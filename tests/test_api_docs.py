"""The documentation builds with Sphinx, warnings as errors, with one API page per module."""

from __future__ import annotations

import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import exactlearn

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

pytest.importorskip("sphinx", reason="sphinx is not installed (pip install -e '.[docs]')")
pytest.importorskip("myst_parser", reason="myst-parser is not installed (pip install -e '.[docs]')")


def sphinx_build(src: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-E",
                           str(src), str(out)], capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})


def public_modules() -> set[str]:
    names = {"exactlearn"}
    for info in pkgutil.walk_packages(exactlearn.__path__, "exactlearn."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.add(info.name)
    return names


def test_docs_build_without_warnings_and_document_every_module(tmp_path):
    result = sphinx_build(DOCS, tmp_path / "html")
    assert result.returncode == 0, result.stderr[-5000:]
    pages = {p.stem for p in (DOCS / "api").glob("*.rst")}
    assert pages == public_modules()
    html = tmp_path / "html"
    for name in pages:
        text = (html / "api" / f"{name}.html").read_text()
        assert f'id="module-{name}"' in text, name  # autodoc imported and documented it
    for md in DOCS.glob("*.md"):  # every Markdown page is part of the site (the index's toctree)
        assert (html / f"{md.stem}.html").exists(), md.name
    # the README's entry points are documented with their docstrings
    learn_page = (html / "api" / "exactlearn.learn.html").read_text()
    assert 'id="exactlearn.learn.learn"' in learn_page


def test_a_broken_page_fails_the_build(tmp_path):
    """The check can fail: a page outside every toctree and a dangling link are errors under -W."""
    src = tmp_path / "docs"
    src.mkdir()
    shutil.copy(DOCS / "conf.py", src / "conf.py")
    (src / "index.md").write_text("# index\n\n```{toctree}\napi\n```\n")
    (src / "api.md").write_text("# api\n")
    (src / "orphan.md").write_text("# orphan\n\nSee [the missing page](missing.md).\n")
    result = sphinx_build(src, tmp_path / "html")
    assert result.returncode != 0
    assert "orphan" in result.stderr
