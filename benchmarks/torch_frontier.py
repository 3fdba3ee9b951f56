"""The frontier of real attention layers: issue 24's targets, measured with default settings.

Every row learns ``torch.nn.MultiheadAttention`` layers (default initialisation,
``torch.manual_seed(seed)``, a ``torch.randn(d)`` readout) with nothing but

    learn_approx(torch_attention(layer, readout), d, heads=H)

and compares the result with the layer's own parameters. Per run it prints the
queries the oracle answered against the paper's formula ``4Hd^2 - 2H + 1``, the
longest query, the relative error per parameter matrix (``max |error| / max
|entry|`` over every ``W_h`` and ``v_h``), the result's error estimate and its
error bound (under the declared ``eps``) each over the true largest error, the
CPU seconds of the learner (``time.process_time``, one core), and a verdict on
the row's target. A refusal is printed with the first words of its message.

    python benchmarks/torch_frontier.py                  # every row, seeds 0-2 (about an hour)
    python benchmarks/torch_frontier.py --rows small     # the rows that take seconds
    python benchmarks/torch_frontier.py --rows "d=16 H=4" --seeds 0

Rows (see docs/approximate.md, "Real layers: the frontier"):

* float64 layers (``layer.double()``: the float32 initial weights, computed in
  float64): d = 4, H = 2 and 4, d = 8, H = 4 (reference); d = 16, H = 2 and 4,
  d = 32, H = 4 (larger sizes); d = 8, H = 8 (d_head = 1);
* sharper softmax: ``in_proj_weight`` times 3 (scores about 9 times larger);
* float32 layers as they are (``torch_attention`` computes in the module's dtype,
  ``eps`` about 5.4e-5), and with ``eps = 1e-6`` given by hand;
* a place for the rows of layers with biases and of vector outputs (other work).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core (numpy's BLAS reads these when it loads)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import mpmath  # noqa: E402


@dataclass(frozen=True)
class Row:
    """One kind of layer and its target."""

    name: str
    d: int
    heads: int
    weights: float = 1.0  # in_proj_weight multiplied by this
    dtype: str = "float64"  # the dtype the layer computes in
    eps: Any = None  # None: the oracle's default for its dtype
    cpu_limit: float | None = None  # seconds of CPU per run the target allows
    query_factor: float | None = None  # queries / formula the target allows
    accuracy: float | None = 1e-6  # relative error per matrix the target asks (None: refusal allowed)
    small: bool = True  # in --rows small
    notes: dict = field(default_factory=dict)


ROWS = [
    Row("d=4 H=2", 4, 2, query_factor=1.5),
    Row("d=4 H=4", 4, 4, query_factor=1.5),
    Row("d=8 H=4", 8, 4, query_factor=1.5),
    Row("d=16 H=2", 16, 2, cpu_limit=121.0, small=False),
    Row("d=16 H=4", 16, 4, cpu_limit=120.0, small=False),
    Row("d=32 H=4", 32, 4, cpu_limit=600.0, small=False),
    Row("d=8 H=8", 8, 8, query_factor=2.0, small=False),
    Row("x3 d=4 H=2", 4, 2, weights=3.0),
    Row("x3 d=4 H=4", 4, 4, weights=3.0),
    Row("x3 d=8 H=2", 8, 2, weights=3.0, accuracy=None),
    Row("f32 d=4 H=2", 4, 2, dtype="float32", accuracy=None),
    Row("f32 d=4 H=4", 4, 4, dtype="float32", accuracy=None),
    Row("f32 eps=1e-6 d=4 H=2", 4, 2, dtype="float32", eps="1e-6", accuracy=None),
    # layers with biases (bias=True) and vector outputs: rows added with that work
]


@dataclass
class Result:
    """One run of a row (floats: a benchmark's report)."""

    row: Row
    seed: int
    queries: int
    formula: int
    max_length: int
    cpu: float
    relative: float | None = None  # largest relative error per matrix
    error: float | None = None  # largest absolute error
    estimate: float | None = None
    bound: float | None = None
    warned: bool = False
    refusal: str = ""

    @property
    def verdict(self) -> str:
        row, out = self.row, []
        if self.refusal:
            return "refused" if row.accuracy is None else "MISSED: refused"
        assert self.relative is not None and self.error is not None
        if row.accuracy is not None and self.relative > row.accuracy:
            out.append(f"error > {row.accuracy:.0e}")
        if row.query_factor is not None and self.queries > row.query_factor * self.formula:
            out.append(f"queries > {row.query_factor}x")
        if row.cpu_limit is not None and self.cpu > row.cpu_limit:
            out.append(f"cpu > {row.cpu_limit:.0f} s")
        if self.estimate is None or not self.error <= self.estimate <= 100 * self.error:
            out.append("estimate not within 1-100x")
        if self.relative > 1e-4 and not self.warned:
            out.append("inexact, no warning")
        return "met" if not out else "MISSED: " + ", ".join(out)


def _layer(row: Row, seed: int):
    import torch

    torch.manual_seed(seed)
    layer = torch.nn.MultiheadAttention(row.d, row.heads, bias=False)
    readout = torch.randn(row.d)
    with torch.no_grad():
        layer.in_proj_weight.mul_(row.weights)
    if row.dtype == "float64":
        layer = layer.double()
    return layer, readout


def _relative(error, truth) -> float:
    """Largest ``max |error| / max |entry|`` over every ``W_h`` and ``v_h``."""
    out = []
    for (dW, dv), (W, v) in zip(error.deviations, truth):
        for dev, ref in (([x for r in dW for x in r], [x for r in W for x in r]), (list(dv), list(v))):
            out.append(max(abs(x) for x in dev) / max(abs(x) for x in ref))
    return float(max(out))


def run(row: Row, seed: int) -> Result:
    """Learn one layer of ``row`` with default settings and measure the result."""
    import torch

    from exactlearn.approx import learn_approx, parameter_error, truth_parameters
    from exactlearn.schedule import Schedule
    from exactlearn.targets import torch_attention, torch_model

    torch.set_num_threads(1)
    layer, readout = _layer(row, seed)
    oracle = torch_attention(layer, readout, eps=row.eps)
    truth = torch_model(layer, readout)
    formula = Schedule.PAPER.query_count(row.d, row.heads)
    start = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rec = learn_approx(oracle, row.d, heads=row.heads)
        except Exception as exc:  # a refusal is a finding
            return Result(row, seed, oracle.queries, formula, oracle.max_length, time.process_time() - start,
                          refusal=f"{type(exc).__name__}: {exc}")
    cpu = time.process_time() - start
    err = parameter_error(rec, truth)
    with mpmath.mp.workprec(256):
        relative = _relative(err, truth_parameters(truth, 256))
    return Result(row, seed, oracle.queries, formula, oracle.max_length, cpu, relative, float(err.max_abs),
                  rec.error_estimate, float(rec.error_bound),
                  warned=any("inexact model" in str(w.message) for w in caught))


def _ratio(x: float | None, y: float | None) -> str:
    return "-" if x is None or not y else f"{x / y:.1f}"


def line(r: Result) -> str:
    head = f"{r.row.name:<20} {r.seed} {r.queries:>6} {r.queries / r.formula:>5.2f} {r.max_length:>5}"
    if r.refusal:
        return f"{head} {'refused':>8} {'':>6} {'':>7} {r.cpu:>6.1f}  {r.verdict}"
    return (f"{head} {r.relative:>8.1e} {_ratio(r.estimate, r.error):>6} {_ratio(r.bound, r.error):>7} "
            f"{r.cpu:>6.1f}  {r.verdict}")


HEADER = (f"{'layer':<20} s {'query':>6} {'x':>5} {'len':>5} {'rel.err':>8} {'est/e':>6} {'bound/e':>7} "
          f"{'cpu s':>6}  verdict")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="all", help="'all', 'small' or a comma-separated list of row names")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated layer seeds (default 0,1,2)")
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("needs torch: pip install -e '.[torch]'", file=sys.stderr)
        return 2
    if args.rows == "all":
        rows = ROWS
    elif args.rows == "small":
        rows = [r for r in ROWS if r.small]
    else:
        wanted = [w.strip() for w in args.rows.split(",")]
        rows = [r for r in ROWS if r.name in wanted]
        if len(rows) != len(wanted):
            print(f"unknown rows; known: {', '.join(r.name for r in ROWS)}", file=sys.stderr)
            return 2
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        print("--seeds takes comma-separated integers", file=sys.stderr)
        return 2
    print(HEADER)
    refusals = []
    for row in rows:
        for seed in seeds:
            print(f"  {row.name}, seed {seed} ...", file=sys.stderr, flush=True)
            result = run(row, seed)
            print(line(result), flush=True)
            if result.refusal:
                refusals.append(f"{row.name} seed {seed}: {result.refusal[:300]}")
    print("\nquery: answered by the oracle; x: over 4Hd^2 - 2H + 1; len: longest query; rel.err: largest")
    print("max|error|/max|entry| over every W_h, v_h; est/e, bound/e: the result's error estimate and its")
    print("bound under eps over the true largest error; cpu s: process time of learn_approx, one core.")
    for text in refusals:
        print(f"\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
