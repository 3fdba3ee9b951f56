"""Sphinx configuration: the Markdown docs (MyST) and an API reference from the docstrings.

Build: ``sphinx-build -W -b html docs docs/_build/html`` (``pip install -e ".[docs]"``).

* ``api.md`` documents the public names (``learn``, ``Oracle``, ...) with autodoc
  directives; it is the API's front door.
* ``internals.md`` lists one page per module of ``exactlearn``, written here at
  build time from the modules found on disk (``docs/api/`` is build output), so
  modules added, moved or renamed need no edit. A module page leaves out what
  ``api.md`` documents and links to it instead: every object is described once.
* Mathematics is written ``$...$`` and ``$$...$$`` (MyST dollarmath, as GitHub
  reads it) and typeset by a MathJax copied into the site (sphinx-mathjax-offline):
  the pages need no network.
"""

from __future__ import annotations

import importlib
import inspect
import re
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
    "sphinx-mathjax-offline",  # MathJax 3 copied into _static/mathjax: no CDN
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
autodoc_preserve_defaults = True  # "limits=DEFAULT_LIMITS" as written, not its long repr
add_module_names = False  # "learn(oracle, d, ...)", not "exactlearn.learn.learn(...)"
napoleon_google_docstring = False  # the docstrings use NumPy sections (Parameters, Notes) or none
napoleon_numpy_docstring = True

html_theme = "furo"
html_title = f"exactlearn {release}"
# SVG output draws every glyph itself: no web fonts to load (file:// pages included)
MATHJAX_PATH = "mathjax/tex-svg.js"

PACKAGES = ("exactlearn",)
API_PAGE = DOCS / "api.md"
# autodoc directives of api.md (in eval-rst blocks): .. autofunction:: exactlearn.learn
DIRECTIVE = re.compile(r"^\.\. auto(?:function|class|exception|data)::\s+(\S+)", re.M)


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


def documented_on_api_page() -> dict[str, list[tuple[str, str]]]:
    """``{defining module: [(name, public path), ...]}`` for every object ``api.md`` documents."""
    found: dict[str, list[tuple[str, str]]] = {}
    for path in DIRECTIVE.findall(API_PAGE.read_text()):
        module, _, name = path.rpartition(".")
        obj = inspect.unwrap(getattr(importlib.import_module(module), name))
        found.setdefault(obj.__module__, []).append((obj.__qualname__, path))
    return found


def module_page(name: str, elsewhere: list[tuple[str, str]]) -> str:
    text = f"{name}\n{'=' * len(name)}\n\n"
    if elsewhere:  # described once, on the API page; listed here as links
        links = ", ".join(f":py:obj:`~{public}`" for _, public in elsewhere)
        text += f"Documented in the :doc:`API reference </api>`: {links}.\n\n"
    # every other object is described once, on the page of the module that defines it (what a module
    # or package re-exports in __all__ is not repeated): cross-references are unambiguous
    text += f".. automodule:: {name}\n   :ignore-module-all:\n"
    if elsewhere:
        text += f"   :exclude-members: {', '.join(own for own, _ in elsewhere)}\n"
    return text


def write_api_pages(_app=None) -> None:
    """``docs/api/<module>.rst`` for every module, rewritten only when changed."""
    out = DOCS / "api"
    out.mkdir(exist_ok=True)
    elsewhere = documented_on_api_page()
    wanted = {f"{name}.rst": module_page(name, elsewhere.get(name, []))
              for package in PACKAGES for name in modules(package)}
    for stale in out.glob("*.rst"):
        if stale.name not in wanted:
            stale.unlink()
    for filename, text in wanted.items():
        path = out / filename
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


def napoleon_skips_attributes(app) -> None:
    """Napoleon reads the first line of a data or attribute docstring as ``type: text`` (its
    Google-style inline attribute form), so a ``#:`` comment such as "Larger token ranges make
    every exact number grow like ``B^2``: refuse absurd ones" rendered as "Type: Larger ...".
    The comments here are prose: napoleon handles functions, classes and modules only."""
    from sphinx.ext.napoleon import _process_docstring

    for listener in list(app.events.listeners["autodoc-process-docstring"]):
        if listener.handler is _process_docstring:
            app.disconnect(listener.id)

    def process(app, what, name, obj, options, lines):
        if what not in ("data", "attribute", "property"):
            _process_docstring(app, what, name, obj, options, lines)

    app.connect("autodoc-process-docstring", process)


def setup(app):
    app.config.mathjax_path = MATHJAX_PATH  # after sphinx-mathjax-offline set its own
    napoleon_skips_attributes(app)
    app.connect("builder-inited", write_api_pages)
