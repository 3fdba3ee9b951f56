"""Adversarial probes of the learner, run in child processes so that a signal or a hang is caught.

Child:  python tests/reliability_probe.py PROBE FIRST COUNT LIMIT
        runs trials FIRST..FIRST+COUNT-1 of PROBE, each under a LIMIT-second alarm,
        and prints one JSON line per trial: {"probe", "trial", "outcome", "detail", "cpu"}.
Parent: :func:`run_probe` starts children, restarting after a trial that killed its child,
        and classifies every trial as one of OUTCOMES.

Outcomes: ``exact`` (the returned model equals the truth, or every check of the probe
passed), ``refused`` (an ExactLearnError subclass, with the right type where the probe
demands one), ``consistent`` (a model returned for a function that is no attention, which
agrees with every answer the function gave but not with the function elsewhere: no learner
can tell from those answers; counted only if a fresh run with ``verify=N`` refuses it),
``wrong`` (a model that is not the truth or contradicts an answer given, or the wrong error
type or counts), ``crash`` (the child died by a signal, or a non-exactlearn exception
escaped), ``hang`` (the trial exceeded its time limit).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

from reliability_inputs import ANSWERS
from reliability_inputs import PROBES as INPUT_PROBES
from reliability_inputs import SUITE as INPUT_SUITE

ROOT = Path(__file__).resolve().parent.parent
OUTCOMES = ("exact", "refused", "consistent", "wrong", "crash", "hang")
#: ``verify=N`` of the fresh run that must refuse a ``consistent`` model.
CONSISTENT_VERIFY = 20


class _Hang(BaseException):
    """Raised by the alarm: a BaseException, so no ``except Exception`` in the code under test catches it."""


# -- the probes: each takes a trial number and returns (outcome, detail) -----------------------
def _random_model(rng: random.Random, d_max: int = 3, h_max: int = 3):
    from exactlearn import MultiHeadAttention

    d, H = rng.randint(1, d_max), rng.randint(1, h_max)
    return MultiHeadAttention.random(d, H, seed=rng.randrange(10**9), height=rng.choice([3, 10, 30])), d, H


def _learned(truth, call):
    """Run ``call()`` (a learn call): exact / wrong for a model, refused for an ExactLearnError."""
    from exactlearn import ExactLearnError

    try:
        rec = call()
    except ExactLearnError as exc:
        return "refused", type(exc).__name__
    if rec.is_rational and rec.model.equivalent(truth):
        return "exact", f"{rec.queries} queries"
    return "wrong", f"returned {rec.model!r}" if rec.is_rational else "irrational weights"


def _liar(truth, rng: random.Random, planned: int):
    """An oracle answering like ``truth`` except once, at a random query, with a nearby wrong value."""
    from flint import fmpq

    lie_at = rng.randrange(planned)
    delta = fmpq(rng.choice([-1, 1]) * rng.randint(1, 5), rng.randint(1, 7))
    count = [0]

    def oracle(tokens):
        value = truth(tokens)
        count[0] += 1
        return value + delta if count[0] - 1 == lie_at else value

    return oracle


def probe_lie(trial: int, schedule: str, verify: int = 0):
    from exactlearn import learn
    from exactlearn.schedule import Schedule

    rng = random.Random(f"lie:{schedule}:{trial}")
    truth, d, _ = _random_model(rng)
    H = truth.num_canonical_heads
    oracle = _liar(truth, rng, Schedule(schedule).query_count(d, H))
    return _learned(truth, lambda: learn(oracle, d, heads=H, schedule=schedule, seed=trial, verify=verify))


def probe_lie_paper(trial: int):
    return probe_lie(trial, "paper")


def probe_lie_lean(trial: int):
    return probe_lie(trial, "lean")


def probe_lie_lean_verify(trial: int):
    """The same lies against the lean schedule with verify=10 (the report's suggestion)."""
    return probe_lie(trial, "lean", verify=10)


def _recorded(f):
    """``f`` with a transcript of every answer it gave: ``(wrapped, transcript)``."""
    transcript = []

    def oracle(tokens):
        value = f(tokens)
        transcript.append((tuple(tuple(t) for t in tokens), value))
        return value

    return oracle, transcript


def _judge_non_attention(name, rec, transcript, fresh_run):
    """A model returned for a non-attention: ``consistent`` only if it reproduces every answer
    given and a fresh run with ``verify`` refuses it; otherwise ``wrong``."""
    from exactlearn import ExactLearnError

    if not rec.is_rational:
        return "wrong", f"{name}: returned weights that are not exp-rational"
    model = rec.model
    for tokens, value in transcript:
        if model.evaluate(tokens) != value:
            return "wrong", f"{name}: the returned model contradicts the answer to {tokens}"
    try:
        fresh_run()
    except ExactLearnError as exc:
        return "consistent", (f"{name}: agrees with all {len(transcript)} answers; "
                              f"verify={CONSISTENT_VERIFY} "
                              f"refuses it ({type(exc).__name__})")
    return "wrong", f"{name}: verify={CONSISTENT_VERIFY} did not tell it from the function"


def probe_not_attention(trial: int, schedule: str = "paper", verify: int = 0):
    """Rational functions of the tokens that no attention computes: refused, or consistent with
    every answer given (then a fresh run with verify must refuse it); never exact."""
    from flint import fmpq

    from exactlearn import ExactLearnError, learn

    rng = random.Random(f"nonattention:{trial}")
    g, d, H = _random_model(rng, 2, 2)
    c = fmpq(rng.randint(1, 9), rng.randint(1, 9))
    kinds = {
        "square": lambda X: g(X) ** 2,
        "offset": lambda X: g(X) + c,
        "length": lambda X: fmpq(len(X)),
        "last-squared": lambda X: fmpq(X[-1][0] ** 2 + 1),
        "product": lambda X: g(X) * fmpq(X[0][0] + 2 * X[-1][-1] + 7),
        "constant": lambda X: c,
    }
    name = sorted(kinds)[trial % len(kinds)]
    f = kinds[name]
    oracle, transcript = _recorded(f)
    try:
        rec = learn(oracle, d, heads=H, schedule=schedule, seed=trial, verify=verify)
    except ExactLearnError as exc:
        return "refused", f"{name}: {type(exc).__name__}"
    return _judge_non_attention(name, rec, transcript, lambda: learn(
        f, d, heads=H, schedule=schedule, seed=trial, verify=max(verify, CONSISTENT_VERIFY)))


def probe_not_attention_lean_verify(trial: int):
    """The same functions against the lean schedule with verify=10."""
    return probe_not_attention(trial, "lean", verify=10)


def probe_bad_return(trial: int):
    """Oracles returning something that is not an exact rational: OracleOutputError / OracleError."""
    import math

    from exactlearn import ExactLearnError, OracleError, OracleOutputError, learn

    class Weird:
        def __eq__(self, other):
            raise RuntimeError("no comparisons")

        __hash__ = object.__hash__

    returns = [0.5, math.nan, None, "1/2", b"1", [1], complex(1, 1), Weird(), True, object()]
    bad = returns[trial % len(returns)]
    rng = random.Random(f"badreturn:{trial}")
    truth, d, _H = _random_model(rng, 2, 2)
    at = rng.randrange(3)  # every schedule asks at least 3 queries
    count = [0]

    def oracle(tokens):
        count[0] += 1
        return bad if count[0] > at else truth(tokens)

    try:
        learn(oracle, d, heads=truth.num_canonical_heads, seed=trial)
    except (OracleOutputError, OracleError) as exc:
        # queries counts the calls that returned, the refused answer included
        ok = exc.queries == at + 1 and exc.redraws is not None
        return ("refused", type(exc).__name__) if ok else ("wrong", f"queries {exc.queries} != {at + 1}")
    except ExactLearnError as exc:
        return "wrong", f"{type(bad).__name__}: {type(exc).__name__} instead of OracleOutputError"
    return "wrong", f"accepted {type(bad).__name__}"


def probe_raises(trial: int):
    """An oracle that raises at a random query: OracleError chaining it, with the counts so far."""
    from exactlearn import OracleError, learn

    rng = random.Random(f"raises:{trial}")
    truth, d, _ = _random_model(rng, 2, 2)
    errors = [ValueError("no"), KeyError("k"), ZeroDivisionError(), RecursionError(), MemoryError(),
              OSError(5, "io")]
    error = errors[trial % len(errors)]
    at = rng.randrange(12)
    count = [0]

    def oracle(tokens):
        if count[0] == at:
            raise error
        count[0] += 1
        return truth(tokens)

    try:
        rec = learn(oracle, d, heads=truth.num_canonical_heads, seed=trial)
    except OracleError as exc:
        ok = exc.__cause__ is error and exc.queries == at and exc.redraws is not None
        if ok:
            return "refused", type(error).__name__
        return "wrong", f"counts/cause lost: {exc.queries} != {at}"
    if rec.queries <= at:
        return "exact", "finished before the failing query"
    return "wrong", "error swallowed"


def probe_huge(trial: int):
    """Huge d, H, tokens and bounds: a quick ExactLearnError (never MemoryError, a hang or a signal)."""
    from exactlearn import ExactLearnError, MultiHeadAttention, Oracle, learn
    from exactlearn.approx import NoisyOracle, learn_approx

    small = MultiHeadAttention.random(2, 2, seed=trial)
    one = MultiHeadAttention.from_lists([[[2]]], [[1]])
    n = 10 ** (6 + trial % 7)
    cases = [
        lambda: learn(lambda X: 1, n, heads=1),
        lambda: learn(lambda X: 1, 1, heads=n),
        lambda: learn(Oracle(small), 2, heads=2, token_bound=n),
        lambda: learn(Oracle(small), 2, heads=2, max_queries=trial % 28),
        lambda: learn(Oracle(small), 2, heads=2, verify=n),
        lambda: learn(lambda X: 0, 2, heads=1, max_redraws=n),
        lambda: MultiHeadAttention.random(3000 + trial, 1),
        lambda: MultiHeadAttention.random(2, n),
        lambda: MultiHeadAttention.random(2, 1, height=n**4),
        lambda: Oracle(one)([(2 * n,), (n,)]),
        lambda: Oracle(one)([(n,), (-n,)]),
        lambda: Oracle(one)([(k,) for k in range(-3000, 3000)] + [(1500 + trial,)]),
        lambda: one([(2**64 + trial,), (2**70,)], max_bits=10**6),
        lambda: learn_approx(NoisyOracle(small, eps="1e-30"), 2, heads=2, max_condition=-trial),
    ]
    case = trial % len(cases)
    try:
        cases[case]()
    except ExactLearnError as exc:
        return "refused", f"case {case}: {type(exc).__name__}"
    return "wrong", f"case {case}: accepted"


def probe_lean_structured(trial: int):
    """Structured models whose predicted residues collide often (the lean loop of issue 12)."""
    from exactlearn import MultiHeadAttention, Oracle, learn

    rng = random.Random(f"leanstructured:{trial}")
    d, H = rng.choice([(2, 3), (2, 4), (2, 5), (3, 3)])
    Es = [h.exp_W for h in MultiHeadAttention.random(d, H, seed=trial).heads]
    base = [rng.randint(50, 150) for _ in range(d)]
    vs, seen = [], set()
    while len(vs) < H:
        v = tuple(b + rng.randint(0, 2) for b in base)
        if v not in seen:
            seen.add(v)
            vs.append(list(v))
    truth = MultiHeadAttention.from_lists(Es, vs)
    return _learned(truth, lambda: learn(Oracle(truth), d, heads=truth.num_canonical_heads,
                                          schedule="lean", seed=trial))


def probe_genuine(trial: int):
    """Random models under H, a bound H + 1 and the lean schedule: exact."""
    from exactlearn import Oracle, learn

    rng = random.Random(f"genuine:{trial}")
    truth, d, _ = _random_model(rng)
    H = truth.num_canonical_heads
    kind = trial % 3
    kwargs = [{"heads": H}, {"heads_bound": H + 1}, {"heads": H, "schedule": "lean"}][kind]
    return _learned(truth, lambda: learn(Oracle(truth), d, seed=trial, **kwargs))


def probe_approx_exact_answers(trial: int):
    """Exact answers (eps = 0) on the first-order approximate path, structured 3-head models near W = 0.

    Exact: every recovered entry within its radius of the truth. Refused: too ambiguous to resolve.
    Wrong: outside a radius, or the genuine answers declared inconsistent.
    """
    from exactlearn import InconsistentAnswersError, MultiHeadAttention
    from exactlearn.approx import (
        AmbiguousAnswersError,
        NoisyOracle,
        learn_approx,
        parameter_error,
    )

    rng = random.Random(f"approx:{trial}")
    d, H = 2, 3
    Es = [[[Fraction(rng.randint(7, 13), 10) for _ in range(d)] for _ in range(d)] for _ in range(H)]
    vs = [[rng.randint(0, 3) for _ in range(d)] for _ in range(H)]
    truth = MultiHeadAttention.from_lists(Es, vs)
    H = truth.num_canonical_heads
    if H == 0:
        return "exact", "zero model"
    try:
        rec = learn_approx(NoisyOracle(truth, eps=0), d, heads=H, seed=trial)
    except InconsistentAnswersError as exc:
        return "wrong", f"genuine answers declared inconsistent: {str(exc)[:120]}"
    except AmbiguousAnswersError:
        return "refused", "AmbiguousAnswersError"
    err = parameter_error(rec, truth)
    for i, j in enumerate(err.permutation):
        dW, dv = err.deviations[j]
        head = rec.heads[i]
        if any(abs(dW[a][b]) > head.W_radius[a][b] for a in range(d) for b in range(d)) or any(
                abs(dv[a]) > head.v_radius[a] for a in range(d)):
            return "wrong", f"outside the radii (max error {float(err.max_abs):.3g})"
    return "exact", f"max error {float(err.max_abs):.3g}"


# planted faults: the harness must see them (tests/test_reliability.py)
def probe_fault_signal(trial: int):
    os.kill(os.getpid(), signal.SIGFPE)


def probe_fault_hang(trial: int):
    while True:
        sum(range(1000))


def probe_fault_escape(trial: int):
    return {}["a non-exactlearn exception"]


PROBES = {name[len("probe_"):]: f for name, f in sorted(globals().items()) if name.startswith("probe_")}
PROBES.update(INPUT_PROBES)  # issue 25: model files, arguments, sizes, sweeps, saving, the command line
SUITE = ("lie_paper", "lie_lean", "lie_lean_verify", "not_attention", "not_attention_lean_verify",
         "bad_return",
         "raises", "huge", "lean_structured", "genuine", "approx_exact_answers") + INPUT_SUITE + ANSWERS


# -- child -------------------------------------------------------------------------------------
def _child(probe: str, first: int, count: int, limit: int) -> None:
    from exactlearn import ExactLearnError

    def alarm(signum, frame):
        raise _Hang()

    # the limit is on the child's CPU time (SIGVTALRM), so a loaded machine does not turn a slow trial
    # into a hang; the parent's wall-clock timeout is the backstop for a child stuck in C
    signal.signal(signal.SIGVTALRM, alarm)
    for trial in range(first, first + count):
        start = time.process_time()
        signal.setitimer(signal.ITIMER_VIRTUAL, limit)
        try:
            outcome, detail = PROBES[probe](trial)
        except _Hang:
            outcome, detail = "hang", f"over {limit} s of CPU"
        except ExactLearnError as exc:
            outcome, detail = "refused", type(exc).__name__
        except BaseException as exc:  # noqa: BLE001 - any other escape breaks the promise
            outcome, detail = "crash", f"{type(exc).__name__}: {str(exc)[:200]}"
        finally:
            signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        print(json.dumps({"probe": probe, "trial": trial, "outcome": outcome, "detail": detail,
                          "cpu": round(time.process_time() - start, 4)}), flush=True)


# -- parent ------------------------------------------------------------------------------------
def run_probe(probe: str, trials: int, limit: int = 20, first: int = 0) -> list[dict]:
    """Run ``trials`` trials of ``probe`` in children; every trial gets exactly one outcome."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    results: list[dict] = []
    trial = first
    while trial < first + trials:
        count = first + trials - trial
        try:
            proc = subprocess.run([sys.executable, __file__, probe, str(trial), str(count), str(limit)],
                                  check=False, capture_output=True, text=True, env=env,
                                  timeout=4 * count * limit + 60)  # wall clock: room for a loaded machine
            out, code = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as exc:  # stuck where the alarm cannot interrupt (in C)
            stdout = exc.stdout or ""
            out, code = (stdout.decode() if isinstance(stdout, bytes) else stdout), None
        for line in out.splitlines():
            if line.startswith("{"):
                results.append(json.loads(line))
                trial = results[-1]["trial"] + 1
        if trial < first + trials and (code is None or code != 0):
            what = "hang" if code is None else "crash"
            detail = "killed after the time limit" if code is None else (
                f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}")
            results.append({"probe": probe, "trial": trial, "outcome": what, "detail": detail, "cpu": None})
            trial += 1
        elif trial < first + trials:  # pragma: no cover - a child that stopped early without failing
            raise RuntimeError(f"child of {probe} stopped at trial {trial}")
    return results


def tally(results: list[dict]) -> dict[str, int]:
    counts = {k: 0 for k in OUTCOMES}
    for r in results:
        counts[r["outcome"]] += 1
    return counts


if __name__ == "__main__":
    _child(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
