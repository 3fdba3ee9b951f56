"""The test list is complete: every public module of exactlearn has its tests (python-flint style).

A module ``exactlearn/<name>.py`` (no leading underscore) is covered by
``tests/test_<name>.py`` (``exactlearn/<package>/<name>.py`` by
``tests/test_<package>_<name>.py``), or is listed in ``COVERED_BY`` below with the test
file that exercises it. A listed test file must exist and must name the module
or one of its public names, and the list holds no module that is gone or that
has a test file of its own.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "exactlearn"
TESTS = ROOT / "tests"

#: module (dotted, relative to exactlearn) -> the test file that covers it
COVERED_BY = {
    # the exact learner: one test file for the schedule it runs
    "errors": "test_learn",  # RecoveryError and its subclasses, raised by learn()
    "exact": "test_learn",  # token and rational conversions (rational_str, as_tokens)
    "field": "test_performance_paths",  # ExactRationals (the exact field) against reference formulas
    "recovery": "test_learn",  # the Recovery result of learn()
    "schedule": "test_learn",  # configurations and counts of the schedule
    # the command line and its report
    "report": "test_cli",
    # the approximate path: one test file for the package
    "approx.balls": "test_approx",
    "approx.copyfun": "test_approx",
    "approx.evidence": "test_approx",
    "approx.field": "test_approx",
    "approx.learn": "test_approx",
    "approx.models": "test_approx",
    "approx.sensitivity": "test_approx",
    # the generic (symbolic) certificate: one test file for the package
    "symbolic.certificate": "test_symbolic",
    "symbolic.field": "test_symbolic",
    "symbolic.ledger": "test_symbolic",
    "symbolic.model": "test_symbolic",
    "symbolic.ratfun": "test_symbolic",
    # adapters
    "targets.torch_mha": "test_torch_target",
}


def public_modules() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if any(part.startswith("_") for part in rel.parts):
            continue
        found.append(".".join(rel.with_suffix("").parts))
    return found


def public_names(module: str) -> list[str]:
    tree = ast.parse((PACKAGE / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return []


def own_test(module: str) -> Path:
    """``learn`` -> tests/test_learn.py; ``approx.models`` -> tests/test_approx_models.py."""
    return TESTS / f"test_{module.replace('.', '_')}.py"


def test_the_package_has_public_modules():
    modules = public_modules()
    assert "learn" in modules and "approx.models" in modules and len(modules) > 20


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
        names = [f"exactlearn.{module}", *public_names(module)]
        assert any(re.search(rf"\b{re.escape(n)}\b", text) for n in names), (
            f"{path.name} names neither exactlearn.{module} nor any of its public names"
        )
