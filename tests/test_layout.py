"""The test list is complete: every public module of exactlearn has its tests (python-flint style).

A module ``exactlearn/<name>.py`` (no leading underscore) is covered by
``tests/test_<name>.py`` (``exactlearn/<package>/<name>.py`` by
``tests/test_<package>_<name>.py``), or is listed in ``COVERED_BY`` below with the test
file that exercises it. A listed test file must exist and must name the module
(its path, a public name, a public method of a class it exports) or a module
that imports it; the list holds no module that is gone or that has a test file
of its own.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "exactlearn"
TESTS = ROOT / "tests"

#: module (dotted, relative to exactlearn) -> the test file that covers it
COVERED_BY = {
    # the exact learner: one test file for the schedule it runs
    "errors": "test_learn",  # RecoveryError and its subclasses, raised by learn()
    "recovery": "test_learn",  # the Recovery that learn() returns (rec.to_json())
    "schedule": "test_learn",  # configurations and counts of the schedule
    "consistency": "test_learn",  # the final checks of a run (predicts, linear single tokens)
    "evaluation": "test_model",  # exact evaluation and its bit-size bound, through MultiHeadAttention
    "display": "test_repr",  # grids, LaTeX and reprs of models and results
    # the command line and its report
    "report": "test_cli",
    # bounded and crash-free: one test file for the limits
    "limits": "test_reliability",  # Limits, check_learn, check_random_model, check_certify
    # the approximate path: one test file for the package, one per unit of the guide layer
    "approx.learn": "test_approx",
    "approx.core.balls": "test_approx",
    "approx.core.copyfun": "test_approx",
    "approx.core.field": "test_approx",
    "approx.core.learner": "test_approx",  # learn_over_balls, through learn_approx and choose_scale
    "approx.core.models": "test_approx",
    "approx.core.recovery": "test_approx",
    "approx.core.run": "test_approx_run",
    "approx.bounds.constant": "test_approx",
    "approx.bounds.jacobian": "test_approx",  # C and the Jacobian, through sensitivity()
    "approx.bounds.thresholds": "test_approx",  # the noise thresholds, through sensitivity()
    "approx.guide.chooser": "test_approx_guide",
    "approx.guide.choice": "test_approx_sketch",  # learn_approx's guide=
    "approx.guide.lowrank": "test_approx_lowrank",
    "approx.guide.sketch": "test_approx_sketch",
    "approx.guide.span": "test_approx_sketch",  # the sketch's span of tokens
    "approx.bounds.estimate": "test_approx_estimate",
    "approx.core.noise": "test_approx_estimate",
    "approx.core.counts": "test_approx_estimate",
    "approx.core.linsolve": "test_approx",  # the first-order solves of the ball field
    "approx.valuetruth": "test_approx_values",  # known vector layers, compared with vector recoveries
    "approx.joint": "test_approx_values",  # every parameter of a vector recovery refined jointly
    # the generic (symbolic) certificate: one test file for the package
    "symbolic.certificate": "test_symbolic",
    "symbolic.element": "test_symbolic",  # elements of Q(E, V)
    "symbolic.field": "test_symbolic",
    "symbolic.ledger": "test_symbolic",
    "symbolic.model": "test_symbolic",
    "symbolic.ratfun": "test_symbolic",
    # figures and demos
    "demos.evidence": "test_approx",  # sweeps, the refusal demo, guided constants
    # adapters
    "targets.torch_demo": "test_torch_target",
    # the one-layer Transformer
    "transformer.canonical": "test_transformer_model",  # Transformer.canonical() and ==
    "transformer.errors": "test_transformer_learn",  # TransformerConditionError and its conditions
    "transformer.structured": "test_transformer_learn",  # the structured cases
    "targets.torch_mha": "test_torch_target",
    # vector outputs
    "vector.recovered": "test_vector_field",  # VectorRecoveredHead, through learn()
}


@functools.cache
def public_modules() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if any(part.startswith("_") for part in rel.parts):
            continue
        found.append(".".join(rel.with_suffix("").parts))
    return found


@functools.cache
def parse(module: str) -> ast.Module:
    return ast.parse((PACKAGE / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))


def public_names(module: str) -> list[str]:
    """The module's ``__all__`` and the public methods of the classes it exports."""
    tree = parse(module)
    exported: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            exported = list(ast.literal_eval(node.value))
    methods = [
        item.name
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name in exported
        for item in node.body
        if isinstance(item, ast.FunctionDef) and not item.name.startswith("_") and len(item.name) > 3
    ]
    return exported + methods


def imported_modules(module: str) -> set[str]:
    """The exactlearn modules that ``module`` imports (relative or absolute)."""
    package = module.split(".")[:-1]
    found = set()
    for node in ast.walk(parse(module)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[: len(package) - node.level + 1]
            found.add(".".join([*base, *(node.module or "").split(".")]).strip("."))
        elif node.module and node.module.startswith("exactlearn."):
            found.add(node.module.removeprefix("exactlearn."))
    return found


def names_module(text: str, module: str) -> bool:
    names = [f"exactlearn.{module}", *public_names(module)]
    return any(re.search(rf"\b{re.escape(n)}\b", text) for n in names)


def exercises(text: str, module: str) -> bool:
    """The test names the module, or a module that imports it."""
    importers = [m for m in public_modules() if module in imported_modules(m)]
    return names_module(text, module) or any(names_module(text, m) for m in importers)


def own_test(module: str) -> Path:
    """``learn`` -> tests/test_learn.py; ``approx.models`` -> tests/test_approx_models.py."""
    return TESTS / f"test_{module.replace('.', '_')}.py"


def test_the_package_has_public_modules():
    modules = public_modules()
    assert "learn" in modules and "approx.core.models" in modules and len(modules) > 20
    assert "approx.core.copyfun" in imported_modules("approx.core.field")
    assert {"errors", "model", "querylog"} <= imported_modules("approx.core.models")
    assert {"errors", "exact"} <= imported_modules("oracle") and "flint" not in imported_modules("oracle")


def test_every_public_module_has_a_test_file():
    missing = [m for m in public_modules() if not own_test(m).exists() and m not in COVERED_BY]
    assert not missing, f"no tests/test_<name>.py and no entry in COVERED_BY for: {missing}"


def test_the_mapping_is_accurate():
    modules = set(public_modules())
    assert not set(COVERED_BY) - modules, "COVERED_BY lists modules that do not exist"
    redundant = sorted(m for m in COVERED_BY if own_test(m).exists())
    assert not redundant, f"these modules have a test file of their own: {redundant}"
    for module, test in COVERED_BY.items():
        path = TESTS / f"{test}.py"
        assert path.exists(), f"{module}: {path.name} does not exist"
        text = path.read_text(encoding="utf-8")
        assert exercises(text, module), (
            f"{path.name} names neither exactlearn.{module} nor its public names, "
            f"nor a module that imports it"
        )


def test_no_two_paths_differ_only_in_case():
    """Checkouts on case-insensitive filesystems (macOS, Windows) keep every file."""
    seen: dict[str, str] = {}
    clashes = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(".") or "/." in rel or "__pycache__" in rel:
            continue
        other = seen.setdefault(rel.lower(), rel)
        if other != rel:
            clashes.append((other, rel))
    assert not clashes, f"paths that collide without case: {clashes}"


def test_docs_and_notebooks_cite_the_one_algorithm_page():
    stale = [p.relative_to(ROOT).as_posix() for pattern in ("docs/*.md", "notebooks/*.ipynb")
             for p in sorted(ROOT.glob(pattern)) if "ALGORITHM.md" in p.read_text(encoding="utf-8")]
    assert not stale, f"cite docs/algorithm.md section N instead of ALGORITHM.md in: {stale}"


# -- the README's architecture table names every module ---------------------------------

README = ROOT / "README.md"


def architecture_rows(text: str) -> list[str]:
    """The table rows of the README's ``## Architecture`` section (header and rule left out)."""
    section = text.split("\n## Architecture", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return rows[1:]


def named_paths(row: str, root: Path = ROOT) -> set[Path]:
    """The files and folders a table row names in code spans (its first two cells).

    A span that names a path ends in ``.py`` or ``/``; it is relative to the folder named last in
    the row (``core/`` then ``balls.py``), to the row's own folder (its first span's), or to the
    repository; the first that exists wins.
    """
    cells = row.strip("|").split(" | ")
    spans = [span for span in re.findall(r"`([^`]+)`", " ".join(cells[:2])) if span.endswith((".py", "/"))]
    named: set[Path] = set()
    home: Path | None = None
    current: Path | None = None
    for span in spans:
        for base in (current, home, root):
            if base is not None and (base / span).exists():
                path = (base / span).resolve()
                named.add(path)
                folder = path if path.is_dir() else path.parent
                home = home or folder
                if span.endswith("/"):
                    current = path
                break
    return named


#: modules the table may describe as a group instead of naming each: proofs_check's claims
GROUPED = re.compile(r"proofs_check/claims/c\d\d_\w+\.py$")


def unnamed_modules(readme: Path = README, root: Path = ROOT) -> list[str]:
    """Modules and packages of exactlearn/ and proofs_check/ that no row of the table names."""
    named: set[Path] = set()
    for row in architecture_rows(readme.read_text(encoding="utf-8")):
        named |= named_paths(row, root)
    missing = []
    for package in ("exactlearn", "proofs_check"):
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if "__pycache__" in rel or GROUPED.search(rel):
                continue
            target = path.parent if path.name == "__init__.py" else path
            if target.resolve() not in named:
                missing.append(rel)
    return missing


def test_the_readme_architecture_table_names_every_module():
    rows = architecture_rows(README.read_text(encoding="utf-8"))
    assert (ROOT / "exactlearn" / "approx" / "core" / "balls.py").resolve() in named_paths(
        next(row for row in rows if row.startswith("| `exactlearn/approx/`")))
    assert unnamed_modules() == []


def test_a_module_missing_from_the_table_is_found(tmp_path):
    for rel in ("exactlearn/__init__.py", "exactlearn/model.py", "exactlearn/core/__init__.py",
                "exactlearn/core/model.py", "proofs_check/claims/__init__.py",
                "proofs_check/claims/c01_claim.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    table = ("# x\n\n## Architecture\n\n| module | room |\n|---|---|\n"
             "| `exactlearn/model.py` | the model |\n"
             "| `exactlearn/core/` | a layer: `model.py` |\n"
             "| `proofs_check/` | the claims in `claims/` |\n\n## Next\n")
    (tmp_path / "README.md").write_text(table)
    assert unnamed_modules(tmp_path / "README.md", tmp_path) == ["exactlearn/__init__.py"]
    (tmp_path / "README.md").write_text(table.replace("| `exactlearn/model.py` |", "| `exactlearn/` |")
                                        .replace("a layer: `model.py`", "a layer"))
    assert unnamed_modules(tmp_path / "README.md", tmp_path) == ["exactlearn/core/model.py",
                                                                 "exactlearn/model.py"]
