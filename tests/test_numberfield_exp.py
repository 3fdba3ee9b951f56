"""exactlearn.numberfield.exp: exp(W) exactly in K from the measured rho."""

from __future__ import annotations

import random

import pytest
from flint import fmpq, fmpq_mat

from exactlearn import NumberField, ReconstructionError
from exactlearn.chain import TokenChain
from exactlearn.numberfield import exp as exp_module
from exactlearn.numberfield.exp import exp_matrix
from exactlearn.schedule import TokenSampler

Q2 = NumberField("a^2 - 2", root=1.414)


def rhos_of(K, design, entries):
    out = []
    for j in range(design.nrows()):
        total = K(1)
        for r, e in enumerate(entries):
            if design[j, r] != 0:
                total = total * e ** int(design[j, r].p)
        out.append(total)
    return out


def test_a_unit_is_found_where_a_coprime_base_could_not():
    assert exp_matrix(Q2, fmpq_mat([[2]]), [Q2("1 + a") ** 2]) == ((Q2("1 + a"),),)
    assert exp_matrix(Q2, fmpq_mat([[-3]]), [Q2("-1 + a") ** -3]) == ((Q2("-1 + a"),),)


@pytest.mark.parametrize("K, d", [(Q2, 2), (NumberField("a^3 - 2"), 3),
                                  (NumberField("a^4 - 10*a^2 + 1", root=3.1), 2)])
def test_exp_of_a_chain_design_is_exact(K, d):
    chain = TokenChain(d, d * d, TokenSampler(d, 2, random.Random(7)))
    chain.draw()
    rng = random.Random(3)
    entries = []
    while len(entries) < d * d:
        e = K.from_coordinates([fmpq(rng.randint(-30, 30), rng.randint(1, 30)) for _ in range(K.degree)])
        if e.sign() > 0:
            entries.append(e)
    design = chain.weight_design
    assert abs(design.det()) > 1  # not unimodular: the exponents of rho in exp(W) are not integers
    found = exp_matrix(K, design, rhos_of(K, design, entries))
    assert [e for row in found for e in row] == entries


@pytest.mark.parametrize("rho", ["3", "1 + a"])
def test_exp_outside_the_field_is_refused(rho):
    # exp(W)^2 = 3 or 1 + sqrt 2: neither sqrt 3 nor sqrt(1 + sqrt 2) is in Q(sqrt 2)
    with pytest.raises(ReconstructionError, match="not in Q"):
        exp_matrix(Q2, fmpq_mat([[2]]), [Q2(rho)], max_bits=256)


def test_a_wrong_proposal_never_passes_the_exact_check(monkeypatch):
    # plant a fault: the recognition proposes 1 + 10^-40 times the right answer
    original = exp_module.recognise
    monkeypatch.setattr(exp_module, "recognise",
                        lambda *args: None if (x := original(*args)) is None else x * (1 + fmpq(1, 10**40)))
    with pytest.raises(ReconstructionError, match="not in"):
        exp_matrix(Q2, fmpq_mat([[2]]), [Q2("1 + a") ** 2], max_bits=64)


def test_shapes_are_checked():
    with pytest.raises(ValueError, match="d\\^2 x d\\^2"):
        exp_matrix(Q2, fmpq_mat([[1, 0], [0, 1]]), [Q2(1), Q2(1)])
