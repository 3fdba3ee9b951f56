"""How well the default copy counts condition a torch layer's configurations, from the true layer.

    python benchmarks/copy_conditions.py                       # d=8 H=4, d=16 H=4, d=8 H=8; seed 0
    python benchmarks/copy_conditions.py --rows "d=8 H=8" --scales 2,1 --fits 20
    python benchmarks/copy_conditions.py --rows "d=8 H=8,d=12 H=6" --ratios 4096,256 --fits 20

For each row of ``benchmarks/torch_frontier.py`` (its layer: PyTorch's default, ``torch.manual_seed``)
it draws measurement configurations as the learner's random chain does (``x`` and ``a = z - x`` with
integer entries in ``[-2, 2]``, sent as ``s x``, ``s z``), and computes from the layer's own parameters
the condition of each (``exactlearn.approx.guide.chooser.predicted_conditions``: how much an answer
error moves a residue or a score ``log rho_h``, to first order) at the copy counts the default run
asks (``copy_counts="auto"``: the paper's ``0..2H``, or ``3H + 1`` geometric ones). It prints, per
query scale ``s``, the share of configurations below 1e8 and 1e11, those the float computation finds
singular or above about 1e14 (``inf``), the median and the best. With ``--fits N`` it also asks the
float64 layer, at the first scale, the ``N`` best-conditioned configurations and ``N`` others, and fits
each copy function as the learner does (``certify_copy_function``, first-order mode), tabulated by
condition: whether the fit resolves the ``H`` heads or why not. With ``--ratios K1,K2`` it also
tabulates the same configurations at rational copy ratios ``t = k/m`` from ``1/K`` to ``K``
(``exactlearn.approx.core.counts.ratio_points``, as many points as geometric counts; queries
``(z,)*k + (x,)*m``), and ``--fits`` then fits at the last of them. A row not in the table (``"d=12 H=6"``)
is PyTorch's default layer of that size. Floats throughout (a benchmark's report).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core (numpy's BLAS reads these when it loads)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
from collections import Counter  # noqa: E402
from fractions import Fraction  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_frontier import ROWS, Row, _layer  # noqa: E402


def _pairs(d: int, draws: int, rng: random.Random) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """``draws`` configurations ``(x, z = x + a)``, entries of ``x`` and ``a`` uniform in ``[-2, 2]``."""
    out = []
    for _ in range(draws):
        x = tuple(rng.randint(-2, 2) for _ in range(d))
        a = tuple(rng.randint(-2, 2) for _ in range(d))
        out.append((x, tuple(p + q for p, q in zip(x, a))))
    return out


def conditions(row: Row, seed: int, scales: list[Fraction], draws: int, fits: int, ratios: list[int]) -> None:
    from exactlearn.approx.core.counts import geometric_counts, ratio_points, resolve_counts
    from exactlearn.approx.guide.chooser import guide_heads, predicted_conditions
    from exactlearn.targets import torch_attention, torch_model

    layer, readout = _layer(row, seed, bias=True)
    oracle = torch_attention(layer, readout)
    guide = guide_heads(torch_model(layer, readout))
    eps = float(oracle.eps.p) / float(oracle.eps.q)
    points = resolve_counts("auto", row.d, row.heads, eps=eps) or tuple(range(2 * row.heads + 1))
    pairs = _pairs(row.d, draws, random.Random(seed))
    schemes = [("auto", points)]
    if ratios and tuple(points) != geometric_counts(row.heads):  # the geometric counts, to compare
        schemes.append(("geometric", geometric_counts(row.heads)))
    schemes += [(f"ratios K={top}", ratio_points(row.heads, top)) for top in ratios]
    for label, pts in schemes:
        print(f"{row.name}, seed {seed}, {label}: {len(pts)} copy points from {pts[1]} to {pts[-1]}")
        print(f"  {'scale':>5} {'< 1e8':>7} {'< 1e11':>7} {'< 1e14':>7} {'inf':>7} {'median':>9} {'best':>9}")
        for s in scales:
            c = np.array(predicted_conditions(guide, float(s), pairs, points=_floats(pts)))
            share = [float(np.mean(c < t)) for t in (1e8, 1e11, 1e14)] + [float(np.mean(~np.isfinite(c)))]
            print(f"  {str(s):>5} " + " ".join(f"{x:>7.1%}" for x in share)
                  + f" {float(np.median(c)):>9.1e} {float(np.min(c)):>9.1e}", flush=True)
    if fits:  # the best-conditioned draws at the first scale, and as many others, at the last scheme's points
        points = schemes[-1][1]
        c = np.array(predicted_conditions(guide, float(scales[0]), pairs, points=_floats(points)))
        best = [pairs[i] for i in np.argsort(c)[:fits]]
        _fits(oracle, guide, best + [p for p in pairs if p not in best][:fits], scales[0], points, row.heads)


def _floats(points) -> list[float]:
    return [float(t) for t in points]


def _fits(oracle, guide, pairs, s: Fraction, points, heads: int) -> None:
    """Fit the float64 answers of ``pairs`` at scale ``s`` as the learner does; outcome by condition."""
    from flint import arb

    from exactlearn.approx.core.balls import to_arb, working_precision
    from exactlearn.approx.core.copyfun import Uncertified, certify_copy_function
    from exactlearn.approx.guide.chooser import predicted_conditions

    conds = predicted_conditions(guide, float(s), pairs, points=_floats(points))
    table: Counter = Counter()
    with working_precision(256):
        radius = arb(0, to_arb(oracle.eps))
        for (x, z), cond in zip(pairs, conds):
            xs, zs = tuple(float(s * t) for t in x), tuple(float(s * t) for t in z)
            values = [to_arb(oracle([zs] * Fraction(t).numerator + [xs] * Fraction(t).denominator)) + radius
                      for t in points]  # (z,)*k + (x,)*m for t = k/m (m = 1: a copy count)
            try:
                certify_copy_function(points, values, heads, rigorous=False)
                outcome = f"{heads} heads resolved"
            except Uncertified as exc:
                outcome = str(exc).split(" (")[0]
            bucket = next((f"< 1e{e}" for e in (8, 11, 14) if cond < 10.0**e), "inf")
            table[bucket, outcome] += 1
            print(".", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(f"  float64 fits at scale {s} ({len(pairs)} configurations), by condition:")
    for (bucket, outcome), n in sorted(table.items()):
        print(f"    {bucket:<6} {n:>4} x {outcome}")


def _row(name: str) -> Row | None:
    """A row ``"d=D H=H"`` not in torch_frontier.py's table: PyTorch's default layer of that size."""
    try:
        d, heads = (int(part.split("=")[1]) for part in name.split())
    except ValueError:
        return None
    return Row(name, d, heads) if d > 0 and heads > 0 and d % heads == 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="d=8 H=4,d=16 H=4,d=8 H=8",
                        help="rows of torch_frontier.py, or any 'd=D H=H' (PyTorch's default layer)")
    parser.add_argument("--seeds", default="0", help="comma-separated layer seeds (default 0)")
    parser.add_argument("--scales", default="1/2,1,2,4", help="query scales (default 1/2,1,2,4)")
    parser.add_argument("--draws", type=int, default=2000, help="configurations per row (default 2000)")
    parser.add_argument("--ratios", default="", help="also rational copy ratios t = k/m in [1/K, K] for "
                        "these comma-separated K (e.g. 4096,64); --fits then uses the last")
    parser.add_argument("--fits", type=int, default=0, help="float64 fits of the N best and N other draws")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("needs torch: pip install -e '.[torch]'", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    wanted = [w.strip() for w in args.rows.split(",")]
    rows = [next((r for r in ROWS if r.name == w), None) or _row(w) for w in wanted]
    try:
        seeds = [int(x) for x in args.seeds.split(",")]
        scales = [Fraction(x) for x in args.scales.split(",")]
        ratios = [int(x) for x in args.ratios.split(",") if x.strip()]
    except ValueError:
        print("--seeds takes integers, --scales numbers such as 1/2", file=sys.stderr)
        return 2
    if any(r is None for r in rows) or args.draws < 1 or args.fits < 0 or any(s <= 0 for s in scales):
        print(f"rows: {', '.join(r.name for r in ROWS)}; --draws >= 1, --fits >= 0, scales > 0",
              file=sys.stderr)
        return 2
    for row in rows:
        for seed in seeds:
            conditions(row, seed, scales, args.draws, args.fits, ratios)
    return 0


if __name__ == "__main__":
    sys.exit(main())
