"""Claim: one symbolic run of the schedule certifies every model off an explicit exceptional set.

The chained schedule (docs/algorithm.md, section 4) runs over ``Q(E, V)`` with
every weight an indeterminate (:func:`exactlearn.symbolic.certify`): ``d^2``
configurations, each sharing ``x`` or ``a = z - x`` with its predecessor, and
one matching configuration per link whose terms are ``(rho rho', c + c')``
(shared ``x``) or ``(rho rho', c = c')`` (shared ``a``); the heads of a link
are paired by the unique perfect matching on (pole product, residue
combination), decided exactly in ``Q(E, V)``. Every divisor and every element
relied on being nonzero is recorded, including each pairing candidate the run
rejected (its pole product, or for a shared ``a`` its residue difference).

A case passes only if the recovered heads equal the indeterminate heads
identically, the symbolic oracle's own log shows ``4Hd^2 - 2H + 1`` queries of
maximum length ``2H + 1`` with no redraw and no dropped configuration, all
``d^2 - 1`` links were paired, every factored exceptional polynomial is nonzero,
and the numeric learner with the same seed, at a random rational point off the
exceptional set, takes the same chain of tokens and recovers the model exactly.
"""

from __future__ import annotations

from exactlearn.schedule import max_query_length, paper_query_count
from exactlearn.symbolic import certify

from ..registry import Claim, Outcome, Settings

#: Quick mode: the sizes issue 6 requires, plus d = 3 and H = 3 cases (about 1 s on one core).
QUICK = [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1), (2, 3), (3, 2)]
#: Full mode adds these and two more seeds for every size (36 runs, about 20 s on 2 workers).
FULL = [(4, 1), (1, 4), (4, 2), (3, 3)]


def _case(task: tuple[int, int, int]) -> dict:
    d, H, seed = task
    cert = certify(d, H, seed=seed)
    return {
        "d": d,
        "H": H,
        "seed": seed,
        "passed": cert.passed,
        "identity": cert.identity,
        "queries": cert.queries,
        "formula": paper_query_count(d, H),
        "max_length": cert.max_length,
        "formula_max_length": max_query_length(H),
        "redraws": cert.redraws,
        "links": cert.links,
        "dropped": cert.dropped,
        "pole_products": cert.kinds.get("pole product", 0),
        "exceptional": len(cert.factors),
        "can_vanish_on_domain": len(cert.effective),
        "max_degree": max((f.degree for f in cert.factors), default=0),
        "all_nonzero": cert.all_nonzero,
        "spot_check": cert.spot_check.ok if cert.spot_check else None,
        "seconds": round(cert.seconds.get("total", 0.0), 3),
        "error": cert.error,
    }


def check(settings: Settings) -> Outcome:
    sizes = QUICK + (FULL if settings.full else [])
    seeds = [settings.seed] + ([settings.seed + 1, settings.seed + 2] if settings.full else [])
    tasks = [(d, H, s) for d, H in sizes for s in seeds]
    results = settings.map(_case, tasks)
    details = []
    for r in results:
        # re-derive the verdict from the measured figures, not only from cert.passed
        ok = (r["passed"] and r["identity"] and r["queries"] == r["formula"]
              and r["max_length"] == r["formula_max_length"] and r["redraws"] == 0
              and r["dropped"] == 0 and r["links"] == r["d"] ** 2 - 1
              and r["all_nonzero"] and r["spot_check"] is True)
        if not ok:
            details.append(f"d={r['d']} H={r['H']} seed={r['seed']}: " + (r["error"] or (
                f"identity={r['identity']} queries={r['queries']}/{r['formula']} "
                f"max_length={r['max_length']}/{r['formula_max_length']} redraws={r['redraws']} "
                f"links={r['links']}/{r['d'] ** 2 - 1} dropped={r['dropped']} "
                f"all_nonzero={r['all_nonzero']} spot_check={r['spot_check']}")))
    passed = not details and len(results) == len(tasks)
    size_text = ", ".join(f"({d},{H})" for d, H in sizes)
    return Outcome(
        passed=passed,
        checked=f"{len(tasks)} symbolic runs over Q(E, V): (d, H) in {size_text}; seeds {seeds}",
        figures={"cases": results, "max_seconds": max(r["seconds"] for r in results)},
        details=details,
    )


CLAIM = Claim(
    key="generic-certificate",
    title="Generic certificate over Q(E, V)",
    statement=(
        "Run with exp(W_h) and v_h as indeterminates E, V, the chained schedule pairs every link's heads by a "
        "unique perfect matching on pole products and residues and recovers the heads identically in Q(E, V) "
        "with 4Hd^2-2H+1 queries of length at most 2H+1; hence every model (positive rational exp(W), rational v) "
        "outside the zero sets of the recorded, nonzero exceptional polynomials is recovered exactly by the "
        "numeric learner with the same seed, with the same queries and no redraw."
    ),
    source="issue 6; docs/algorithm.md sections 3-4 (the chain) and 6; paper abstract (counts)",
    check=check,
)
