"""The frontier of real attention layers: issue 24's targets, measured with default settings.

Every row learns ``torch.nn.MultiheadAttention`` layers (PyTorch's default:
``bias=True``, default initialisation, ``torch.manual_seed(seed)``, a
``torch.randn(d)`` readout) with nothing but

    learn_approx(torch_attention(layer, readout), d, heads=H)

and compares the result with the layer's own parameters (``torch_model``). Per
run it prints the queries the oracle answered (its log) and their ratio to the
formula of the schedule learned (``4H d(d+1) - 2H + 1`` for a layer with biases,
which the oracle declares affine; ``4Hd^2 - 2H + 1`` without), the longest
query, the relative error per matrix (the largest ``max |error| / max |entry|``
over every ``W_h``, ``v_h``, ``w_h`` and ``c0``; a matrix that is zero in the
layer -- ``w_h`` and ``c0`` of default initialisation, whose biases are 0 -- is
measured against the largest entry of the layer), the result's reported error
(``error_estimate``, the figure ``summary()`` gives) and its bound under the
declared ``eps`` (``error_bound``), each as a ratio to the true largest error,
the CPU seconds of the run (``time.process_time``, one core; the oracle's
time included), and a verdict on the row's target (``met``; ``met*``, met with a
warning; ``refused``, a refusal the row accepts; ``MISSED``). After the table, a
line per missed row says which targets it missed, and a refusal is printed with
the first words of its message. The table fits 80 columns.

    python benchmarks/torch_frontier.py                  # every row but --large, seeds 0-2
    python benchmarks/torch_frontier.py --rows "d=16 H=4" --seeds 0
    python benchmarks/torch_frontier.py --large          # d = 32, H = 4 too (minutes per seed)
    python benchmarks/torch_frontier.py --bias-free      # the same rows with bias=False
    python benchmarks/torch_frontier.py --vector         # vector answers: no readout

Rows (see docs/approximate.md, "Real layers: the frontier"): d = 4, H = 2;
d = 8, H = 2 and 4 (at most 1.5 times the formula's queries); d = 16, H = 4
(120 s CPU); d = 32, H = 4 (10 minutes, ``--large``); d = 8, H = 8 (2 times the
formula); ``in_proj_weight`` times 3 (sharper softmax) at d = 4, H = 2 and 4; a
float32 layer (``dtype=torch.float32``: the answers float32's, ``eps`` to
match; the float32 limit or a clear refusal is the target). Every row: relative
error per matrix at most 1e-6, a reported error within 1-100 times the true one
(or a result saying it is not certified), and no model off by more than 1e-4
without a warning.

``--vector`` asks the same layers without a readout: ``torch_attention(layer)`` answers the whole
output vector, ``learn_approx`` learns ``W_h``, ``w_h`` and the value matrices ``V_h = W_O,h W_V,h``
and ``c0`` from the same queries (``exactlearn.approx.values``), and the errors are those of
``vector_parameter_error`` against ``torch_vector_parameters``; the reported error is the larger of
the scalar run's estimate and the value fit's, and there is no bound under ``eps`` for ``V_h``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core (numpy's BLAS reads these when it loads)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

import mpmath  # noqa: E402


@dataclass(frozen=True)
class Row:
    """One kind of layer and its target."""

    name: str
    d: int
    heads: int
    weights: float = 1.0  # in_proj_weight multiplied by this
    dtype: str = "float64"  # the dtype the oracle computes in
    cpu_limit: float | None = None  # seconds of CPU per run the target allows
    query_factor: float | None = None  # queries / formula the target allows
    accuracy: float | None = 1e-6  # relative error per matrix the target asks (None: a clear refusal is met)
    large: bool = False  # only with --large


ROWS = [
    Row("d=4 H=2", 4, 2, query_factor=1.5),
    Row("d=8 H=2", 8, 2, query_factor=1.5),
    Row("d=8 H=4", 8, 4, query_factor=1.5),
    Row("d=16 H=4", 16, 4, cpu_limit=120.0),
    Row("d=32 H=4", 32, 4, cpu_limit=600.0, large=True),
    Row("d=8 H=8", 8, 8, query_factor=2.0),
    Row("x3 d=4 H=2", 4, 2, weights=3.0),
    Row("x3 d=4 H=4", 4, 4, weights=3.0),
    Row("f32 d=4 H=2", 4, 2, dtype="float32", accuracy=None),
    Row("f32 d=8 H=4", 8, 4, dtype="float32", accuracy=None),
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
    estimate: float | None = None  # the result's reported error (error_estimate)
    bound: float | None = None  # its bound under eps (error_bound)
    warned: bool = False  # an InexactModelWarning was issued
    refusal: str = ""

    @property
    def misses(self) -> list[str]:
        """The row's targets this run missed (empty: met)."""
        row, out = self.row, []
        if self.refusal:
            return [] if row.accuracy is None else ["refused"]
        assert self.relative is not None and self.error is not None
        if row.accuracy is not None and self.relative > row.accuracy:
            out.append(f"error > {row.accuracy:.0e}" + (" (warned)" if self.warned else ""))
        if row.query_factor is not None and self.queries > row.query_factor * self.formula:
            out.append(f"queries > {row.query_factor}x")
        if row.cpu_limit is not None and self.cpu > row.cpu_limit:
            out.append(f"cpu > {row.cpu_limit:.0f} s")
        if (self.estimate is None or not self.error <= self.estimate <= 100 * self.error) and not self.warned:
            out.append("reported error not within 1-100x")
        if self.relative > 1e-4 and not self.warned:
            out.append("inexact, no warning")
        return out

    @property
    def verdict(self) -> str:
        """``met``, ``met*`` (met, with a warning), ``refused`` (a refusal the row accepts) or ``MISSED``."""
        if self.misses:
            return "MISSED"
        if self.refusal:
            return "refused"
        return "met*" if self.warned else "met"


def _layer(row: Row, seed: int, bias: bool):
    import torch

    torch.manual_seed(seed)
    layer = torch.nn.MultiheadAttention(row.d, row.heads, bias=bias)
    readout = torch.randn(row.d)
    with torch.no_grad():
        layer.in_proj_weight.mul_(row.weights)
    return layer, readout


def _relative(error, truth, top: float) -> float:
    """Largest ``max |error| / max |entry|`` over every matrix (``top`` for a zero matrix)."""
    pairs = []
    for (dW, dv), (W, v) in zip(error.deviations, truth[0]):
        pairs += [([x for r in dW for x in r], [x for r in W for x in r]), (list(dv), list(v))]
    if error.w_deviations is not None:
        pairs += list(zip(error.w_deviations, truth[1]))
        pairs.append(([error.c0_deviation], [truth[2]]))
    out = []
    for dev, ref in pairs:
        scale = max(abs(float(x)) for x in ref) or top
        out.append(max(abs(float(x)) for x in dev) / scale)
    return max(out)


@dataclass
class Learned:
    """One default run of ``learn_approx`` on a row's oracle: the recovery (``None`` after a refusal,
    then ``refused`` says what), the measured ``Result`` fields, and whether it warned."""

    oracle: Any
    rec: Any
    formula: int
    cpu: float
    warned: bool
    refused: str = ""

    def result(self, row: Row, seed: int, **measured: Any) -> Result:
        return Result(row, seed, self.oracle.queries, self.formula, self.oracle.max_length, self.cpu,
                      refusal=self.refused, warned=self.warned, **measured)


def _learn(row: Row, oracle: Any) -> Learned:
    """``learn_approx(oracle, d, heads=H)`` with default settings, timed in CPU seconds; a refusal is a
    finding, not an error."""
    from exactlearn.approx import learn_approx
    from exactlearn.schedule import Schedule

    formula = Schedule.PAPER.query_count(row.d, row.heads, affine=oracle.affine)
    start = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rec = learn_approx(oracle, row.d, heads=row.heads)
        except Exception as exc:  # a refusal is a finding
            return Learned(oracle, None, formula, time.process_time() - start, False,
                           f"{type(exc).__name__}: {exc}")
    return Learned(oracle, rec, formula, time.process_time() - start,
                   any("inexact model" in str(w.message) for w in caught))


def run_vector(row: Row, seed: int, bias: bool = True) -> Result:
    """Learn one layer of ``row`` from its output vectors (no readout) and measure the result."""
    import torch

    from exactlearn.approx import vector_parameter_error
    from exactlearn.targets import torch_attention, torch_vector_parameters

    torch.set_num_threads(1)
    layer, _ = _layer(row, seed, bias)
    learned = _learn(row, torch_attention(layer, dtype=getattr(torch, row.dtype)))
    rec = learned.rec
    if rec is None:
        return learned.result(row, seed)
    err = vector_parameter_error(rec, torch_vector_parameters(layer))
    reported = max(rec.error_estimate or 0.0, rec.value_error_estimate)
    print(f"    V_h and c0: error {float(err.values_max_abs):.1e}, value_error_estimate "
          f"{rec.value_error_estimate:.1e} ({rec.value_error_estimate / float(err.values_max_abs):.2g}x)",
          file=sys.stderr, flush=True)
    return learned.result(row, seed, relative=float(err.relative), error=float(err.max_abs),
                          estimate=reported, bound=None)


def run(row: Row, seed: int, bias: bool = True) -> Result:
    """Learn one layer of ``row`` with default settings and measure the result."""
    import torch

    from exactlearn.approx import parameter_error, truth_parameters
    from exactlearn.approx.core.recovery import truth_offsets
    from exactlearn.targets import torch_attention, torch_model

    torch.set_num_threads(1)
    layer, readout = _layer(row, seed, bias)
    truth = torch_model(layer, readout)
    learned = _learn(row, torch_attention(layer, readout, dtype=getattr(torch, row.dtype)))
    rec = learned.rec
    if rec is None:
        return learned.result(row, seed)
    err = parameter_error(rec, truth)
    with mpmath.mp.workprec(256):
        heads = truth_parameters(truth, 256)
        ws, c0 = truth_offsets(truth, 256)
        top = max(abs(float(x)) for W, v in heads for x in [e for r in W for e in r] + list(v))
        relative = _relative(err, (heads, ws, c0), top)
    return learned.result(row, seed, relative=relative, error=float(err.max_abs), estimate=rec.error_estimate,
                          bound=float(rec.error_bound))


def _ratio(x: float | None, y: float | None) -> str:
    return "-" if x is None or not y else f"{x / y:.1e}"


def line(r: Result) -> str:
    """The row of the table: 80 columns (the reasons of a miss are printed after the table)."""
    head = f"{r.row.name:<11}{r.seed:>2} {r.queries:>6} {r.queries / r.formula:>5.2f} {r.max_length:>5}"
    if r.refusal:
        return f"{head} {'refused':>7} {'':>7} {'':>7} {'':>7} {r.cpu:>6.1f} {r.verdict}"
    return (f"{head} {r.relative:>7.1e} {r.estimate or float('nan'):>7.1e} {_ratio(r.estimate, r.error):>7} "
            f"{_ratio(r.bound, r.error):>7} {r.cpu:>6.1f} {r.verdict}")


HEADER = (f"{'layer':<11}{'s':>2} {'query':>6} {'x':>5} {'len':>5} {'rel.err':>7} {'report':>7} {'rep/e':>7} "
          f"{'bound/e':>7} {'cpu s':>6} verdict")

LEGEND = """
query: answered by the oracle (its log); x: over the formula of the schedule
learned, 4H d(d+1) - 2H + 1 (biases) or 4Hd^2 - 2H + 1; len: longest query;
rel.err: largest max|error|/max|entry| over every W_h, v_h, w_h, c0; report: the
result's error estimate (summary()); rep/e, bound/e: it and the bound under eps
over the true largest error; cpu s: process time of the run, one core; met*:
met, with a warning. With --vector: v_h is V_h (d x d), c0 a vector, report the
larger of the two estimates, and no bound ("-"); stderr gives the error of the
V_h and c0 alone and value_error_estimate over it."""


def _rows(args) -> list[Row] | None:
    if args.rows == "all":
        return [r for r in ROWS if args.large or not r.large]
    wanted = [w.strip() for w in args.rows.split(",")]
    rows = [r for r in ROWS if r.name in wanted]
    if len(rows) != len(wanted):
        print(f"unknown rows; known: {', '.join(r.name for r in ROWS)}", file=sys.stderr)
        return None
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="all", help="'all' or a comma-separated list of row names")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated layer seeds (default 0,1,2)")
    parser.add_argument("--large", action="store_true", help="include d = 32, H = 4")
    parser.add_argument("--bias-free", action="store_true", help="bias=False layers")
    parser.add_argument("--vector", action="store_true", help="vector answers (no readout)")
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("needs torch: pip install -e '.[torch]'", file=sys.stderr)
        return 2
    rows = _rows(args)
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        print("--seeds takes comma-separated integers", file=sys.stderr)
        return 2
    if rows is None:
        return 2
    print(HEADER)
    misses, refusals = [], []
    for row in rows:
        for seed in seeds:
            print(f"  {row.name}, seed {seed} ...", file=sys.stderr, flush=True)
            result = (run_vector if args.vector else run)(row, seed, bias=not args.bias_free)
            print(line(result), flush=True)
            if result.misses:
                misses.append(f"{row.name} seed {seed}: MISSED: {', '.join(result.misses)}")
            if result.refusal:
                refusals.append(f"{row.name} seed {seed}: {result.refusal[:300]}")
    print(LEGEND)
    if misses:
        print()
    for text in misses:
        print(textwrap.fill(text, 80, subsequent_indent="    "))
    for text in refusals:
        print("\n" + textwrap.fill(text, 80, subsequent_indent="    "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
