"""exactlearn.numberfield.kpoly: polynomials over K, norms, roots in K (identified, and Trager's)."""

from __future__ import annotations

import pytest
from flint import fmpq_poly

from exactlearn import NumberField, ReconstructionError
from exactlearn.numberfield.kpoly import KPolynomial, norm, roots_in_field, trager_roots

Q2 = NumberField("a^2 - 2", root=1.414)
CUBIC = NumberField("a^3 - 2")


def from_roots(K, roots):
    q = KPolynomial(K, [1])
    for r in roots:
        q = q.times(KPolynomial(K, [-r, 1]))
    return q


def test_division_and_gcd():
    K = Q2
    p = from_roots(K, [K("a"), K("1 + a"), K(2)])
    g = from_roots(K, [K("a"), K(5)])
    quotient, remainder = p.divmod(g)
    assert (quotient.times(g) + remainder).c == p.c and remainder.degree() < g.degree()
    assert p.gcd(g).c == from_roots(K, [K("a")]).c
    assert p.derivative()(K("a")) == (K("a") - K("1 + a")) * (K("a") - 2)
    assert p.shift(K(1))(K("a") - 1) == 0


def test_the_norm_is_the_product_of_the_conjugates():
    q = KPolynomial(Q2, [Q2(1), Q2("1 + a")])  # 1 + (1 + a) k and its conjugate 1 + (1 - a) k
    assert norm(q) == fmpq_poly([1, 2, -1])


@pytest.mark.parametrize("K, roots", [
    (Q2, ["-1", "1/7 - 2*a/7", "a - 3"]),
    (CUBIC, ["-a", "a^2/3", "2", "1 + a"]),
    (NumberField("a - 5"), ["-1/2", "-1/3"]),
])
def test_split_polynomials_give_their_roots_both_ways(K, roots):
    expected = sorted(K(r) for r in roots)
    q = from_roots(K, [K(r) for r in roots])
    assert sorted(roots_in_field(q)) == expected
    assert sorted(trager_roots(q)) == expected
    assert sorted(roots_in_field(q.scale(K("3 + a")))) == expected


@pytest.mark.parametrize("q, why", [
    (KPolynomial(Q2, [-3, 0, 1]), "does not split"),
    (KPolynomial(Q2, [1, 0, 1]), "does not split"),
    (KPolynomial(Q2, [1, 2, 1]), "multiple root"),
])
def test_polynomials_that_do_not_split_are_refused(q, why):
    with pytest.raises(ReconstructionError, match=why):
        roots_in_field(q)
    with pytest.raises(ReconstructionError, match=why if why != "does not split" else "split|simple"):
        trager_roots(q)


def test_a_cubic_factor_over_the_cubic_field_is_refused():
    # t^3 - 3 has one real root, 3^(1/3), not in Q(2^(1/3)): Trager's norm has a factor of degree 9
    with pytest.raises(ReconstructionError, match="not in the field"):
        trager_roots(KPolynomial(CUBIC, [-3, 0, 0, 1]))
    with pytest.raises(ReconstructionError, match="not in the field"):
        roots_in_field(KPolynomial(CUBIC, [-3, 0, 0, 1]))


def test_wrong_proposals_are_checked_and_trager_decides(monkeypatch):
    from exactlearn.numberfield import kpoly

    original = kpoly.recognise
    # plant a fault: every identified root is off by 10^-30
    monkeypatch.setattr(kpoly, "recognise",
                        lambda *a: None if (r := original(*a)) is None else r + Q2(1) / 10**30)
    roots = [Q2("-1"), Q2("1/7 - 2*a/7")]
    assert sorted(roots_in_field(from_roots(Q2, roots), max_bits=128)) == sorted(roots)
