"""Claim 5: the learner sees exactly the canonical form.

Statement. Merge heads with equal ``W_h`` (summing their ``v_h``) and drop a merged
head whose ``v`` sum is zero; sort. Two parameter lists with the same canonical
form compute the same function, and the learner returns that canonical form:
heads with a repeated ``W`` come back merged, heads whose ``v`` cancel are
dropped, and the order of heads does not matter. Heads whose ``W`` differ, even
in one entry, are different heads and are not merged. (In the copy function
``R(k) = u^T z + sum_h c_h / (1 + k rho_h)`` heads with equal ``W`` share
``rho_h`` and merge, and a zero ``v`` sum gives ``c_h = 0``.)

Source: the paper's abstract ("We recover a canonical representation by merging
heads with the same W_h, summing their corresponding v_h, and discarding a merged
head when this sum is zero"); docs/algorithm.md sections 1 and 3.

Check. For random base models (quick: d in 1..3, H in 1..3, 2 per cell; full:
d in 1..4, H in 1..4, 3 per cell) variants are built in the oracle process:
*merged* (one head split into two heads with the same exp(W) and v-parts summing
to its v), *cancelling* (two extra heads with a fresh exp(W) and values v, -v),
*permuted* (heads in reverse order; for H = 1 this is the base itself), *all
three at once* (shuffled), and for every row ``r`` a *near-merged* variant: the
split of *merged*, but the second part's exp(W) differs from the first in one
entry of row ``r`` (so it is a different head). Each variant of the first four
must have the base's canonical form (library ``canonical()``, ``==``) and answer
fresh random queries exactly as the base does, by the library's evaluation and
by the independent evaluator on the raw parameters. A near-merged
variant must have ``H + 1`` canonical heads and differ from the base on some
query. For the base and every variant, the canonical form must give the raw
model's values under the independent evaluator (a ``canonical()`` that merges
what it must not fails here, whatever ``==`` says). Every variant is learned
through the sandbox with its canonical ``H`` known and with ``H0`` = its stored
head count as a bound; the recovered model must equal its canonical form (``==``)
and the raw variant under the independent evaluator, with the learner's
figures equal to the log. A control variant with one value entry changed must
differ in canonical form and on some query, so the comparison has power.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from flint import fmpq

from exactlearn import Head, MultiHeadAttention

from ..independent import evaluate_rational
from ..instances import exact_problems, figure_problems, grid, learn_seed, model_seed
from ..learners import Job, LearnerKind
from ..registry import Claim, Outcome, Settings
from ..sandbox import Recipe, current

VARIANTS = ("merged", "cancelling", "permuted", "all three")
VARIANT = "proofs_check.claims.c05_canonical_form:variant_model"  # the recipe of a variant
QUERIES_PER_VARIANT = 6


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


def _near(E: tuple, row: int, rng: random.Random, used: set) -> tuple:
    """``E`` with one entry of ``row`` changed to another positive rational (not a used exp(W))."""
    while True:
        col, value = rng.randrange(len(E)), fmpq(rng.randint(1, 9), rng.randint(1, 9))
        if value == E[row][col]:
            continue
        changed = tuple(tuple(value if (a, b) == (row, col) else e for b, e in enumerate(r))
                        for a, r in enumerate(E))
        if changed not in used:
            return changed


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
    out = {
        "merged": MultiHeadAttention(split),
        "cancelling": MultiHeadAttention(cancelling),
        "permuted": MultiHeadAttention(permuted),
        "all three": MultiHeadAttention(everything),
        "control": MultiHeadAttention(control),
    }
    for row in range(d):
        near = split[:-1] + [Head(_near(first.exp_W, row, rng, used), rest)]
        out[f"near-merged (row {row})"] = MultiHeadAttention(near)
    return out


def variant_model(d: int, heads: int, seed: int, name: str) -> MultiHeadAttention:
    """The recipe of one variant (built in the oracle process; ``"base"`` is the base model)."""
    base = MultiHeadAttention.random(d, heads, seed=seed)
    if name == "base":
        return base
    return variants(base, random.Random(f"proofs_check.c05:{d}:{heads}:{seed}"))[name]


def _names(d: int) -> list[str]:
    return [*VARIANTS, *(f"near-merged (row {r})" for r in range(d))]


def _values(model: MultiHeadAttention, queries: list) -> tuple[list, list]:
    """The library's values and the independent evaluator's on the raw parameters."""
    raw = model.to_dict()
    return [model(q) for q in queries], [evaluate_rational(raw, q) for q in queries]


def _canonical_keeps_values(model: MultiHeadAttention, queries: list, raw_values: list) -> bool:
    """The canonical form gives the raw model's values (``raw_values``, independent evaluator)."""
    canonical = model.canonical().to_dict()
    return all(evaluate_rational(canonical, q) == v for q, v in zip(queries, raw_values))


def _learned(task: Task, name: str, H: int, stored: int, queries: list, values: list) -> dict:
    """The variant learned with its canonical H and with H0 = its stored head count (``values``: the
    raw variant's values on ``queries``, independent evaluator). When the two are equal (a near-merged
    variant) one run is both."""
    row: dict = {}
    recipe = Recipe(VARIANT, (task.d, task.heads, task.model_seed, name))
    modes = [("known H", {"heads": H}), ("bound", {"heads_bound": stored})]
    for mode, told in modes[:1] if stored == H else modes:
        seen = current().learn(recipe, Job(LearnerKind.EXACT, task.d, {"seed": task.learn_seed, **told}))
        result = seen.result
        if "model" not in result:
            row[f"learned ({mode})"] = False
            row[f"error ({mode})"] = result.get("refused") or result.get("crashed")
            continue
        problems = seen.problems + figure_problems(result, seen.log, "paper", task.d)
        problems += exact_problems(result["model"], seen.truth, queries, values)
        row[f"learned ({mode})"] = not problems and result["num_heads"] == H
        row[f"redraws ({mode})"] = result["redraws"]
        if problems:
            row[f"problems ({mode})"] = problems[:3]
    if stored == H:
        row["learned (bound)"] = row["learned (known H)"]  # H0 = H: the same run
    return row


def _fresh(task: Task, name: str) -> list:
    rng = random.Random(f"proofs_check.c05.queries:{task}:{name}")
    longest = 2 * task.heads + 3
    return [[tuple(rng.randint(-2, 2) for _ in range(task.d)) for _ in range(rng.randint(1, longest))]
            for _ in range(QUERIES_PER_VARIANT)]


def run(task: Task) -> dict:
    """Build the variants of one base model, compare them, learn each variant."""
    box = current()

    def built(name: str) -> MultiHeadAttention:
        args = (task.d, task.heads, task.model_seed, name)
        return box.build(Recipe(VARIANT, args))

    base = built("base")
    canonical = base.canonical()
    H = canonical.num_heads
    queries = _fresh(task, "base")
    expected = _values(base, queries)
    out: dict = {"task": f"d={task.d} H={task.heads} model_seed={task.model_seed}",
                 "base canonical keeps values": _canonical_keeps_values(base, queries, expected[1]),
                 "variants": {}}
    for name in [*_names(task.d), "control"]:
        model = built(name)
        values = _values(model, queries)
        near = name.startswith("near-merged")
        row = {"stored heads": model.num_heads, "canonical heads": model.canonical().num_heads,
               "same canonical form": model.canonical() == canonical,
               "same answers": values[0] == expected[0],
               "same answers (independent)": values[1] == expected[1],
               "canonical keeps values": _canonical_keeps_values(model, queries, values[1])}
        if name != "control":
            told = H + 1 if near else H
            row.update(_learned(task, name, told, model.num_heads, queries, values[1]))
        out["variants"][name] = row
    return out


def _ok(name: str, row: dict, H: int) -> bool:
    learned = row["learned (known H)"] and row["learned (bound)"] and row["canonical keeps values"]
    if name.startswith("near-merged"):
        return (learned and row["canonical heads"] == H + 1 and not row["same canonical form"]
                and not row["same answers (independent)"])
    return (learned and row["same canonical form"] and row["same answers"]
            and row["same answers (independent)"])


def _judge(results: list[dict]) -> tuple[list[str], dict, int]:
    failures: list[str] = []
    tally: dict[str, list[int]] = {}
    control_distinguished = 0
    for res in results:
        H = res["variants"]["merged"]["canonical heads"]
        if not res["base canonical keeps values"]:
            failures.append(f"{res['task']}: the base's canonical form and its raw parameters give different "
                            f"values (independent evaluator)")
        for name, row in res["variants"].items():
            if name == "control":
                if row["same canonical form"] or row["same answers"]:
                    failures.append(f"{res['task']}: the control (one v entry + 1) was not told apart: {row}")
                else:
                    control_distinguished += 1
                continue
            key = "near-merged (any row)" if name.startswith("near-merged") else name
            ok = _ok(name, row, H)
            tally.setdefault(key, [0, 0])
            tally[key][0] += ok
            tally[key][1] += 1
            if not ok:
                failures.append(f"{res['task']} {name}: {row}")
    return failures, tally, control_distinguished


def check(settings: Settings) -> Outcome:
    cells = grid(settings, per_cell_quick=2, per_cell_full=3, max_d=4)
    tasks = [Task(d, H, model_seed(settings, i), learn_seed(settings, i)) for d, H, i in cells]
    results = settings.map(run, tasks)
    failures, tally, control_distinguished = _judge(results)
    figures = {f"{name}: canonical, answers, learned": f"{good}/{n}" for name, (good, n) in tally.items()}
    figures["control told apart"] = f"{control_distinguished}/{len(results)}"
    figures["instances"] = results
    return Outcome(
        passed=bool(results) and not failures,
        checked=f"{len(results)} base models x 4 variants and a near-merged one per row: canonical form, "
                f"{QUERIES_PER_VARIANT} fresh queries (library and independent evaluator), learned with "
                f"H and with H0",
        figures=figures,
        details=failures,
    )


CLAIM = Claim(
    key="canonical-form",
    title="Canonical form",
    statement="Heads with equal W_h merge (v_h summed), merged heads with zero v vanish, "
              "order is irrelevant, heads differing in one entry of W stay apart: such models give the "
              "same oracle (or, near-merged, a different one) and the learner returns their canonical model.",
    source="paper abstract; docs/algorithm.md sections 1 and 3",
    check=check,
)
