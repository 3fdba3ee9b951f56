"""exactlearn.demos.approx (exactlearn approx): the verdicts it prints are computed from the measured rows."""

from __future__ import annotations

from exactlearn.demos.approx import _default_target


def test_the_default_settings_verdict_counts_only_rows_within_both_targets():
    rows = [
        {"total_queries": 373, "formula": 249, "rel_param": "5e-7"},   # 1.5x exactly: met
        {"total_queries": 374, "formula": 249, "rel_param": "5e-7"},   # one query over
        {"total_queries": 300, "formula": 249, "rel_param": "2e-6"},   # error too large
        {"total_queries": 125, "formula": 125, "rel_param": "1e-6"},
    ]
    assert _default_target(rows).endswith("met on 2 of 4 layers above")
    assert len("  " + _default_target(rows)) <= 80
