"""The documentation builds with Sphinx, warnings as errors: a front page, an API page of the
public names one click from it, one page per module under Internals, math typeset offline."""

from __future__ import annotations

import pkgutil
import re
import shutil
from pathlib import Path

import pytest

import exactlearn

from .conftest import sphinx_build

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

pytest.importorskip("sphinx", reason="sphinx is not installed (pip install -e '.[docs]')")
pytest.importorskip("myst_parser", reason="myst-parser is not installed (pip install -e '.[docs]')")
pytestmark = pytest.mark.slow  # a Sphinx build of the whole site: about 40 s of CPU

# the public names a newcomer looks for, as the API page documents them (``exactlearn.learn`` is
# also a module's name, so the function is documented at its full path)
PUBLIC = ["exactlearn.learn.learn", "exactlearn.Oracle", "exactlearn.MultiHeadAttention", "exactlearn.Head",
          "exactlearn.Recovery", "exactlearn.RecoveredHead", "exactlearn.Limits",
          "exactlearn.approx.learn_approx", "exactlearn.transformer.learn_transformer",
          "exactlearn.transformer.Transformer", "exactlearn.symbolic.certify", "exactlearn.ExactLearnError",
          "exactlearn.RecoveryError", "exactlearn.InconsistentAnswersError", "exactlearn.OracleError"]
# napoleon's reading of a "#:" comment's first line as "type: text" rendered a "Type" field
NAPOLEON_TYPE_FIELD = re.compile(r'<dt class="field-\w+">Type<span class="colon">')


def public_modules() -> set[str]:
    names = {"exactlearn"}
    for info in pkgutil.walk_packages(exactlearn.__path__, "exactlearn."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.add(info.name)
    return names


def test_docs_build_without_warnings_and_document_every_module(docs_site):
    result, html = docs_site
    assert result.returncode == 0, result.stderr[-5000:]
    pages = {p.stem for p in (DOCS / "api").glob("*.rst")}
    assert pages == public_modules()
    for name in pages:
        text = (html / "api" / f"{name}.html").read_text()
        assert f'id="module-{name}"' in text, name  # autodoc imported and documented it
        assert not NAPOLEON_TYPE_FIELD.search(text), f"{name}: a comment rendered as a 'Type' field"
    internals = (html / "internals.html").read_text()
    assert all(f'href="api/{name}.html"' in internals for name in pages)
    for md in DOCS.glob("*.md"):  # every Markdown page is part of the site (the index's toctrees)
        assert (html / f"{md.stem}.html").exists(), md.name


def test_the_public_names_are_one_click_from_the_front_page(docs_site):
    result, html = docs_site
    assert result.returncode == 0, result.stderr[-5000:]
    index = (html / "index.html").read_text()
    assert 'href="api.html"' in index and 'href="getting-started.html"' in index
    assert re.search(r'href="getting-started.html">[^<]*Getting started', index)  # titles, not file names
    assert not re.search(r'>\w[\w-]*\.md<', index), "an index link reads as a file name"
    api = (html / "api.html").read_text()
    for name in PUBLIC:
        assert f'id="{name}"' in api, name
    # documented once: the module that defines learn() links to the API page instead
    learn_module = (html / "api" / "exactlearn.learn.html").read_text()
    assert 'id="exactlearn.learn.learn"' not in learn_module
    assert "../api.html#exactlearn.learn.learn" in learn_module


def test_math_is_typeset_by_a_bundled_mathjax(docs_site):
    result, html = docs_site
    assert result.returncode == 0, result.stderr[-5000:]
    algorithm = (html / "algorithm.html").read_text()
    assert algorithm.count('class="math') > 50  # the page's formulas are math, not code spans
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', algorithm)
    assert any(s.endswith("mathjax/tex-svg.js") for s in scripts), scripts
    assert not [s for s in scripts if "//" in s], "a script loads from the network"
    assert (html / "_static" / "mathjax" / "tex-svg.js").is_file()


def test_a_comment_rendered_as_a_type_field_is_caught():
    """The napoleon check recognises what the old rendering of MAX_TOKEN_BOUND looked like."""
    old = ('<dl class="field-list simple">\n<dt class="field-odd">Type<span class="colon">:</span></dt>\n'
           '<dd class="field-odd"><p>Larger token ranges make every exact number grow like')
    assert NAPOLEON_TYPE_FIELD.search(old)


def test_a_broken_page_fails_the_build(tmp_path):
    """The check can fail: a page outside every toctree and a dangling link are errors under -W."""
    src = tmp_path / "docs"
    src.mkdir()
    shutil.copy(DOCS / "conf.py", src / "conf.py")
    shutil.copy(DOCS / "api.md", src / "api.md")
    (src / "index.md").write_text("# index\n\n```{toctree}\napi\n```\n")
    (src / "orphan.md").write_text("# orphan\n\nSee [the missing page](missing.md).\n")
    result = sphinx_build(src, tmp_path / "html")
    assert result.returncode != 0
    assert "orphan" in result.stderr
