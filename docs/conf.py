"""Sphinx configuration: the Markdown docs (MyST) and an API reference from the docstrings.

Build: ``sphinx-build -W -b html docs docs/_build/html`` (``pip install -e ".[docs]"``).
The API pages are written at build time, one per module of ``exactlearn`` found
on disk (``docs/api/`` is build output), so modules added or renamed need no edit here.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

import exactlearn  # noqa: E402

project = "exactlearn"
author = "The exactlearn developers"
copyright = "2026, " + author
release = version = exactlearn.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]  # build output only: every other page is part of the site

myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 4  # links such as algorithm.md#the-correction
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = True

html_theme = "alabaster"
html_title = f"exactlearn {release}"

PACKAGES = ("exactlearn",)


def modules(package: str) -> list[str]:
    """Every public module and package under ``package``, found on disk (no import, no ``__main__``)."""
    base = ROOT / package.replace(".", "/")
    names = [package]
    for path in sorted(base.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts) or "." + ".".join(parts) in {"." + package}:
            continue
        names.append(".".join(parts))
    return sorted(set(names))


def write_api_pages(_app=None) -> None:
    """``docs/api/<module>.rst`` for every module, rewritten only when changed."""
    out = DOCS / "api"
    out.mkdir(exist_ok=True)
    wanted = {}
    for package in PACKAGES:
        for name in modules(package):
            # every object is described once, on the page of the module that defines it (what a
            # module or package re-exports in __all__ is not repeated): cross-references are unambiguous
            text = f"{name}\n{'=' * len(name)}\n\n.. automodule:: {name}\n   :ignore-module-all:\n"
            wanted[f"{name}.rst"] = text
    for stale in out.glob("*.rst"):
        if stale.name not in wanted:
            stale.unlink()
    for filename, text in wanted.items():
        path = out / filename
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


def setup(app):
    app.connect("builder-inited", write_api_pages)
