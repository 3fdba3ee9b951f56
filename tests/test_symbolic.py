"""The generic certificate (exactlearn.symbolic, issue 6): small cases only.

Bigger sizes run in ``python -m proofs_check --full`` (claim c40).
"""

from __future__ import annotations

import doctest
import random

import pytest
from flint import fmpq

import exactlearn.symbolic
import exactlearn.symbolic.certificate
import exactlearn.symbolic.field
import exactlearn.symbolic.model
from exactlearn import InconsistentAnswersError, Oracle, RecoveryError, learn
from exactlearn.learn import run_schedule
from exactlearn.symbolic import SymbolicField, SymbolicModel, SymbolicOracle, certify, specialise
from exactlearn.symbolic.ratfun import copy_terms


def random_point(F: SymbolicField, rng: random.Random, height: int = 30) -> list:
    n_e = len(F.e_names)
    return [fmpq(rng.randint(1, height), rng.randint(1, height)) if i < n_e
            else fmpq(rng.randint(-height, height), rng.randint(1, height))
            for i in range(n_e + len(F.v_names))]


# -- the field -------------------------------------------------------------------

def test_elements_are_reduced_and_equality_is_exact():
    F = SymbolicField(1, 2)
    E0, E1 = F.E[0][0][0], F.E[1][0][0]
    V0 = F.V[0][0]
    a = (V0 * E0 * E0 - V0) / (E0 - 1)          # = V0 (E0 + 1)
    assert a == V0 * E0 + V0
    assert a.den.is_one()
    assert (a - V0 * (E0 + 1)).is_zero()
    assert not (E0 / E1 == E1 / E0)


def test_division_and_distinctness_are_recorded_but_equality_is_not():
    F = SymbolicField(1, 2)
    E0, E1 = F.E[0][0][0], F.E[1][0][0]
    _ = F.E[0][0][0] / (E0 + E1)
    assert [(str(r.poly), r.kind) for r in F.ledger.records] == [("E_0_0_0 + E_1_0_0", "division")]
    assert F.equal(E0 * E1, E1 * E0) is True
    assert len(F.ledger.records) == 1            # a True equality relies on nothing
    assert F.equal(E0, E1) is False
    assert (str(F.ledger.records[-1].poly), F.ledger.records[-1].kind) == ("E_0_0_0 - E_1_0_0", "distinct")
    with pytest.raises(ZeroDivisionError):
        F.divide(E0, E0 - E0, "division")


def test_symbolic_oracle_is_the_numeric_model_at_every_point():
    """Specialising an answer of the symbolic oracle gives the numeric model's answer."""
    rng = random.Random(5)
    for d, H in [(1, 2), (2, 2)]:
        F = SymbolicField(d, H)
        oracle = SymbolicOracle(SymbolicModel(F))
        for _ in range(3):
            point = random_point(F, rng)
            model = specialise(F, point)
            for length in (1, 2, 4):
                tokens = [tuple(rng.randint(-2, 2) for _ in range(d)) for _ in range(length)]
                assert oracle(tokens).evaluate(point) == model(tokens)
        assert oracle.queries == 9 and oracle.max_length == 4


# -- copy functions over Q(E, V) -------------------------------------------------------

@pytest.mark.parametrize("x, z", [((1,), (-1,)), ((2,), (0,)), ((-1,), (2,))])
def test_copy_terms_read_rho_and_c_of_every_head(x, z):
    """ALGORITHM.md section 3: rho_h = prod E_h ** ((z - x) x^T), c_h = v_h^T (x - z)."""
    H = 2
    F = SymbolicField(1, H)
    oracle = SymbolicOracle(SymbolicModel(F))
    points = list(range(2 * H + 1))
    values = [oracle([z] * k + [x]) for k in points]
    terms = copy_terms(F, points, values, H)
    exponent = (z[0] - x[0]) * x[0]
    expected = set()
    for h in range(H):
        rho = F.E[h][0][0] ** exponent if exponent >= 0 else 1 / F.E[h][0][0] ** (-exponent)
        expected.add((rho, F.V[h][0] * (x[0] - z[0])))
    assert set(terms.terms) == expected
    assert terms.at_zero == values[0]
    assert terms.at_infinity == (F.V[0][0] + F.V[1][0]) * z[0]


def test_the_symbolic_run_refuses_a_wrong_number_of_heads():
    """Two indeterminate heads answer like no single head: the schedule says so, as on Q."""
    F = SymbolicField(1, 2)
    with pytest.raises(InconsistentAnswersError):
        run_schedule(SymbolicOracle(SymbolicModel(F)), 1, 1, field=F, seed=0)


# -- the certificate ------------------------------------------------------------------

REQUIRED = [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2)]


@pytest.mark.parametrize("d, H", REQUIRED)
def test_certificate_for_the_required_sizes(d, H):
    cert = certify(d, H, seed=0)
    assert cert.error is None
    assert cert.identity and sorted(cert.permutation) == list(range(H))
    assert cert.queries == 4 * H * d * d - 2 * H + 1          # the symbolic oracle's own log
    assert cert.learner_queries == cert.queries
    assert cert.max_length == 2 * H + 1
    assert cert.redraws == 0
    assert cert.factors and cert.all_nonzero
    assert all(not f.poly.is_zero() and f.degree >= 1 for f in cert.factors)
    assert cert.spot_check is not None and cert.spot_check.ok
    assert cert.passed
    # every head's residues are among the recorded conditions (a vanishing one would hide the head)
    n_e = H * d * d
    for h in range(H):
        assert any(f.recorded("residue") and any(f.poly.degrees()[n_e + h * d + a] > 0 for a in range(d))
                   for f in cert.factors)


def test_certificate_lean_schedule_counts():
    cert = certify(2, 1, seed=3, schedule="lean")
    assert cert.passed
    assert cert.queries == 2 * (2 * 1 + 1) + 3 * (2 * 1 - 1)


def test_certificate_fails_when_a_recorded_polynomial_is_zero():
    """The nonzero check can fail: a ledger that recorded an identically zero polynomial."""
    from exactlearn.symbolic.certificate import exceptional_factors
    from exactlearn.symbolic.ledger import Ledger, Record

    F = SymbolicField(1, 1)
    ledger = Ledger()
    ledger.records.append(Record(F.ctx.constant(0), "pivot", "test"))
    _, ok = exceptional_factors(ledger)
    assert ok is False
    with pytest.raises(ZeroDivisionError):
        Ledger().add(F.ctx.constant(0), "pivot", "test")


def test_certificate_json_is_complete():
    import json

    cert = certify(1, 2, seed=1)
    data = json.loads(json.dumps(cert.to_dict()))
    assert data["passed"] is True
    assert data["exceptional"]["count"] == len(cert.factors) == len(data["exceptional"]["polynomials"])
    assert sum(int(v) for v in data["exceptional"]["degrees"].values()) == len(cert.factors)


# -- planted models: a numeric model on the exceptional set ----------------------------------

def plant(F: SymbolicField, poly, rng: random.Random):
    """A rational point (positive E's) at which ``poly`` vanishes, solving for a variable of degree 1."""
    n_e = len(F.e_names)
    degrees = poly.degrees()
    for i in range(len(degrees)):
        if degrees[i] != 1:
            continue
        for _ in range(50):
            values = random_point(F, rng)
            values[i] = fmpq(0)
            b = poly(*values)
            values[i] = fmpq(1)
            a = poly(*values) - b
            if a == 0:
                continue
            values[i] = -b / a
            if i < n_e and values[i] <= 0:
                continue
            return values
    return None


def _same_configuration(where: str, place: str) -> bool:
    """``where`` of a comparison "A != B" with both sides in the copy function ``place``."""
    sides = where.split(" != ")
    return len(sides) == 2 and all(s.endswith(place) and " + " not in s for s in sides)


D, H, SEED = 2, 2, 0


@pytest.fixture(scope="module")
def certificate():
    cert = certify(D, H, seed=SEED)
    assert cert.passed
    return cert


@pytest.mark.parametrize("kind, symptom", [
    ("residue", "poles, fewer than"),
    ("pole difference", "poles, fewer than"),
    ("distinct", "two heads have equal residues"),
])
def test_planted_model_on_the_exceptional_set_is_detected(certificate, kind, symptom):
    """Plant a numeric model on the zero set of a polynomial the certificate recorded for
    measurement configuration j (a residue vanishing, two heads' poles coinciding, two heads'
    residues coinciding). The numeric learner with the same seed draws the same tokens, so
    it meets configuration j; it must report that configuration degenerate (a counted redraw
    with the reason) and never return a wrong model."""
    F = SymbolicField(D, H)
    rng = random.Random(f"plant:{kind}")
    planted = None
    for j in range(D * D):
        x, z, _ = certificate.configurations[j]
        place = f"copy function of (x={x}, z={z})"
        for f in certificate.factors:
            if f.positive_on_domain:
                continue
            if kind == "distinct":
                hit = any(k == kind and _same_configuration(w, place) for k, w in f.occurrences)
            else:
                hit = f.recorded(kind, place)
            if hit:
                point = plant(F, f.poly, rng)
                if point is not None:
                    planted = (j, f, point)
                    break
        if planted:
            break
    assert planted is not None, f"no plantable {kind} polynomial recorded"
    j, f, point = planted
    assert f.poly(*point) == 0                                   # the model is on the exceptional set
    truth = specialise(F, point)
    oracle = Oracle(truth)
    rec = learn(oracle, D, heads=H, seed=SEED)
    assert rec.model == truth.canonical()                        # never a wrong model
    assert rec.redraws >= 1
    assert any(r.startswith(f"configuration {j}:") and symptom in r for r in rec.redraw_reasons)
    assert rec.queries == oracle.queries > certificate.formula    # the extra queries are counted


def test_planted_model_at_a_generic_point_takes_the_certified_path(certificate):
    """The control: off the exceptional set the numeric run is the symbolic one (same tokens, no redraw)."""
    F = SymbolicField(D, H)
    rng = random.Random("generic")
    point = random_point(F, rng)
    assert all(f.poly(*point) != 0 for f in certificate.factors)
    truth = specialise(F, point)
    rec = learn(Oracle(truth), D, heads=H, seed=SEED)
    assert rec.model == truth.canonical() and rec.redraws == 0 and rec.queries == certificate.formula
    assert sorted((c.x, c.z, c.kind) for c in rec.configurations) == sorted(certificate.configurations)


def test_exceptional_set_over_approximates(certificate):
    """A polynomial recorded only as an elimination pivot of the symbolic reconstruction is
    sufficient, not necessary: the numeric learner (which reconstructs by the EEA over Q)
    is not disturbed on its zero set. The certificate claims validity off the union; it does
    not claim failure on it."""
    F = SymbolicField(D, H)
    rng = random.Random("pivot")
    pivots = [f for f in certificate.factors if set(f.kinds) == {"pivot"} and not f.positive_on_domain]
    assert pivots
    point = next(p for p in (plant(F, f.poly, rng) for f in pivots) if p is not None)
    assert any(f.poly(*point) == 0 for f in pivots)
    truth = specialise(F, point)
    rec = learn(Oracle(truth), D, heads=H, seed=SEED)
    assert rec.model == truth.canonical() and rec.redraws == 0


def test_a_model_with_fewer_heads_is_refused_not_misread():
    """On the exceptional set in the strongest way (two heads equal): a clear RecoveryError."""
    rng = random.Random(2)
    F = SymbolicField(1, 2)
    point = random_point(F, rng)
    point[1] = point[0]                                          # E_1 = E_0: the heads merge
    truth = specialise(F, point)
    assert truth.num_canonical_heads == 1
    with pytest.raises(RecoveryError):
        learn(Oracle(truth), 1, heads=2, seed=0)


def test_module_docstrings():
    for module in (exactlearn.symbolic, exactlearn.symbolic.field, exactlearn.symbolic.model,
                   exactlearn.symbolic.certificate):
        failures, tried = doctest.testmod(module)
        assert tried > 0 and failures == 0


def test_cli_certify(tmp_path, capsys):
    import json

    from exactlearn.cli import main

    out = tmp_path / "cert.json"
    assert main(["certify", "--d", "1", "--heads", "2", "--seed", "1", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "identity verified" in text and "CERTIFIED" in text
    assert json.loads(out.read_text())["queries"] == 5


def test_proofs_check_claim_passes_and_can_fail(monkeypatch):
    from proofs_check.claims import c40_generic_certificate as claim
    from proofs_check.registry import Settings

    monkeypatch.setattr(claim, "QUICK", [(1, 2), (2, 1)])
    outcome = claim.CLAIM.check(Settings())
    assert outcome.passed and not outcome.details
    assert [(c["d"], c["H"], c["queries"]) for c in outcome.figures["cases"]] == [(1, 2, 5), (2, 1, 15)]

    real_case = claim._case

    def wrong_count(task):
        figures = real_case(task)
        figures["queries"] += 1          # as if the oracle had answered one query more
        return figures

    monkeypatch.setattr(claim, "_case", wrong_count)
    outcome = claim.CLAIM.check(Settings())
    assert not outcome.passed and len(outcome.details) == 2


def test_certify_refuses_bad_arguments():
    from exactlearn import InvalidArgumentError

    for kwargs in ({"d": 0, "heads": 1}, {"d": 1, "heads": True}, {"d": 1, "heads": 1, "schedule": "fast"}):
        with pytest.raises(InvalidArgumentError):
            certify(**kwargs)
