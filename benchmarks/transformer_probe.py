"""Adversarial probe of ``learn_transformer``: does it ever return a wrong model, crash or hang?

Every trial runs in a forked child with a CPU-time limit. The oracle is an opaque
closure with its own log. A trial is

* ``exact``   -- a model came back and agrees with the oracle on every logged
  query and on 30 fresh random sequences (up to 48 tokens, entries up to 4);
* ``refused`` -- an :class:`~exactlearn.ExactLearnError` (by condition name when a
  :class:`TransformerConditionError`);
* ``wrong``   -- a model came back that disagrees with the oracle somewhere checked;
* ``crash``   -- any other exception; ``hang`` -- the time limit was hit;
* ``miscount`` -- ``rec.queries`` differs from the oracle's log, or
  ``rec.max_length`` from the log's longest query or above ``max_length``.

Families: genuine random models (``d`` 1-4, ``H`` 1-3, ``m`` 1-8, with zero
``a_j``/``u_j``/``V_h``, shared ``W``, huge and tiny ``exp(W)`` entries,
``heads_bound > H``, 20 neurons), residual mismatches both ways, and
non-Transformer oracles (rational functions of the tokens, a 2-layer ReLU net, an
FFN with biases, a constant, an answer changed on one asked query, a Transformer
changed only on long sequences, floats, ``None``, an oracle that raises).

    PYTHONPATH=. python benchmarks/transformer_probe.py [--per 3] [--timeout 60]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import resource
import sys
import time
from collections import Counter

from flint import fmpq

from exactlearn import ExactLearnError
from exactlearn.transformer import Transformer, TransformerConditionError, learn_transformer

MAX_LENGTH = 10_000
PHASE = {"learning": True}  # per child: the raising oracle raises only while the learner runs


def _q(rng, num, den):
    return fmpq(rng.randint(-num, num), rng.randint(1, den))


def genuine(d, H, m, seed, edge=""):
    """A random Transformer; ``edge`` plants one edge case."""
    rng = random.Random(f"probe:{d}:{H}:{m}:{seed}:{edge}")
    exp_Ws = []
    for h in range(H):
        if edge == "shared_W" and h > 0:
            exp_Ws.append(exp_Ws[0])
            continue
        big = 10**40 if edge == "huge" else 30
        E = [[fmpq(rng.randint(1, big), rng.randint(1, big)) for _ in range(d)] for _ in range(d)]
        if edge == "tiny":  # one entry far below the smallest float
            E[0][0] = fmpq(1, 10**400)
        exp_Ws.append(E)
    Vs = [[[_q(rng, 5, 5) for _ in range(d)] for _ in range(d)] for _ in range(H)]
    if edge == "zero_V":
        Vs[-1] = [[0] * d for _ in range(d)]
    U = [[rng.randint(-3, 3) for _ in range(d)] for _ in range(m)]
    a = [_q(rng, 5, 3) for _ in range(m)]
    if edge == "zero_a":
        a[0] = 0
    if edge == "zero_u":
        U[0] = [0] * d
    if edge == "invisible_head":  # V_H^T sum_j a_j u_j = 0, V_H^T u_j != 0: head H invisible in the odd part
        s = [sum((aj * u[r] for aj, u in zip(a, U)), fmpq(0)) for r in range(d)]
        r = next((r for r in range(d) if s[r] != 0), None)
        if r is not None:
            V = Vs[-1]
            V[r] = [-sum((s[i] * V[i][c] for i in range(d) if i != r), fmpq(0)) / s[r] for c in range(d)]
    if edge == "pure_lines":  # sum_j a_j u_j = 0: every head invisible in the odd part
        U = U[: max(1, m // 2)]
        U = U + [[-x for x in u] for u in U]
        a = a[: len(U) // 2] * 2
    return Transformer(exp_Ws, Vs, U, a, residual=(edge == "residual"))


def _relu(x):
    return x if x > 0 else fmpq(0)


def non_transformer(kind, d, seed):
    """An oracle that is no Transformer of the stated kind."""
    rng = random.Random(f"probe-nt:{kind}:{d}:{seed}")
    t = Transformer.random(d, 2, 3, seed=seed)
    if kind == "rational_function":
        c = [_q(rng, 5, 3) for _ in range(d)]
        return lambda X: sum((ci * x[i] for x in X for i, ci in enumerate(c)), fmpq(0)) ** 2 / (1 + len(X))
    if kind == "two_layer":
        B = [[_q(rng, 3, 2) for _ in range(3)] for _ in range(2)]

        def two(X):
            y = [max(fmpq(0), sum((u_i * o_i for u_i, o_i in zip(u, t.outputs(X)[0])), fmpq(0))) for u in t.U]
            return sum((_relu(sum((b * z for b, z in zip(row, y)), fmpq(0))) for row in B), fmpq(0))
        return two
    if kind == "ffn_bias":
        return lambda X: t(X) + _relu(fmpq(1, 3) + t(X))
    if kind == "departs_long":  # a Transformer on every sequence the learner's steps ask, not beyond
        return lambda X: t(X) + (1 if len(X) >= 8 and len(set(map(tuple, X))) >= 3 else 0)
    if kind == "constant":
        return lambda X: fmpq(7, 3)
    if kind == "lie_once":
        k, seen = rng.randint(1, 120), []

        def lie(X):
            key = tuple(map(tuple, X))
            if key not in seen:
                seen.append(key)
            return t(X) + (1 if seen.index(key) == k - 1 else 0)
        return lie
    if kind == "float":
        return lambda X: float(t(X))
    if kind == "none":
        return lambda X: None
    if kind == "raises":
        calls = [0]
        stop = rng.randint(1, 300)

        def boom(X):
            calls[0] += 1
            if calls[0] == stop and PHASE["learning"]:
                raise RuntimeError("oracle down")
            return t(X)
        return boom
    raise ValueError(kind)


def trials(per: int):
    out = []
    for seed in range(per):
        for d in (1, 2, 3, 4):
            for H in (1, 2, 3):
                m = random.Random(f"m:{d}:{H}:{seed}").randint(1, 8)
                out.append(("genuine", dict(d=d, H=H, m=m, seed=seed), {}))
        for edge in ("zero_a", "zero_u", "zero_V", "shared_W", "huge", "tiny", "pure_lines",
                     "invisible_head"):
            for d, H in ((2, 2), (3, 2)):
                out.append(("genuine", dict(d=d, H=H, m=4, seed=seed, edge=edge), {}))
                out.append(("genuine", dict(d=d, H=H, m=4, seed=seed, edge=edge), {"bound": H + 1}))
        out.append(("genuine", dict(d=2, H=2, m=3, seed=seed), {"bound": 3}))
        out.append(("genuine", dict(d=3, H=2, m=20, seed=seed, edge="wide"), {}))  # many lines
        out.append(("genuine", dict(d=2, H=1, m=3, seed=seed, edge="residual"), {}))  # told: none
        out.append(("genuine", dict(d=2, H=1, m=3, seed=seed), {"residual": True}))  # told: one
        for kind in ("rational_function", "two_layer", "ffn_bias", "constant", "lie_once", "departs_long",
                     "float", "none", "raises"):
            out.append(("other", dict(kind=kind, d=2, seed=seed), {}))
    return out


def _fresh(d, rng, i):
    n, r = (9, 3) if i % 2 else (48, 4)
    return [tuple(rng.randint(-r, r) for _ in range(d)) for _ in range(rng.randint(1, n))]


def run_one(family, spec, opts, conn):
    d = spec["d"]
    H = spec.get("H", 2)
    f = genuine(**spec) if family == "genuine" else non_transformer(**spec)
    log = {"calls": 0, "max": 0, "asked": []}

    def oracle(X):  # a call counts once the oracle has answered (a raising call is not answered)
        y = f(X)
        log["calls"] += 1
        log["max"] = max(log["max"], len(X))
        log["asked"].append(X)
        return y

    kw = {"heads_bound": opts["bound"]} if "bound" in opts else {"heads": H}
    start = time.process_time()
    try:
        rec = learn_transformer(oracle, d, seed=spec["seed"], residual=opts.get("residual", False),
                                max_length=MAX_LENGTH, **kw)
    except TransformerConditionError as exc:
        name = exc.condition.name
        conn.send(("refused:" + name, _count_ok(exc, log), time.process_time() - start, str(exc)))
        return
    except ExactLearnError as exc:
        name = type(exc).__name__
        conn.send(("refused:" + name, _count_ok(exc, log), time.process_time() - start, str(exc)))
        return
    except Exception as exc:  # noqa: BLE001 - a crash is what we look for
        conn.send(("crash", True, time.process_time() - start, f"{type(exc).__name__}: {exc}"))
        return
    seconds = time.process_time() - start
    PHASE["learning"] = False
    counted = rec.queries == log["calls"] and rec.max_length == log["max"] <= MAX_LENGTH
    asked = list(log["asked"])
    rng = random.Random(1000 + spec["seed"])
    try:
        agree = all(rec.model(X) == f(X) for X in asked) and all(
            rec.model(X) == f(X) for X in (_fresh(d, rng, i) for i in range(30)))
    except Exception as exc:  # noqa: BLE001
        conn.send(("crash", counted, seconds, f"checking: {type(exc).__name__}: {exc}"))
        return
    conn.send(("exact" if agree else "wrong", counted, seconds, ""))


def _count_ok(exc, log):
    q = getattr(exc, "queries", None)
    return q is None or q == log["calls"]


def probe(per: int, timeout: float, out=sys.stdout):
    ctx = mp.get_context("fork")
    results = Counter()
    worst = 0.0
    notes: list[str] = []
    kinds: dict[str, Counter] = {}
    for family, spec, opts in trials(per):
        parent, child = ctx.Pipe(duplex=False)

        def target(family=family, spec=spec, opts=opts, child=child):
            resource.setrlimit(resource.RLIMIT_CPU, (int(timeout), int(timeout) + 1))
            run_one(family, spec, opts, child)

        p = ctx.Process(target=target)
        p.start()
        p.join(timeout * 3)
        if p.is_alive():
            p.kill()
            p.join()
        if parent.poll():
            verdict, counted, seconds, msg = parent.recv()
        else:
            verdict, counted, seconds, msg = "hang", True, timeout, ""
        worst = max(worst, seconds)
        results[verdict] += 1
        label = (spec.get("edge") or "plain") + ("+bound" if "bound" in opts else "") + (
            "+told_residual" if opts.get("residual") else "") if family == "genuine" else spec["kind"]
        kinds.setdefault(f"{family}:{label}", Counter())[verdict.split(":")[-1]] += 1
        if not counted:
            results["miscount"] += 1
        if verdict in ("wrong", "crash", "hang") or not counted:
            notes.append(f"{verdict} (counted={counted}): {family} {spec} {opts} {msg[:160]}")
    n = sum(v for k, v in results.items() if k != "miscount")
    exact = results["exact"]
    refused = sum(v for k, v in results.items() if k.startswith("refused"))
    print(f"trials {n}: exact {exact}, refused {refused}, wrong {results['wrong']}, "
          f"crash {results['crash']}, hang {results['hang']}, miscount {results['miscount']}; "
          f"slowest {worst:.2f} s", file=out)
    for k in sorted(k for k in results if k.startswith("refused")):
        print(f"  {k[8:]:<28} {results[k]}", file=out)
    for name, c in kinds.items():
        print(f"  {name:<32} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())), file=out)
    for line in notes:
        print("  " + line, file=out)
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per", type=int, default=3, help="seeds per family (default 3)")
    ap.add_argument("--timeout", type=float, default=60, help="CPU seconds per trial (default 60)")
    args = ap.parse_args(argv)
    results = probe(args.per, args.timeout)
    return 1 if results["wrong"] or results["crash"] or results["hang"] or results["miscount"] else 0


if __name__ == "__main__":
    sys.exit(main())
