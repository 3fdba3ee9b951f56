"""The cost of the largest inputs the default limits admit: CPU seconds and peak memory, one core.

    python benchmarks/limits.py learn                 # learn(Oracle(random model), d, heads=H), a grid
    python benchmarks/limits.py certify               # exactlearn certify's symbolic run, a grid
    python benchmarks/limits.py random                # MultiHeadAttention.random + to_json
    python benchmarks/limits.py transformer           # Transformer.random + learn_transformer by width
    python benchmarks/limits.py approx                # learn_approx by precision
    python benchmarks/limits.py token                 # learn by token_bound (d x H x B)
    python benchmarks/limits.py learn --points 32x24  # chosen points (d x H; for approx: precision)

Every point runs in its own child process under a CPU-time limit (``--limit``,
seconds) and an address-space limit (``--memory``, GB), so that a point which
would abort the interpreter (FLINT's allocation failure) or run for hours is
reported as such instead of taking the machine. Each line gives the point, CPU
seconds, the child's peak resident memory and the outcome. The estimates in
exactlearn/limits.py and the table in docs/reliability.md come from these runs.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

GRIDS = {
    "learn": ["4x2", "8x4", "8x8", "12x6", "16x4", "16x8", "16x16", "24x8", "24x12", "32x8", "32x16"],
    "certify": ["1x3", "2x3", "3x3", "4x3", "5x3", "6x3", "1x4", "2x4", "3x4"],
    "random": ["32x64", "64x64", "64x256", "128x64", "256x16", "256x64"],
    "transformer": ["3x2x4", "3x2x16", "3x2x64", "3x2x256", "3x2x1024"],
    "approx": ["256", "1024", "4096", "16384", "65536", "8x4x256", "8x4x16384"],
    "token": ["2x2x10", "2x2x30", "2x2x100", "4x2x10", "4x2x30", "4x2x100", "8x4x10", "8x4x30"],
}


def _child(kind: str, point: str) -> dict:
    """Run one point in this process; return what was measured (a refusal is an outcome)."""
    from exactlearn import ExactLearnError, Limits

    big = Limits(d=10**6, heads=10**6, queries=10**9, token_bound=10**6, model_d=10**6, model_heads=10**6,
                 model_entries=10**12, width=10**9, precision=1 << 30, certify_d=100, certify_heads=100,
                 certify_seconds=10**9)
    start = time.process_time()
    try:
        out = _run(kind, point, big, start)
    except ExactLearnError as exc:  # a refusal is a result too: its time counts
        out = {"refused": f"{type(exc).__name__}: {str(exc)[:80]}"}
    out["cpu_s"] = round(time.process_time() - start, 3)
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return out


def _run(kind: str, point: str, big, start: float) -> dict:
    from exactlearn import MultiHeadAttention, Oracle, learn

    out: dict = {}
    if kind == "learn":
        d, H = map(int, point.split("x"))
        oracle = Oracle(MultiHeadAttention.random(d, H, seed=0))
        rec = learn(oracle, d, heads=H, limits=big)
        out = {"queries": oracle.queries, "exact": rec.model.equivalent(oracle.target)}
    elif kind == "token":
        d, H, bound = map(int, point.split("x"))
        oracle = Oracle(MultiHeadAttention.random(d, H, seed=0))
        rec = learn(oracle, d, heads=H, token_bound=bound, limits=big)
        out = {"queries": oracle.queries, "exact": rec.model.equivalent(oracle.target)}
    elif kind == "certify":
        from exactlearn.symbolic import certify

        d, H = map(int, point.split("x"))
        cert = certify(d, H, check_point=False, limits=big)
        out = {"passed": cert.passed, "queries": cert.queries}
    elif kind == "random":
        d, H = map(int, point.split("x"))
        model = MultiHeadAttention.random(d, H, seed=0, height=10**18, limits=big)
        out = {"entries": H * d * d, "json_bytes": len(model.to_json())}
    elif kind == "transformer":
        from exactlearn.transformer import Transformer, learn_transformer

        d, H, m = map(int, point.split("x"))
        truth = Transformer.random(d, H, m, seed=0, limits=big)
        built = time.process_time() - start
        rec = learn_transformer(truth, d, heads=H)
        out = {"random_s": round(built, 3), "queries": rec.queries, "exact": rec.model == truth}
    elif kind == "approx":
        from exactlearn.approx import NoisyOracle, learn_approx

        d, H, precision = map(int, point.split("x")) if "x" in point else (2, 2, int(point))
        truth = MultiHeadAttention.random(d, H, seed=0, height=3)
        rec = learn_approx(NoisyOracle(truth, eps=0), d, heads=H, eps=0, precision=precision, limits=big)
        out = {"queries": rec.queries}
    return out


def _limits(cpu: int, memory_gb: float):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        size = int(memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return apply


def measure(kind: str, point: str, cpu: int, memory_gb: float) -> dict:
    """One point in a child process under the CPU and memory limits."""
    wall = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--child", kind, point], capture_output=True, text=True,
                          preexec_fn=_limits(cpu, memory_gb), cwd=ROOT, check=False)
    result: dict = {"kind": kind, "point": point, "wall_s": round(time.perf_counter() - wall, 1)}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode == 0 and lines:
        result.update(json.loads(lines[-1]), outcome="ok")
    else:
        tail = (proc.stderr.strip().splitlines() or [""])[-1][:120]
        result.update(outcome=f"failed (exit {proc.returncode}): {tail}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(GRIDS))
    parser.add_argument("--points", nargs="*", default=None, help="points instead of the grid")
    parser.add_argument("--limit", type=int, default=600, help="CPU seconds per point (default 600)")
    parser.add_argument("--memory", type=float, default=4.0, help="address space per point, GB (default 4)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("point", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.kind, args.point)), flush=True)
        return 0
    for point in args.points or GRIDS[args.kind]:
        print(json.dumps(measure(args.kind, point, args.limit, args.memory)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
