"""Claim 5: the learner sees exactly the canonical form.

Statement. Merge heads with equal ``W_h`` (summing their ``v_h``) and drop a merged
head whose ``v`` sum is zero; sort. Two parameter lists with the same canonical
form compute the same function, and the learner returns that canonical form:
heads with a repeated ``W`` come back merged, heads whose ``v`` cancel are
dropped, and the order of heads does not matter. (In the copy function
``R(k) = u^T z + sum_h c_h / (1 + k rho_h)`` heads with equal ``W`` share
``rho_h`` and merge, and a zero ``v`` sum gives ``c_h = 0``.)

Source: the paper's abstract ("We recover a canonical representation by merging
heads with the same W_h, summing their corresponding v_h, and discarding a merged
head when this sum is zero"); docs/algorithm.md sections 1 and 3.

Check. For random base models (quick: d in 1..3, H in 1..3, 2 per cell; full:
d in 1..4, H in 1..4, 3 per cell) four variants are built: *merged* (one head split
into two heads with the same exp(W) and v-parts summing to its v), *cancelling*
(two extra heads with a fresh exp(W) and values v, -v), *permuted* (heads in
reverse order; for H = 1 this is the base itself), and *all three at once*
(shuffled). Each variant must have the base's
canonical form, answer every one of a set of fresh random queries exactly as the
base does, and be learned both with H known and with H0 = its stored head count
as a bound, returning the base's canonical model (and H). A control variant with
one value entry changed must differ in canonical form and on some query, so the
comparison has power.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from flint import fmpq

from exactlearn import Head, MultiHeadAttention
from exactlearn.errors import RecoveryError

from .. import library
from ..instances import grid, learn_seed, model_seed
from ..oracles import model_oracle
from ..registry import Claim, Outcome, Settings

VARIANTS = ("merged", "cancelling", "permuted", "all three")
QUERIES_PER_VARIANT = 8


@dataclass(frozen=True)
class Task:
    d: int
    heads: int
    model_seed: int
    learn_seed: int


def _rational(rng: random.Random, nonzero: bool = True) -> fmpq:
    while True:
        q = fmpq(rng.randint(-9, 9), rng.randint(1, 9))
        if q != 0 or not nonzero:
            return q


def variants(base: MultiHeadAttention, rng: random.Random) -> dict[str, MultiHeadAttention]:
    """The variants of ``base`` described in the module docstring (and the control)."""
    heads = list(base.heads)
    d = base.d
    first = heads[0]
    part = tuple(_rational(rng) for _ in range(d))
    while part == first.v:
        part = tuple(_rational(rng) for _ in range(d))
    rest = tuple(a - b for a, b in zip(first.v, part))
    split = [Head(first.exp_W, part)] + heads[1:] + [Head(first.exp_W, rest)]
    used = {h.exp_W for h in heads}
    while True:
        fresh = tuple(tuple(fmpq(rng.randint(1, 9), rng.randint(1, 9)) for _ in range(d)) for _ in range(d))
        if fresh not in used:
            break
    value = tuple(_rational(rng) for _ in range(d))
    pair = [Head(fresh, value), Head(fresh, tuple(-a for a in value))]
    cancelling = heads[:1] + pair[:1] + heads[1:] + pair[1:]
    permuted = heads[::-1] if len(heads) > 1 else heads
    everything = split + pair
    rng.shuffle(everything)
    control_v = list(first.v)
    control_v[0] += 1
    control = [Head(first.exp_W, tuple(control_v))] + heads[1:]
    return {
        "merged": MultiHeadAttention(split),
        "cancelling": MultiHeadAttention(cancelling),
        "permuted": MultiHeadAttention(permuted),
        "all three": MultiHeadAttention(everything),
        "control": MultiHeadAttention(control),
    }


def run(task: Task) -> dict:
    """Build the variants of one base model, compare oracles, learn each variant."""
    base = MultiHeadAttention.random(task.d, task.heads, seed=task.model_seed)
    canonical = base.canonical()
    H = canonical.num_heads
    rng = random.Random(f"proofs_check.c05:{task}")
    models = variants(base, rng)
    queries = [[tuple(rng.randint(-3, 3) for _ in range(task.d)) for _ in range(rng.randint(1, 2 * H + 3))]
               for _ in range(QUERIES_PER_VARIANT)]
    base_oracle, _ = model_oracle(base)
    expected = [base_oracle(q) for q in queries]
    out: dict = {"task": f"d={task.d} H={task.heads} model_seed={task.model_seed}", "variants": {}}
    for name, model in models.items():
        oracle, _ = model_oracle(model)
        same_answers = all(oracle(q) == e for q, e in zip(queries, expected))
        row = {
            "stored heads": model.num_heads,
            "same canonical form": model.canonical() == canonical,
            "same answers": same_answers,
        }
        if name != "control":
            for mode, kwargs in (("known H", {"heads": H}), ("bound", {"heads_bound": model.num_heads})):
                try:
                    rec = library.learn(model_oracle(model)[0], task.d, seed=task.learn_seed, **kwargs)
                    row[f"learned ({mode})"] = rec.model == canonical and rec.num_heads == H
                    row[f"redraws ({mode})"] = rec.redraws
                except RecoveryError as exc:
                    row[f"learned ({mode})"] = False
                    row[f"error ({mode})"] = f"{type(exc).__name__}: {exc}"
        out["variants"][name] = row
    return out


def check(settings: Settings) -> Outcome:
    cells = grid(settings, per_cell_quick=2, per_cell_full=3, max_d=4)
    tasks = [Task(d, H, model_seed(settings, i), learn_seed(settings, i)) for d, H, i in cells]
    results = settings.map(run, tasks)
    failures = []
    tally = {name: [0, 0] for name in VARIANTS}
    control_distinguished = 0
    for res in results:
        for name, row in res["variants"].items():
            if name == "control":
                if row["same canonical form"] or row["same answers"]:
                    failures.append(f"{res['task']}: the control (one v entry + 1) was not told apart: {row}")
                else:
                    control_distinguished += 1
                continue
            ok = (row["same canonical form"] and row["same answers"]
                  and row["learned (known H)"] and row["learned (bound)"])
            tally[name][0] += ok
            tally[name][1] += 1
            if not ok:
                failures.append(f"{res['task']} {name}: {row}")
    figures = {f"{name}: canonical, answers, learned": f"{good}/{n}" for name, (good, n) in tally.items()}
    figures["control told apart"] = f"{control_distinguished}/{len(results)}"
    figures["instances"] = results
    return Outcome(
        passed=bool(results) and not failures,
        checked=f"{len(results)} base models x 4 variants: canonical form, "
                f"{QUERIES_PER_VARIANT} fresh queries, learned with H and with H0",
        figures=figures,
        details=failures,
    )


CLAIM = Claim(
    key="canonical-form",
    title="Canonical form",
    statement="Heads with equal W_h merge (v_h summed), merged heads with zero v vanish, "
              "order is irrelevant: such models give the same oracle and the same recovered canonical model.",
    source="paper abstract; docs/algorithm.md sections 1 and 3",
    check=check,
)
