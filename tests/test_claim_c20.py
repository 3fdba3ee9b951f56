"""proofs_check claim c20 (approximate oracle): passes on the real figures and can fail."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import proofs_check.claims.c20_approximate as c20
from proofs_check.registry import Settings


def test_c20_quick_passes_with_measured_figures():
    outcome = c20.CLAIM.check(Settings())
    assert outcome.passed, outcome.details
    for figures in outcome.figures["models"].values():
        assert float(figures["max_error_over_C_eps"]) <= 1.05
        assert abs(float(figures["slope"]) - 1) < 1e-3
        assert abs(float(figures["worst_case_error_over_C_eps"]) - 1) < 1e-6
    assert outcome.figures["refusal_ambiguous_matchings"] > 0


def test_c20_fails_when_C_is_understated(monkeypatch):
    real = c20.sensitivity

    def understated(*args, **kwargs):
        sens = real(*args, **kwargs)
        return dataclasses.replace(sens, C_upper=sens.C_upper / 100)

    monkeypatch.setattr(c20, "sensitivity", understated)
    outcome = c20.CLAIM.check(Settings())
    assert not outcome.passed
    assert any("error/eps" in line for line in outcome.details)


def test_c20_takes_no_verdict_or_tolerance_from_the_library():
    tree = ast.parse(Path(c20.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("exactlearn") for alias in node.names}
    assert not imported & {"SLACK", "LINEAR_TOLERANCE", "sweep", "refusal_demo", "sharpness",
                           "parameter_error"}
    source = Path(c20.__file__).read_text()
    for name in ("failures()", "within_radius", ".holds", "bound_holds"):
        assert name not in source
