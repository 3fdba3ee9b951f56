"""exactlearn.numberfield.recognise: elements of K from their real values (proposals only)."""

from __future__ import annotations

from flint import arb, ctx

from exactlearn import NumberField
from exactlearn.numberfield.recognise import recognise, scale_bits, value


def test_elements_are_recognised_from_enough_digits():
    K = NumberField("a^4 - 10*a^2 + 1", root=3.1)
    x = K("3/7 - 2*a/5 + 11*a^3/13")
    with ctx.workprec(600):
        alpha = K.root.ball(600)
        assert recognise(K, value(x, alpha), alpha, scale_bits(4, 64)) == x
        # too few digits: no relation of that size fits, or a wrong one: never the claim of an exact answer
        wrong = recognise(K, value(x, alpha) + arb(10) ** -5, alpha, scale_bits(4, 64))
        assert wrong != x


def test_values_are_balls_at_the_root():
    K = NumberField("a^2 - 2", root=1.414)
    with ctx.workprec(100):
        assert value(K("1 + a"), K.root.ball(90)).overlaps(1 + arb(2).sqrt())
        assert value(K(0), K.root.ball(90)) == 0
