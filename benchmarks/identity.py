"""Recorded runs: does a refactoring keep behaviour identical?

Runs a fixed list of learner runs (exact, lean, bound, refusals, approximate,
torch layers, Transformer, certificate) and records, for each, everything a
user can observe except timings: the returned model and counts, the redraws
and notes, or the error's type, message and counts, plus a hash of every
query asked and every answer received (the transcript).

    python benchmarks/identity.py record before.json     # on the old commit
    python benchmarks/identity.py compare before.json    # on the new one

``compare`` exits 1 and lists the runs that differ. ``--only exact,approx``
restricts the families (exact, approx, torch, transformer, certify).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

FAMILIES = ("exact", "approx", "torch", "transformer", "certify")


class Recorder:
    """Wraps an oracle: passes every query through and hashes ``(tokens, answer)``."""

    def __init__(self, oracle: Callable, d: Any = None, eps: Any = None):
        self.oracle, self.hash, self.calls = oracle, hashlib.sha256(), 0
        if d is not None:
            self.d = d
        if eps is not None:
            self.eps = eps

    def __call__(self, tokens):
        snapshot = repr([tuple(t) for t in tokens])
        answer = self.oracle(tokens)
        self.calls += 1
        self.hash.update(f"{snapshot}->{answer!r};".encode())
        return answer


def _clean(obj: Any) -> Any:
    """JSON-ready, timings dropped, floats as repr (bit-exact)."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items() if "second" not in str(k) and str(k) != "time"}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, float):
        return repr(obj)
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    return str(obj)


def _error(exc: BaseException) -> dict:
    return {"error": type(exc).__name__, "message": str(exc),
            "counts": [getattr(exc, k, None) for k in ("queries", "max_length", "redraws")],
            "reasons": [str(r) for r in getattr(exc, "reasons", [])]}


def _run(fn: Callable[[], Any], recorder: Recorder | None) -> dict:
    try:
        out = {"result": _clean(fn())}
    except Exception as exc:  # the refusals are part of the behaviour
        out = _error(exc)
    if recorder is not None:
        out["transcript"] = recorder.hash.hexdigest()
        out["calls"] = recorder.calls
    return out


# -- the runs -------------------------------------------------------------------
def exact_runs() -> Iterator[tuple[str, Callable[[], dict]]]:
    from flint import fmpq

    from exactlearn import MultiHeadAttention, Oracle, learn

    def one(model, d, rec_kwargs, wrap=None):
        def go():
            oracle = Oracle(model)
            target = oracle if wrap is None else wrap(oracle)
            recorder = Recorder(target, d=d)

            def fn():
                rec = learn(recorder, d, **rec_kwargs)
                out = rec.to_dict()
                out["oracle"] = [oracle.queries, oracle.max_length]
                out["reasons_kinds"] = [str(getattr(r, "reason", "")) for r in rec.redraw_reasons]
                return out

            return _run(fn, recorder)
        return go

    sizes = [(1, 1), (1, 3), (2, 1), (2, 2), (2, 3), (3, 1), (3, 2), (3, 3), (4, 2)]
    for d, H in sizes:
        for seed in range(6):
            model = MultiHeadAttention.random(d, H, seed=seed)
            yield f"exact d={d} H={H} seed={seed}", one(model, d, {"heads": H, "seed": seed})
            if seed < 3:
                yield (f"lean d={d} H={H} seed={seed}",
                       one(model, d, {"heads": H, "seed": seed, "schedule": "lean", "verify": 2}))
                yield (f"bound d={d} H={H}+1 seed={seed}",
                       one(model, d, {"heads_bound": H + 1, "seed": seed}))
            if seed < 2:
                yield (f"lean-bound d={d} H={H}+1 seed={seed}",
                       one(model, d, {"heads_bound": H + 1, "seed": seed, "schedule": "lean"}))
    # structured models: shared v, powers of one prime, zeros in v
    shared = MultiHeadAttention.from_lists(
        [[[2, 3], [5, 7]], [["1/2", 3], [11, 13]]], [[1, 2], [1, 2]])
    primes = MultiHeadAttention.from_lists(
        [[[2, 4], [8, 16]], [[4, 2], ["1/2", 8]]], [[1, 0], [0, 3]])
    for name, model in (("shared-v", shared), ("one-prime", primes)):
        for seed in range(4):
            yield f"{name} seed={seed}", one(model, 2, {"heads": 2, "seed": seed})
            yield f"{name} lean seed={seed}", one(model, 2, {"heads": 2, "seed": seed, "schedule": "lean"})
    # refusals
    big = MultiHeadAttention.random(2, 3, seed=5)
    for seed in range(3):
        yield f"wrong bound seed={seed}", one(big, 2, {"heads_bound": 2, "seed": seed})
        yield f"wrong H seed={seed}", one(big, 2, {"heads": 1, "seed": seed})
        yield f"too many H seed={seed}", one(MultiHeadAttention.random(2, 1, seed=seed), 2,
                                              {"heads": 3, "seed": seed, "max_redraws": 4})

    def lie(at: int, delta):
        def wrap(oracle):
            count = [0]

            def liar(tokens):
                count[0] += 1
                value = oracle(tokens)
                return value + delta if count[0] == at else value
            return liar
        return wrap

    model = MultiHeadAttention.random(2, 2, seed=7)
    for at in (1, 5, 17, 29):
        for delta in (fmpq(1), fmpq(1, 10**30)):
            yield (f"lie at {at} by {delta}", one(model, 2, {"heads": 2}, lie(at, delta)))
            yield (f"lean lie at {at} by {delta}", one(model, 2, {"heads": 2, "schedule": "lean"},
                                                        lie(at, delta)))

    def constant(_oracle):
        return lambda tokens: fmpq(3)

    def raising(oracle):
        count = [0]

        def fn(tokens):
            count[0] += 1
            if count[0] == 9:
                raise ZeroDivisionError("boom")
            return oracle(tokens)
        return fn

    yield "constant oracle", one(model, 2, {"heads": 2}, constant)
    yield "raising oracle", one(model, 2, {"heads": 2}, raising)
    yield "budget", one(model, 2, {"heads": 2, "max_queries": 29, "verify": 3})


def approx_runs() -> Iterator[tuple[str, Callable[[], dict]]]:
    from exactlearn import MultiHeadAttention
    from exactlearn.approx import NoisyOracle, RealMultiHeadAttention, RealOracle, learn_approx

    def one(make, d, kwargs):
        def go():
            oracle = make()
            recorder = Recorder(oracle, d=d, eps=getattr(oracle, "eps", None))
            return _run(lambda: learn_approx(recorder, d, **kwargs).to_dict(), recorder)
        return go

    for d, H in ((1, 1), (2, 1), (2, 2), (3, 2), (3, 3), (2, 3)):
        for seed in range(3):
            truth = MultiHeadAttention.random(d, H, seed=seed)
            for eps in ("1e-30", "1e-12"):
                yield (f"noisy d={d} H={H} seed={seed} eps={eps}",
                       one(lambda t=truth, e=eps, s=seed: NoisyOracle(t, eps=e, seed=s), d,
                           {"heads": H, "seed": seed}))
    real = RealMultiHeadAttention([[[0.3, -0.2], [0.1, 0.4]], [[-0.5, 0.2], [0.25, 0.1]]],
                                  [[1.0, -0.5], [0.25, 2.0]])
    for seed in range(3):
        yield (f"real d=2 H=2 seed={seed}",
               one(lambda: RealOracle(real, precision=53), 2, {"heads": 2, "seed": seed}))
        yield (f"real rigorous seed={seed}",
               one(lambda: RealOracle(real, precision=53), 2, {"heads": 2, "seed": seed, "rigorous": True}))
        yield (f"real scale 1/2 seed={seed}",
               one(lambda: RealOracle(real, precision=53), 2, {"heads": 2, "seed": seed, "scale": "1/2"}))
    truth = MultiHeadAttention.random(3, 3, seed=1)
    yield ("noisy guide=None d=3 H=3",
           one(lambda: NoisyOracle(truth, eps="1e-20", seed=0), 3, {"heads": 3, "guide": None}))
    yield ("noisy guide=model d=3 H=3",
           one(lambda: NoisyOracle(truth, eps="1e-20", seed=0), 3, {"heads": 3, "guide": truth}))
    yield ("noisy too noisy d=3 H=3",
           one(lambda: NoisyOracle(truth, eps="1e-3", seed=0), 3, {"heads": 3}))


def torch_runs() -> Iterator[tuple[str, Callable[[], dict]]]:
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    from exactlearn.targets.torch_demo import torch_default

    def one(H, seed, d):
        def go():
            return _run(lambda: _clean(vars(torch_default(H, seed, d=d))), None)
        return go

    for H in (1, 2, 3, 4):
        for seed in range(4 if H == 4 else 2):
            yield f"torch d=4 H={H} seed={seed}", one(H, seed, 4)
    yield "torch d=8 H=4 seed=0", one(4, 0, 8)


def transformer_runs() -> Iterator[tuple[str, Callable[[], dict]]]:
    from exactlearn.transformer import Transformer, learn_transformer

    def one(truth, d, kwargs):
        def go():
            recorder = Recorder(truth, d=d)
            return _run(lambda: learn_transformer(recorder, d, **kwargs).to_dict(), recorder)
        return go

    for d, H, width in ((1, 1, 2), (2, 1, 2), (2, 2, 3), (3, 2, 3), (2, 3, 2), (3, 1, 4)):
        for seed in range(4):
            truth = Transformer.random(d, H, width, seed=seed)
            yield f"transformer d={d} H={H} w={width} seed={seed}", one(truth, d, {"heads": H, "seed": seed})
            if seed < 2:
                yield (f"transformer bound d={d} H={H}+1 w={width} seed={seed}",
                       one(truth, d, {"heads_bound": H + 1, "seed": seed}))
    truth = Transformer.random(2, 2, 3, seed=1)
    yield "transformer wrong H", one(truth, 2, {"heads": 1})
    yield "transformer short", one(truth, 2, {"heads": 2, "max_length": 5})


def certify_runs() -> Iterator[tuple[str, Callable[[], dict]]]:
    from exactlearn.symbolic import certify

    for d, H, schedule in ((1, 2, "paper"), (2, 1, "paper"), (2, 2, "paper"), (2, 2, "lean")):
        yield (f"certify d={d} H={H} {schedule}",
               lambda d=d, H=H, s=schedule: _run(lambda: certify(d, H, schedule=s).to_dict(), None))


RUNS = {"exact": exact_runs, "approx": approx_runs, "torch": torch_runs,
        "transformer": transformer_runs, "certify": certify_runs}


def record(families: list[str]) -> dict:
    out: dict[str, dict] = {}
    for family in families:
        runs = list(RUNS[family]())
        for i, (name, go) in enumerate(runs):
            print(f"\r{family}: {i + 1}/{len(runs)}", end="", file=sys.stderr, flush=True)
            out[f"{family}: {name}"] = go()
        print(file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["record", "compare"])
    parser.add_argument("file")
    parser.add_argument("--only", default=",".join(FAMILIES),
                        help="comma-separated families: " + ", ".join(FAMILIES))
    args = parser.parse_args(argv)
    families = [f for f in args.only.split(",") if f]
    unknown = [f for f in families if f not in RUNS]
    if unknown:
        parser.error(f"unknown families {unknown}; choose from {FAMILIES}")
    runs = record(families)
    if args.action == "record":
        with open(args.file, "w") as fh:
            json.dump(runs, fh, indent=1, sort_keys=True)
        print(f"recorded {len(runs)} runs to {args.file}")
        return 0
    with open(args.file) as fh:
        before = json.load(fh)
    before = {k: v for k, v in before.items() if k.split(":")[0] in families}
    differ = [k for k in before if k in runs and json.dumps(before[k], sort_keys=True)
              != json.dumps(runs[k], sort_keys=True)]
    missing = [k for k in before if k not in runs] + [k for k in runs if k not in before]
    for k in differ:
        print(f"DIFFERS {k}")
        print(f"  before: {json.dumps(before[k], sort_keys=True)[:600]}")
        print(f"  now:    {json.dumps(runs[k], sort_keys=True)[:600]}")
    for k in missing:
        print(f"MISSING {k}")
    print(f"{len(runs) - len(differ)} of {len(runs)} runs identical; {len(differ)} differ, "
          f"{len(missing)} missing on one side")
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())
