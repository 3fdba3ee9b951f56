"""proofs_check claim 50 (the one-layer Transformer): passes, and fails on planted faults."""

from __future__ import annotations

import proofs_check.claims.c50_transformer as c50
from exactlearn.transformer import Transformer
from proofs_check.registry import Settings


def test_quick_check_passes():
    outcome = c50.check(Settings())
    assert outcome.passed, outcome.details
    assert outcome.figures["wrong models"] == 0 and outcome.figures["solved (functionally equivalent)"] >= 10


def test_a_wrong_formula_fails(monkeypatch):
    monkeypatch.setattr(c50, "abstract_formula", lambda d, H: 4 * H * d * d - 2 * H + 2)
    outcome = c50.check(Settings())
    assert not outcome.passed and any("2(4Hd^2-2H+1)" in line for line in outcome.details)


def test_a_wrong_model_fails(monkeypatch):
    real = c50.learn_transformer

    def wrong(oracle, d, **kwargs):
        rec = real(oracle, d, **kwargs)
        m = rec.model
        rec.model = Transformer(m.exp_Ws, m.Vs, m.U, (m.a[0] * 2,) + m.a[1:])
        return rec

    monkeypatch.setattr(c50, "learn_transformer", wrong)
    outcome = c50.check(Settings())
    assert not outcome.passed and any("WRONG MODEL" in line for line in outcome.details)
