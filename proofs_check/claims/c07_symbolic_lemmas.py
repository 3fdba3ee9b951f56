"""Claim 7: the lemmas behind the schedule, proved symbolically with sympy.

This module uses sympy only (no exactlearn code), so it is independent of the
library it supports. Each lemma is an identity of rational functions or
polynomials, verified by exact symbolic cancellation.

Lemma A (copy function; ALGORITHM.md section 3). For ``S_k = (z, ..., z [k], x)``
and scores ``alpha_h = exp(z^T W_h x)``, ``beta_h = exp(x^T W_h x)`` (positive
symbols), ``p_h = v_h^T z``, ``q_h = v_h^T x``:

    sum_h [k alpha_h p_h + beta_h q_h] / [k alpha_h + beta_h]
        = u^T z + sum_h c_h / (1 + k rho_h),
    rho_h = alpha_h / beta_h = exp((z - x)^T W_h x),  c_h = v_h^T (x - z),  u^T z = sum_h p_h,

a rational function in ``k`` of type exactly ``(H, H)``; its poles are
``-1/rho_h`` with residue ``c_h / rho_h`` (so ``c_h = rho_h * Res``); equal
``W`` (equal ``rho``) merge into one term and cancelling ``v`` make it vanish.
Checked for H = 1..4 (full: 1..6).

Lemma B (counting; section 4). ``d^2 (2H + 1) + (d^2 - 1)(2H - 1) = 4Hd^2 - 2H + 1`` as
polynomials in ``d, H``; the count exceeds the floor ``H(d^2 + d)`` by
``H(d - 1)(3d + 2) + 1 > 0``.

Lemma C (matching; section 4). For the matching configuration
``(x_1 + x_j, z_1 + z_j)`` the residue ``v^T (x - z)``, ``R(0) = u^T x`` and
``R(oo) = u^T z`` are additive, while ``log rho = (z - x)^T W x`` is not
(so poles cannot be used for matching, residues can). Checked for d = 1..3.

Lemma D (genericity; sections 2, 4). The measurement design matrix with rows
``vec((z_j - x_j) x_j^T)``, ``j = 1..d^2``, has a determinant that is a nonzero
homogeneous polynomial of total degree ``2d^2`` in the token entries: expanded
in full for d = 1, 2; for d = 3 its restriction to a line
``(x, z) = P + t Q`` through integer points is a nonzero polynomial in ``t`` of
degree 18 = 2d^2 (a polynomial that is nonzero on a line is nonzero). By
Schwartz-Zippel, tokens uniform in [-B, B] give a singular design with
probability at most ``2d^2 / (2B + 1)`` (measured in claim 8).

Source: ALGORITHM.md sections 2-4 (the derivations); the abstract's
"rational function whose interpolation separates the canonical heads",
"queries formed by adding selected token vectors then match the same head",
and "probability one".
"""

from __future__ import annotations

import random

import sympy as sp
from sympy.polys.matrices import DomainMatrix

from ..registry import Claim, Outcome, Settings


def _head_symbols(H: int):
    alpha = sp.symbols(f"alpha1:{H + 1}", positive=True)
    beta = sp.symbols(f"beta1:{H + 1}", positive=True)
    p = sp.symbols(f"p1:{H + 1}", real=True)
    q = sp.symbols(f"q1:{H + 1}", real=True)
    return alpha, beta, p, q


def lemma_copy_function(H: int) -> dict:
    """Lemma A for H heads: identity, type (H, H), poles/residues, merging and vanishing."""
    k = sp.Symbol("k", nonnegative=True)
    alpha, beta, p, q = _head_symbols(H)
    rho = [alpha[h] / beta[h] for h in range(H)]
    c = [q[h] - p[h] for h in range(H)]
    # the output on k copies of z followed by x, head by head (k equal softmax terms for z)
    output = sum((k * alpha[h] * p[h] + beta[h] * q[h]) / (k * alpha[h] + beta[h]) for h in range(H))
    claimed = sum(p) + sum(c[h] / (1 + k * rho[h]) for h in range(H))
    identity = sp.cancel(output - claimed) == 0
    num, den = sp.fraction(sp.cancel(sp.together(claimed)))
    num_deg, den_deg = sp.Poly(num, k).degree(), sp.Poly(den, k).degree()
    residues_ok = True
    for h in range(H):
        pole = -1 / rho[h]
        res = sp.cancel((num / sp.diff(den, k)).subs(k, pole))
        residues_ok &= sp.cancel(rho[h] * res - c[h]) == 0 and sp.cancel(den.subs(k, pole)) == 0
    merge_ok = vanish_ok = True
    if H >= 2:
        merged = claimed.subs(alpha[1], alpha[0] * beta[1] / beta[0])  # rho_2 = rho_1 (equal W)
        _, den_m = sp.fraction(sp.cancel(sp.together(merged)))
        merge_ok = sp.Poly(den_m, k).degree() == H - 1
        cancelled = merged.subs({p[1]: -p[0], q[1]: -q[0]})  # v_2 = -v_1
        _, den_c = sp.fraction(sp.cancel(sp.together(cancelled)))
        vanish_ok = sp.Poly(den_c, k).degree() == H - 2
    holds = identity and num_deg == H and den_deg == H and residues_ok and merge_ok and vanish_ok
    return {"lemma": f"A (H={H})", "holds": bool(holds),
            "figures": {"identity": identity, "type": f"({num_deg}, {den_deg})", "residues c_h = rho_h Res": residues_ok,
                        "equal rho merge": merge_ok, "cancelling v vanish": vanish_ok}}


def lemma_rho_is_bilinear(d: int) -> dict:
    """log rho_h = z^T W x - x^T W x = (z - x)^T W x = <W, (z - x) x^T>_F for a symbolic d x d W."""
    W = sp.Matrix(d, d, lambda a, b: sp.Symbol(f"w{a}{b}", real=True))
    x = sp.Matrix(sp.symbols(f"x1:{d + 1}", real=True))
    z = sp.Matrix(sp.symbols(f"z1:{d + 1}", real=True))
    lhs = (z.T * W * x)[0] - (x.T * W * x)[0]
    frob = sum(W[a, b] * ((z - x) * x.T)[a, b] for a in range(d) for b in range(d))
    holds = sp.expand(lhs - ((z - x).T * W * x)[0]) == 0 and sp.expand(lhs - frob) == 0
    return {"lemma": f"A' (d={d})", "holds": bool(holds), "figures": {"log rho = <W, (z-x)x^T>_F": holds}}


def lemma_counting() -> dict:
    d, H = sp.symbols("d H", positive=True, integer=True)
    schedule = d**2 * (2 * H + 1) + (d**2 - 1) * (2 * H - 1)
    paper = 4 * H * d**2 - 2 * H + 1
    identity = sp.expand(schedule - paper) == 0
    excess = sp.factor(sp.expand(paper - H * (d**2 + d)))
    excess_ok = sp.expand(excess - (H * (d - 1) * (3 * d + 2) + 1)) == 0
    return {"lemma": "B", "holds": bool(identity and excess_ok),
            "figures": {"d^2(2H+1)+(d^2-1)(2H-1) - (4Hd^2-2H+1)": str(sp.expand(schedule - paper)),
                        "4Hd^2-2H+1 - H(d^2+d)": str(excess)}}


def lemma_matching(d: int) -> dict:
    def vec(name):
        return sp.Matrix(sp.symbols(f"{name}1:{d + 1}", real=True))

    x1, z1, xj, zj, v = vec("x"), vec("z"), vec("y"), vec("t"), vec("v")
    W = sp.Matrix(d, d, lambda a, b: sp.Symbol(f"w{a}{b}", real=True))

    def residue(x, z):
        return (v.T * (x - z))[0]

    def log_rho(x, z):
        return ((z - x).T * W * x)[0]

    additive = sp.expand(residue(x1 + xj, z1 + zj) - residue(x1, z1) - residue(xj, zj)) == 0
    ends = all(sp.expand((v.T * (a + b))[0] - (v.T * a)[0] - (v.T * b)[0]) == 0 for a, b in ((x1, xj), (z1, zj)))
    pole_defect = sp.expand(log_rho(x1 + xj, z1 + zj) - log_rho(x1, z1) - log_rho(xj, zj))
    return {"lemma": f"C (d={d})", "holds": bool(additive and ends and pole_defect != 0),
            "figures": {"residues additive": additive, "R(0), R(oo) additive": ends,
                        "log rho not additive": pole_defect != 0}}


def _design(d: int, xs, zs) -> sp.Matrix:
    return sp.Matrix([[(zs[j][a] - xs[j][a]) * xs[j][b] for a in range(d) for b in range(d)] for j in range(d * d)])


def lemma_design_full(d: int) -> dict:
    """The determinant in full, as a polynomial in all 2d^3 token entries."""
    xs = [sp.symbols(f"x{j}_1:{d + 1}") for j in range(d * d)]
    zs = [sp.symbols(f"z{j}_1:{d + 1}") for j in range(d * d)]
    gens = [s for v in xs + zs for s in v]
    ring = sp.ZZ[tuple(gens)]
    det = DomainMatrix.from_Matrix(_design(d, xs, zs)).convert_to(ring).det()
    poly = sp.Poly(ring.to_sympy(det), *gens)
    degrees = {sum(m) for m in poly.monoms()}
    holds = not poly.is_zero and degrees == {2 * d * d}
    return {"lemma": f"D (d={d}, full)", "holds": bool(holds),
            "figures": {"d": d, "nonzero": not poly.is_zero, "terms": len(poly.terms()),
                        "degree": "/".join(str(g) for g in sorted(degrees)) + " (homogeneous)", "2d^2": 2 * d * d}}


def lemma_design_line(d: int, seed: int) -> dict:
    """The determinant restricted to a line through integer points: nonzero of degree 2d^2."""
    t = sp.Symbol("t")
    rng = random.Random(f"proofs_check.c07:{d}:{seed}")
    for attempt in range(10):
        def point():
            return [rng.randint(-3, 3) + t * rng.randint(-3, 3) for _ in range(d)]

        xs = [point() for _ in range(d * d)]
        zs = [point() for _ in range(d * d)]
        det = DomainMatrix.from_Matrix(_design(d, xs, zs).applyfunc(sp.expand)).convert_to(sp.ZZ[t]).det()
        poly = sp.Poly(sp.ZZ[t].to_sympy(det), t)
        if not poly.is_zero:
            break
    holds = not poly.is_zero and poly.degree() == 2 * d * d
    return {"lemma": f"D (d={d}, line)", "holds": bool(holds),
            "figures": {"d": d, "nonzero on the line": not poly.is_zero, "degree": f"{poly.degree()} (on a line)",
                        "2d^2": 2 * d * d, "lines tried": attempt + 1}}


def prove(task: tuple) -> dict:
    """Run one lemma (picklable entry point for ``settings.map``)."""
    name, *args = task
    out = {"copy": lemma_copy_function, "rho": lemma_rho_is_bilinear, "count": lemma_counting,
           "match": lemma_matching, "design": lemma_design_full, "line": lemma_design_line}[name](*args)
    return out


def check(settings: Settings) -> Outcome:
    max_h = 6 if settings.full else 4
    tasks = [("copy", H) for H in range(max_h, 0, -1)]  # largest first, for the process pool
    tasks += [("rho", d) for d in (1, 2, 3)] + [("count",)] + [("match", d) for d in (1, 2, 3)]
    tasks += [("design", 1), ("design", 2), ("line", 3, settings.seed)]
    results = settings.map(prove, tasks)
    failures = [f"lemma {r['lemma']} does not hold: {r['figures']}" for r in results if not r["holds"]]
    held = {letter: [r for r in results if r["lemma"].split(" ")[0] == letter] for letter in ("A", "A'", "B", "C", "D")}
    bilinear = held["A'"]
    a_types = [r["figures"]["type"] for r in results if r["lemma"].startswith("A (")]
    design = [r for r in results if r["lemma"].startswith("D")]
    figures = {
        "A copy function": f"{sum(r['holds'] for r in held['A'])}/{len(held['A'])} hold; "
                           f"types {', '.join(reversed(a_types))}",
        "A' log rho bilinear": f"{sum(r['holds'] for r in bilinear)}/{len(bilinear)} hold",
        "B counting": "holds" if all(r["holds"] for r in held["B"]) else "FAILS",
        "C matching": f"{sum(r['holds'] for r in held['C'])}/{len(held['C'])} hold",
        "D design det": "; ".join(f"d={r['figures']['d']}: nonzero, degree {r['figures']['degree']}"
                                  if r["holds"] else f"d={r['figures']['d']}: FAILS" for r in design),
        "lemmas": results,
    }
    return Outcome(
        passed=bool(results) and not failures,
        checked=f"{len(results)} sympy identities: copy function H<= {max_h}, counting, matching d<=3, "
                f"design det d<=3",
        figures=figures,
        details=failures,
    )


CLAIM = Claim(
    key="symbolic-lemmas",
    title="Symbolic lemmas (sympy)",
    statement="R(k) = u^T z + sum_h c_h/(1 + k rho_h) is of type (H, H); d^2(2H+1) + (d^2-1)(2H-1) = 4Hd^2-2H+1; "
              "matching residues are additive; the design determinant is a nonzero polynomial.",
    source="ALGORITHM.md sections 2-4; paper abstract",
    check=check,
)
