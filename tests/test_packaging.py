"""Packaging and citation: one version, consistent metadata, an sdist that carries the artifact."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import exactlearn

ROOT = Path(__file__).resolve().parent.parent
yaml = pytest.importorskip("yaml", reason="PyYAML reads CITATION.cff")
try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli", reason="Python 3.10 reads pyproject.toml with tomli")


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


def test_version_has_one_source():
    project = pyproject()["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "exactlearn.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", exactlearn.__version__)
    assert citation()["version"] == exactlearn.__version__


def test_changelog_dates_the_cited_release():
    text = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", text, flags=re.M)
    assert releases, "CHANGELOG.md has no dated release"
    newest_version, newest_date = releases[0]
    cff = citation()
    assert newest_version == cff["version"] == exactlearn.__version__
    assert str(cff["date-released"]) == newest_date


def test_citation_metadata():
    cff = citation()
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    for key in ("title", "authors", "version", "date-released", "license", "repository-code",
                "preferred-citation"):
        assert cff.get(key), key
    assert cff["license"] == pyproject()["project"]["license"] == "MIT"
    assert cff["repository-code"] == pyproject()["project"]["urls"]["Source"]
    paper = cff["preferred-citation"]
    assert paper["title"] == exactlearn.PAPER["title"]
    names = [f"{a['given-names']} {a['family-names']}" for a in paper["authors"]]
    assert names == exactlearn.PAPER["authors"]
    assert exactlearn.PAPER["arxiv"] in paper["url"]
    assert any(i["type"] == "doi" and exactlearn.PAPER["arxiv"] in i["value"] for i in paper["identifiers"])


def test_project_metadata():
    project = pyproject()["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert {"Source", "Documentation"} <= set(project["urls"])
    classifiers = project["classifiers"]
    low = re.fullmatch(r">=3\.(\d+)", project["requires-python"]).group(1)
    assert f"Programming Language :: Python :: 3.{low}" in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")]  # superseded by the SPDX expression
    extras = project["optional-dependencies"]
    assert any(d.startswith("jupyterlab") for d in extras["notebooks"])
    for extra in ("docs", "test"):
        assert {"sphinx", "myst-parser"} <= {re.split(r"[<>=\[]", d)[0] for d in extras[extra]}, extra


def test_only_the_library_is_installed():
    """proofs_check is the verifier of the artifact: it ships in the sdist and runs from a clone, but no
    top-level package of that generic name is installed into site-packages."""
    from setuptools import find_packages

    include = pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    assert include == ["exactlearn*"]
    packages = find_packages(where=str(ROOT), include=include)
    assert "exactlearn" in packages and all(p.split(".")[0] == "exactlearn" for p in packages)
    assert "graft proofs_check" in (ROOT / "MANIFEST.in").read_text()
    done = subprocess.run([sys.executable, "-m", "proofs_check", "--list"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "exact-recovery" in done.stdout, done.stderr[-2000:]


def _copy_tree(dest: Path) -> Path:
    """The worktree without VCS data and build output (the build writes egg-info beside the sources)."""
    ignore = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build", "dist", "_build",
                                    ".pytest_cache", ".hypothesis", ".venv", ".ci-venv", ".ipynb_checkpoints")
    shutil.copytree(ROOT, dest, ignore=ignore)
    return dest


def test_sdist_carries_the_artifact(tmp_path):
    pytest.importorskip("build")
    src = _copy_tree(tmp_path / "src")
    result = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir",
                             str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (tarball,) = (tmp_path / "dist").glob("*.tar.gz")
    top = f"exactlearn-{exactlearn.__version__}"
    assert tarball.name == f"{top}.tar.gz"
    with tarfile.open(tarball) as tar:
        names = {n[len(top) + 1:] for n in tar.getnames()}
        pkg_info = tar.extractfile(f"{top}/PKG-INFO").read().decode()
    wanted = {"README.md", "CHANGELOG.md", "CITATION.cff", "LICENSE", "pyproject.toml", "docs/conf.py",
              "notebooks/execute.py"}
    for pattern in ("docs/*.md", "notebooks/*.ipynb", "benchmarks/*.py", "tests/*.py",
                    "exactlearn/**/*.py", "proofs_check/**/*.py"):
        wanted |= {p.relative_to(ROOT).as_posix() for p in ROOT.glob(pattern) if p.is_file()
                   and "__pycache__" not in p.parts}
    assert sorted(wanted - names) == []
    assert not [n for n in names if "_build/" in n or n.startswith("docs/api/") or "__pycache__" in n
                or n.endswith(".pyc")]  # build output stays out
    assert f"Version: {exactlearn.__version__}" in pkg_info
    assert "License-Expression: MIT" in pkg_info
    assert "Project-URL: Source, " in pkg_info and "Project-URL: Documentation, " in pkg_info
