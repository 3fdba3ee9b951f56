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
from exactlearn import InconsistentAnswersError, Oracle, ReconstructionError, RecoveryError, learn
from exactlearn.consistency import predicts
from exactlearn.learn import run_schedule
from exactlearn.logspace import LogMatrix
from exactlearn.schedule import fallback_query_count, lean_query_count, link_kind
from exactlearn.states import Why
from exactlearn.symbolic import (
    SymbolicField,
    SymbolicLogMatrix,
    SymbolicModel,
    SymbolicOracle,
    certify,
    specialise,
)
from exactlearn.symbolic.certificate import chain
from exactlearn.symbolic.field import e_name
from exactlearn.symbolic.ratfun import copy_terms


def random_point(F: SymbolicField, rng: random.Random, height: int = 30) -> list:
    """Positive E's and nonzero V's (a zero entry of v is itself a degeneracy of some configurations)."""
    n_e = len(F.e_names)
    return [fmpq(rng.randint(1, height), rng.randint(1, height)) if i < n_e
            else fmpq(rng.choice((-1, 1)) * rng.randint(1, height), rng.randint(1, height))
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
    V0, V1 = F.V[0][0], F.V[1][0]
    _ = F.E[0][0][0] / (E0 + E1)
    assert [(str(r.poly), r.kind) for r in F.ledger.records] == [("E_0_0_0 + E_1_0_0", "division")]
    assert F.equal(E0 * E1, E1 * E0, Why.POLE_PRODUCT) is True
    assert len(F.ledger.records) == 1            # a True equality relies on nothing
    # the kind of a False comparison is why the schedule compared (Why)
    # two poles: how a link's pairing rejects a candidate
    assert F.equal(E0, E1, Why.POLE_PRODUCT) is False
    last = F.ledger.records[-1]
    assert (str(last.poly), last.kind) == ("E_0_0_0 - E_1_0_0", "pole product")
    assert F.ledger.records[-1].where == "E_0_0_0 != E_1_0_0"
    c0, c1 = F.element(0) + V0, F.element(0) + V1
    c0.label, c1.label = "c[0] of somewhere", "c[1] of elsewhere"
    assert F.equal(c0, c1, Why.RESIDUE_COMBINATION) is False
    assert (F.ledger.records[-1].kind, F.ledger.records[-1].where) == (
        "residue combination", "c[0] of somewhere != c[1] of elsewhere")
    assert F.equal(V0, F.element(0), Why.DISTINCT) is False
    assert (F.ledger.records[-1].kind, F.ledger.records[-1].where) == ("distinct", "V_0_0 != 0")
    assert F.equal(V1, F.element(0), Why.CONSISTENT) is False  # a failed consistency check
    assert F.ledger.records[-1].kind == "distinct"
    with pytest.raises(ZeroDivisionError):
        F.divide(E0, E0 - E0, "division")


def test_rho_of_a_learned_weight_is_the_laurent_monomial():
    """Field.rho: exp(left^T W right) for the learned W_h = log E_h, and the symbolic twin of an
    irrational exp."""
    F = SymbolicField(2, 1)
    names = [[e_name(0, a, b) for b in range(2)] for a in range(2)]
    one = fmpq(1)
    W = LogMatrix(F.e_names, tuple(tuple(tuple(one if F.e_names[l] == names[a][b] else fmpq(0)
                                               for l in range(4)) for b in range(2)) for a in range(2)))
    assert SymbolicLogMatrix is LogMatrix and W.is_log_of(names) and str(W.entry(0, 1)) == "log(E_0_0_1)"
    E = F.E[0]
    # left^T W right with left = (1, -2), right = (2, 1): entries 2, 1, -4, -2 of log E
    assert F.rho(W, (1, -2), (2, 1)) == E[0][0] ** 2 * E[0][1] / (E[1][0] ** 4 * E[1][1] ** 2)
    assert F.rho(W, (0, 0), (2, 1)) == 1
    half = LogMatrix(F.e_names, tuple(tuple(tuple(c / 2 for c in entry) for entry in row)
                                      for row in W.coefficients))
    assert F.rho(half, (1, 0), (2, 0)) == E[0][0]
    with pytest.raises(ReconstructionError):
        F.rho(half, (1, 0), (1, 0))              # exp(log(E)/2) is not in Q(E, V)


def test_the_learners_check_of_answers_runs_over_the_symbolic_field():
    """consistency.predicts (how the learner checks dropped configurations) over Q(E, V):
    Field.rho, element * int, + int and / give back every answer of every configuration."""
    F = SymbolicField(2, 2)
    run = run_schedule(SymbolicOracle(SymbolicModel(F)), 2, 2, field=F, seed=0)
    weights, values = [W for W, _ in run.result], [v for _, v in run.result]
    u = [values[0][a] + values[1][a] for a in range(2)]
    for cfg in run.configs + list(run.links.values()):
        assert predicts(F, weights, values, u, cfg)
    wrong = list(run.configs[1].values)
    wrong[-1] = wrong[-1] + 1
    cfg = run.configs[1]
    cfg.values, saved = wrong, cfg.values
    assert not predicts(F, weights, values, u, cfg)
    cfg.values = saved


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
    """docs/algorithm.md section 3: rho_h = prod E_h ** ((z - x) x^T), c_h = v_h^T (x - z)."""
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
#: issue 6 also asks for a case with d = 3 or H = 3 (both are well under a second)
LARGER = [(3, 1), (2, 3)]


@pytest.mark.parametrize("d, H", REQUIRED + LARGER)
def test_certificate_for_the_required_sizes(d, H):
    cert = certify(d, H, seed=0)
    assert cert.error is None
    assert cert.identity and sorted(cert.permutation) == list(range(H))
    assert cert.queries == 4 * H * d * d - 2 * H + 1          # the symbolic oracle's own log
    assert cert.learner_queries == cert.queries
    assert cert.max_length == 2 * H + 1
    assert cert.redraws == 0 and cert.dropped == 0 and not cert.fallback
    assert cert.factors and cert.all_nonzero
    assert all(not f.poly.is_zero() and f.degree >= 1 for f in cert.factors)
    assert cert.spot_check is not None and cert.spot_check.ok
    assert cert.passed
    # the chain: d^2 measurement configurations, then one matching configuration per link, of the link's kind
    n = d * d
    assert cert.links == n - 1
    assert [k for _, _, k in cert.configurations] == (
        ["measurement"] * n + [f"matching (shared {link_kind(j, d)})" for j in range(1, n)])
    # every head's residues are among the recorded conditions (a vanishing one would hide the head)
    n_e = H * d * d
    for h in range(H):
        assert any(f.recorded("residue") and any(f.poly.degrees()[n_e + h * d + a] > 0 for a in range(d))
                   for f in cert.factors)
    # every link's pairing relied on its rejected candidates: pole products (and, for a shared a,
    # the residues compared first); with one head there is nothing to reject
    for j in range(1, n):
        x, z, _ = cert.configurations[n + j - 1]
        rejected_by_poles = any(f.recorded("pole product", "!= rho[") and
                                any(w.endswith(f"of copy function of (x={x}, z={z})") for w in f.where)
                                for f in cert.factors)
        assert rejected_by_poles == (H > 1)
        if link_kind(j, d) == "a":
            xj, zj, _ = cert.configurations[j]
            assert any(f.recorded("residue combination", f"copy function of (x={xj}, z={zj})")
                       for f in cert.factors) == (H > 1)


def test_certificate_lean_schedule_counts():
    cert = certify(2, 1, seed=3, schedule="lean")
    assert cert.passed
    assert cert.queries == lean_query_count(2, 1) == 2 * (2 * 1 + 1) + 3 * (2 * 1 - 1)
    assert cert.links == 1 and not cert.fallback


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

    cert = certify(2, 2, seed=1)
    data = json.loads(json.dumps(cert.to_dict()))
    assert data["passed"] is True
    assert data["exceptional"]["count"] == len(cert.factors) == len(data["exceptional"]["polynomials"])
    assert sum(int(v) for v in data["exceptional"]["degrees"].values()) == len(cert.factors)
    assert (data["links"], data["dropped"], data["fallback"]) == (3, 0, False)
    assert {"pole product", "residue combination"} <= set(data["exceptional"]["kinds"])
    assert set(data["exceptional"]["kind_meanings"]) >= set(data["exceptional"]["kinds"])


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


def equal_values_point(F: SymbolicField, rng: random.Random) -> list:
    """A random point at which head 1 has the same v as head 0 (different W)."""
    point = random_point(F, rng)
    n_e, d = len(F.e_names), F.d
    for a in range(d):
        point[n_e + d + a] = point[n_e + a]
    return point


D, H, SEED = 2, 2, 0


@pytest.fixture(scope="module")
def certificate():
    cert = certify(D, H, seed=SEED)
    assert cert.passed
    return cert


def place(cert, i: int) -> str:
    x, z, _ = cert.configurations[i]
    return f"copy function of (x={x}, z={z})"


@pytest.mark.parametrize("at, kind, symptom", [
    ("measurement", "residue", "1 pole, fewer than the 2 heads"),
    ("measurement", "pole difference", "1 pole, fewer than the 2 heads"),
    ("matching", "residue", "its matching configuration has 1 pole, fewer than 2"),
])
def test_planted_model_on_the_exceptional_set_is_detected(certificate, at, kind, symptom):
    """Plant a numeric model on the zero set of a polynomial the certificate recorded for one
    configuration: a residue of measurement configuration j vanishing, two of its heads' poles
    coinciding, or a residue c_{j-1,h} + c_{j,h} of the matching configuration of a shared-x link j
    vanishing (recorded nowhere else). The numeric learner with the same seed draws the same
    tokens, so it meets that configuration; it must report configuration j degenerate (a counted
    redraw with the reason) and never return a wrong model."""
    F = SymbolicField(D, H)
    rng = random.Random(f"plant:{at}:{kind}")
    n = D * D
    measurements = [place(certificate, i) for i in range(n)]
    if at == "measurement":
        candidates = [(j, measurements[j]) for j in range(n)]
    else:  # the matching configuration of link j sits at position n + j - 1 of the chain
        candidates = [(j, place(certificate, n + j - 1)) for j in range(1, n) if link_kind(j, D) == "x"]
    planted = None
    for j, where in candidates:
        for f in certificate.factors:
            if f.positive_on_domain or not f.recorded(kind, where):
                continue
            if at == "matching" and any(m in w for m in measurements for w in f.where):
                continue
            point = plant(F, f.poly, rng)
            if point is not None:
                planted = (j, f, point)
                break
        if planted:
            break
    assert planted is not None, f"no plantable {kind} polynomial recorded at a {at} configuration"
    j, f, point = planted
    assert f.poly(*point) == 0                                   # the model is on the exceptional set
    truth = specialise(F, point)
    assert truth.num_canonical_heads == H
    oracle = Oracle(truth)
    rec = learn(oracle, D, heads=H, seed=SEED)
    assert rec.model == truth.canonical()                        # never a wrong model
    assert rec.redraws >= 1
    assert f"configuration {j}: {symptom}" in rec.redraw_reasons
    assert rec.queries == oracle.queries > certificate.formula    # the extra queries are counted


def test_two_heads_with_equal_v_are_learned_exactly(certificate):
    """Equal residues are no degeneracy of the chained schedule (docs/algorithm.md, the correction).

    With v_1 = v_0 the model lies on every 'residue combination' polynomial the certificate
    recorded (the shared-a link compared c_{j-1,h} with c_{j,h'} before the poles), and the two
    heads have equal residues in every configuration. The numeric learner pairs them by their
    poles: the certified chain, no redraw, the exact model. The exceptional set is sufficient,
    not necessary."""
    F = SymbolicField(D, H)
    point = equal_values_point(F, random.Random("equal v"))
    combos = [f for f in certificate.factors if f.recorded("residue combination")]
    assert combos and all(f.poly(*point) == 0 for f in combos)
    truth = specialise(F, point)
    assert truth.num_canonical_heads == H and truth.heads[0].v == truth.heads[1].v
    oracle = Oracle(truth)
    rec = learn(oracle, D, heads=H, seed=SEED)
    assert rec.model == truth.canonical()
    assert rec.redraws == 0 and rec.queries == oracle.queries == certificate.formula
    assert chain(rec.configurations) == certificate.configurations


def test_lean_schedule_detects_equal_v_and_falls_back():
    """The lean schedule's certificate records that the learned v differ (it labels later
    configurations by predicted residues). A model with v_1 = v_0 is on that polynomial; the
    numeric lean learner sees it before querying, links the later configurations like the paper's
    schedule (its fallback, queries counted) and returns the exact model."""
    cert = certify(D, H, seed=SEED, schedule="lean")
    assert cert.passed and not cert.fallback
    F = SymbolicField(D, H)
    point = equal_values_point(F, random.Random("equal v, lean"))
    recorded = [f for f in cert.factors if f.recorded("distinct", "v_1[0]")]
    assert recorded and all(f.poly(*point) == 0 for f in recorded)
    truth = specialise(F, point)
    oracle = Oracle(truth)
    rec = learn(oracle, D, heads=H, seed=SEED, schedule="lean")
    assert rec.model == truth.canonical() and rec.lean_fallback
    assert rec.queries == oracle.queries
    assert rec.redraws == 0 and rec.queries == fallback_query_count(D, H) > cert.formula


def test_a_pole_product_alone_is_no_degeneracy():
    """With three heads a pole product of a link can coincide with another term's pole,
    rho_{j-1,h} rho_{j,h'} = rho_{C,t}, while every configuration has three distinct poles. The
    certificate recorded it (kind 'pole product'); the numeric learner pairs by poles *and*
    residues, the residues tell that candidate apart, and the run is the certified one."""
    d, heads = 2, 3
    cert = certify(d, heads, seed=SEED)
    assert cert.passed
    F = SymbolicField(d, heads)
    rng = random.Random("pole product")
    only = [f for f in cert.factors if set(f.kinds) == {"pole product"} and not f.positive_on_domain]
    planted = [(f, p) for f, p in ((f, plant(F, f.poly, rng)) for f in only) if p is not None]
    assert len(planted) >= 3
    for f, point in planted:
        assert f.poly(*point) == 0
        truth = specialise(F, point)
        rec = learn(Oracle(truth), d, heads=heads, seed=SEED)
        assert rec.model == truth.canonical()
        assert rec.redraws == 0 and chain(rec.configurations) == cert.configurations


def test_planted_model_at_a_generic_point_takes_the_certified_path(certificate):
    """The control: off the exceptional set the numeric run is the symbolic one (same chain, no redraw)."""
    F = SymbolicField(D, H)
    rng = random.Random("generic")
    point = random_point(F, rng)
    assert all(f.poly(*point) != 0 for f in certificate.factors)
    truth = specialise(F, point)
    rec = learn(Oracle(truth), D, heads=H, seed=SEED)
    assert rec.model == truth.canonical() and rec.redraws == 0 and rec.queries == certificate.formula
    assert chain(rec.configurations) == certificate.configurations


def test_exceptional_set_over_approximates(certificate):
    """A polynomial recorded only as an elimination pivot of the symbolic reconstruction is
    sufficient, not necessary: the numeric learner (which reconstructs by another method, an
    exact linear system over Q) is not disturbed on its zero set. The certificate claims
    validity off the union; it does not claim failure on it."""
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
    row = next(line.split() for line in text.splitlines() if "heads = indeterminates" in line)
    assert row[-1] == "yes" and "CERTIFIED" in text
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


def test_a_certificate_is_built_with_keywords():
    with pytest.raises(TypeError):
        exactlearn.symbolic.Certificate(1, 1)  # positional fields are refused
    failed = certify(1, 2, token_bound=1, check_point=False)
    assert failed.d == 1 and failed.heads == 2 and (failed.error is None) == failed.passed
