"""proofs_check claim c20 (approximate oracle): passes on the real figures and can fail."""

from __future__ import annotations

import dataclasses

from exactlearn.approx import evidence
from proofs_check.claims import all_claims
from proofs_check.registry import Settings


def c20():
    (claim,) = [c for c in all_claims() if c.key == "approximate-oracle"]
    return claim


def test_c20_quick_passes_with_measured_figures():
    outcome = c20().check(Settings())
    assert outcome.passed, outcome.details
    for figures in outcome.figures["models"].values():
        assert float(figures["max_error_over_C_eps"]) <= 1.05
        assert abs(float(figures["slope"]) - 1) < 1e-3
        assert abs(float(figures["worst_case_error_over_C_eps"]) - 1) < 1e-6
    assert outcome.figures["refusal_ambiguous_matchings"] > 0


def test_c20_fails_when_C_is_understated(monkeypatch):
    real = evidence.sensitivity

    def understated(*args, **kwargs):
        sens = real(*args, **kwargs)
        return dataclasses.replace(sens, C_upper=sens.C_upper / 100)

    monkeypatch.setattr(evidence, "sensitivity", understated)
    outcome = c20().check(Settings())
    assert not outcome.passed
    assert any("error/eps" in line for line in outcome.details)
