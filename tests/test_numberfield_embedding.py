"""exactlearn.numberfield.embedding: the chosen real root, isolated and refined exactly."""

from __future__ import annotations

import pytest
from flint import arb, ctx, fmpq, fmpq_poly

from exactlearn import NumberFieldError
from exactlearn.numberfield.embedding import RealRoot, real_root_intervals

SQRT2 = fmpq_poly([-2, 0, 1])
QUARTIC = fmpq_poly([1, 0, -10, 0, 1])  # roots +-sqrt(2) +- sqrt(3)


def test_intervals_isolate_every_real_root_in_order():
    intervals = real_root_intervals(QUARTIC)
    assert len(intervals) == 4
    for lo, hi in intervals:
        assert QUARTIC(lo) * QUARTIC(hi) < 0  # a sign change: one root inside (exact)
    assert all(a[1] <= b[0] for a, b in zip(intervals, intervals[1:]))


@pytest.mark.parametrize("spec, index", [(1.414, 1), (-1.4, 0), ((1, 2), 1), (("1/2", 3), 1), ("-1.41", 0)])
def test_a_root_is_chosen_by_an_approximation_or_an_interval(spec, index):
    assert RealRoot.choose(SQRT2, spec).index == index


@pytest.mark.parametrize("spec, why", [
    (0, "isolates no real root"), (100, "isolates no real root"), ((0, 1), "holds 0 real roots"),
    ((-2, 2), "holds 2 real roots"), (None, "has 2 real roots"), ((2, 1), "empty"), ((1, 2, 3), "pair"),
    (float("nan"), "not a finite number"),
])
def test_a_root_specification_must_isolate_exactly_one_root(spec, why):
    with pytest.raises(NumberFieldError, match=why):
        RealRoot.choose(SQRT2, spec)


def test_one_real_root_needs_no_specification_and_none_is_refused():
    assert RealRoot.choose(fmpq_poly([-2, 0, 0, 1]), None).index == 0
    assert RealRoot.choose(fmpq_poly([-2, 0, 0, 1]), 100).index == 0  # nothing to confuse it with
    with pytest.raises(NumberFieldError, match="no real root"):
        RealRoot.choose(fmpq_poly([1, 0, 1]), None)


def test_balls_contain_the_root_at_any_precision():
    r = RealRoot.choose(QUARTIC, 3.1)
    for prec in (64, 300, 2000):
        with ctx.workprec(prec + 20):
            ball = r.ball(prec)
            assert ball.rad() < arb(2) ** -prec
            sqrt2, sqrt3 = arb(2).sqrt(), arb(3).sqrt()
            assert ball.overlaps(sqrt2 + sqrt3)


def test_signs_are_exact_even_for_tiny_values():
    r = RealRoot.choose(SQRT2, 1.414)
    assert r.sign_of(fmpq_poly([-3, 2])) == -1 and r.sign_of(fmpq_poly([3, -2])) == 1
    # 665857/470832 - sqrt(2) is about 1.6e-12 (a convergent of sqrt 2): decided by raising the precision
    assert r.sign_of(fmpq_poly([fmpq(665857, 470832), -1])) == 1
    assert r.sign_of(fmpq_poly([fmpq(-665857, 470832), 1])) == -1
    assert r.sign_of(fmpq_poly([])) == 0


def test_a_rational_root_is_exact():
    r = RealRoot.choose(fmpq_poly([-3, 1]), None)
    assert (r.lo, r.hi) == (3, 3) and str(r) == "3" and r.sign_of(fmpq_poly([-3, 1])) == 0
    assert float(RealRoot.choose(SQRT2, 1.4)) == pytest.approx(2**0.5)
