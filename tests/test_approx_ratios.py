"""Rational copy ratios (approx.core.counts ``copy_counts="ratios"``): the points, their queries
``(z,)*k + (x,)*m``, the fit at rational ``t = k/m`` (approx.core.copyfun) and a run learned with them."""

from __future__ import annotations

from fractions import Fraction

import pytest
from flint import arb

from exactlearn import MultiHeadAttention
from exactlearn.approx import NoisyOracle, learn_approx, parameter_error
from exactlearn.approx.core import field as approx_field
from exactlearn.approx.core.balls import working_precision
from exactlearn.approx.core.copyfun import Uncertified, certify_copy_function
from exactlearn.approx.core.counts import (
    geometric_counts,
    query_length,
    ratio_points,
    ratio_query,
    resolve_counts,
)
from exactlearn.errors import InvalidArgumentError, RecoveryError
from exactlearn.settings import DEFAULT_SETTINGS


@pytest.mark.parametrize("heads", [1, 2, 4, 8])
def test_ratio_points_are_log_spaced_both_sides_of_one(heads):
    points = ratio_points(heads)
    top = DEFAULT_SETTINGS.approx.ratio_top
    assert points[0] == 0 and len(points) == 3 * heads + 1 and list(points) == sorted(set(points))
    assert points[1] == Fraction(1, top) and points[-1] == top
    # symmetric about t = 1: t and 1/t both sampled
    assert [Fraction(1) / t for t in points[1:]] == list(reversed(points[1:]))
    assert max(query_length(t) for t in points) == top + 1
    assert all(isinstance(t, int) or t.denominator > 1 for t in points)  # integers as int


def test_the_query_of_a_ratio_ends_with_m_copies_of_x():
    assert ratio_query("x", "z", Fraction(3, 2)) == ("z", "z", "z", "x", "x")
    assert ratio_query("x", "z", Fraction(1, 3)) == ("z", "x", "x", "x")
    assert ratio_query("x", "z", 0) == ("x",)


def test_resolve_counts_ratios_and_auto():
    assert resolve_counts("ratios", 4, 2) == ratio_points(2)
    assert resolve_counts("auto", 4, 4) is None  # the paper's counts where float64 meets the targets
    below = DEFAULT_SETTINGS.approx.ratio_heads - 1
    if below >= DEFAULT_SETTINGS.approx.geometric_heads:
        assert resolve_counts("auto", 8, below) == geometric_counts(below)
    top = DEFAULT_SETTINGS.approx.ratio_heads
    assert resolve_counts("auto", top, top) == ratio_points(top)
    explicit = (0, Fraction(1, 2), 1, Fraction(3, 2), Fraction(4, 1))
    assert resolve_counts(explicit, 2, 2) == (0, Fraction(1, 2), 1, Fraction(3, 2), 4)
    with pytest.raises(ValueError):
        resolve_counts((0, Fraction(1, 2), Fraction(1, 3), 1, 2), 2, 2)  # not increasing


def _values(points, rhos, cs, a="0.5", eps="1e-40"):
    out = []
    for t in points:
        k, m = (t, 1) if isinstance(t, int) else (t.numerator, t.denominator)
        total = arb(a) + sum((c * m / (m + k * rho) for c, rho in zip(cs, rhos)), arb(0))
        out.append(total + arb(0, eps))
    return out


def test_the_fit_at_rational_points_resolves_poles_on_both_sides_of_one():
    # rho = 1/50 and 30: poles at -50 and -1/30, one on each side of t = 1
    with working_precision(256):
        rhos, cs = [arb(1) / 50, arb(30)], [arb("0.75"), arb("-1.25")]
        points = ratio_points(2)
        fit = certify_copy_function(points, _values(points, rhos, cs), 2, rigorous=False)
        for (rho, c), true_rho, true_c in zip(fit.terms, rhos, cs):
            assert abs(rho.mid() / true_rho - 1) < arb("1e-30")
            assert abs(c.mid() - true_c) < arb("1e-30")
        # planted fault: the same answers fitted as if one were asked at t = 1/5 rather than 2/11
        assert points[3] == Fraction(2, 11)
        wrong = [*points[:3], Fraction(1, 5), *points[4:]]
        with pytest.raises(Uncertified, match="no copy function"):
            certify_copy_function(wrong, _values(points, rhos, cs), 2, rigorous=False)


def test_a_model_is_learned_with_ratio_copy_counts_and_the_log_shows_the_k_m_queries():
    truth = MultiHeadAttention.random(2, 2, seed=0)
    oracle = NoisyOracle(truth, eps="1e-40", seed=0)
    asked = []

    def logged(X):
        asked.append(tuple(tuple(t) for t in X))
        return oracle(X)

    rec = learn_approx(logged, 2, heads=2, guide=None, copy_counts="ratios", eps="1e-40")
    assert rec.copy_counts == ratio_points(2)
    assert float(parameter_error(rec, truth).max_abs) < 1e-30
    # every query counted; the longest is 1/4096 or 4096, K + 1 tokens, and is reported
    assert rec.queries == len(asked) and rec.max_length == max(map(len, asked)) == rec.planned_max_length
    # queries (z,)*k + (x,)*m with m > 1: the final token repeated, after k copies of another
    repeated = [q for q in asked if len(q) > 2 and q[-1] == q[-2] and q[0] != q[-1]]
    assert repeated
    m = next(i for i in range(1, len(repeated[0]) + 1) if repeated[0][-i] != repeated[0][-1]) - 1
    k = len(repeated[0]) - m
    assert Fraction(k, m) in rec.copy_counts
    assert rec.to_dict()["copy_counts"][1] == "1/4096"


def test_asking_k_copies_then_one_x_at_a_ratio_fails(monkeypatch):
    # planted fault: the field asks (z,)*k + (x,) for t = k/m, so the answers are R(k), not R(k/m)
    def wrong(self, x, z, t):
        return [z] * (t if isinstance(t, int) else t.numerator) + [x]

    monkeypatch.setattr(approx_field.RealBalls, "copies", wrong)
    truth = MultiHeadAttention.random(2, 2, seed=0)
    with pytest.raises(RecoveryError):
        learn_approx(NoisyOracle(truth, eps="1e-40", seed=0), 2, heads=2, guide=None, copy_counts="ratios")


@pytest.mark.parametrize("counts", [[0, 1, 2, 3, 10**7], [0, Fraction(1, 10**7), 1, 2, 3]])
def test_copy_counts_asking_queries_above_the_length_limit_are_refused_before_any_query(counts):
    """A copy count ``k`` asks ``k + 1`` tokens, a ratio ``k/m`` asks ``k + m``: above
    ``Limits.query_length`` the run is refused before its first query (it used to send 10^7 tokens)."""
    calls = []

    def oracle(tokens):
        calls.append(len(tokens))
        return 0

    oracle.eps = "1e-20"  # type: ignore[attr-defined]
    with pytest.raises(InvalidArgumentError, match=r"10000001 tokens, above the limit .*query_length"):
        learn_approx(oracle, 2, heads=2, copy_counts=counts, guide=None, scale=1)
    assert calls == []
