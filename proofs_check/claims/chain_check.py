"""The chain a learner actually ran, read from the oracle's log, against claim 7's link identities.

Used by claim 7 (:mod:`.c07_symbolic_lemmas`). A run's log is grouped into
configurations (:mod:`proofs_check.transcript`); for a run without redraws the
log must be the chained schedule: ``d^2`` measurement configurations
(``k = 0..2H``), then one matching configuration per link (``k = 1..2H-1``).
Link ``j`` must share ``x`` or ``a = z - x`` as the chain rule says (the first
``d - 1`` links ``x``, then ``a, x, a, ...``), and its matching configuration
``C`` must satisfy what lemma C proves about it: ``M_C = M_{j-1} + M_j`` with
``M = (z - x) x^T``, and ``x_C = x``, ``a_C = a_{j-1} + a_j`` (shared ``x``) or
``a_C = a``, ``x_C = x_{j-1} + x_j`` (shared ``a``). The ``d^2`` matrices must
span all ``d x d`` matrices (lemma D). For a run with redraws every matching
configuration must satisfy the identities with some linked pair measured before it.
"""

from __future__ import annotations

from dataclasses import dataclass

from flint import fmpq_mat

from ..instances import Instance, exact_problems, figure_problems, fresh_sequences
from ..sandbox import current
from ..transcript import Group, groups

__all__ = ["ChainTask", "chain_kind", "link_identities", "run_chain"]


def chain_kind(j: int, d: int) -> str:
    """The chain rule (docs/algorithm.md section 4): links ``1..d-1`` share ``x``, then ``a, x, a, ...``."""
    if j < d:
        return "x"
    return "a" if (j - d) % 2 == 0 else "x"


def _add(p, q):
    return tuple(a + b for a, b in zip(p, q))


def _matrix(g: Group) -> list[int]:
    return [ai * xj for ai in g.a for xj in g.x]


def link_identities(kind: str, prev: Group, cur: Group, match: Group) -> list[str]:
    """What fails of lemma C for the link ``prev ~ cur`` with matching configuration ``match``."""
    problems = []
    if kind == "x":
        if prev.x != cur.x or prev.a == cur.a:
            problems.append("the linked configurations do not share exactly x")
        if match.x != cur.x or match.a != _add(prev.a, cur.a):
            problems.append("not x_C = x, a_C = a + a'")
    else:
        if prev.a != cur.a or prev.x == cur.x:
            problems.append("the linked configurations do not share exactly a")
        if match.a != cur.a or match.x != _add(prev.x, cur.x):
            problems.append("not a_C = a, x_C = x + x'")
    if _matrix(match) != [p + q for p, q in zip(_matrix(prev), _matrix(cur))]:
        problems.append("M_C != M + M'")
    return problems


@dataclass(frozen=True)
class ChainTask:
    d: int
    heads: int
    index: int
    seed: int

    def label(self) -> str:
        return f"d={self.d} H={self.heads} model {self.index} seed {self.seed}"


def _some_pair(measured: list[Group], match: Group) -> bool:
    for i, prev in enumerate(measured):
        for cur in measured[i + 1:]:
            for kind in ("x", "a"):
                if not link_identities(kind, prev, cur, match) or not link_identities(kind, cur, prev, match):
                    return True
    return False


def run_chain(task: ChainTask) -> dict:
    """Learn one random model through the sandbox and check the logged chain."""
    d, H = task.d, task.heads
    instance = Instance(d, H, 1000 * task.seed + 700 + task.index, 1000 * task.seed + 900 + task.index)
    seen = current().learn(instance.recipe(), instance.job())
    log, result = seen.log, seen.result
    out = {"task": task.label(), "redraws": 0, "links": 0, "kinds": "", "problems": list(seen.problems)}
    if "model" in result:
        out["redraws"] = result["redraws"]
        out["problems"] += figure_problems(result, log, "paper", d)
        fresh = fresh_sequences(repr(task), d, 2 * H + 3)
        out["problems"] += exact_problems(result["model"], seen.truth, fresh)
    else:
        out["problems"].append(f"learning failed: {result.get('refused') or result.get('crashed')}")
        out["redraws"] = result.get("redraws") or 0
    try:
        configs = groups(log.queries)
    except ValueError as exc:
        out["problems"].append(f"log: {exc}")
        return out
    measured = [g for g in configs if g.kind == "measurement"]
    matching = [g for g in configs if g.kind == "matching"]
    full, short = list(range(2 * H + 1)), list(range(1, 2 * H))
    if any(g.ks != full for g in measured) or any(g.ks != short for g in matching):
        out["problems"].append("a configuration's copy numbers are not k = 0..2H (measurement) or 1..2H-1 "
                               "(matching)")
    if out["redraws"] or out["problems"]:
        seen: list[Group] = []
        for g in configs:
            if g.kind == "measurement":
                if g.z is not None:
                    seen.append(g)
            elif not _some_pair(seen, g):
                out["problems"].append(f"matching configuration x={g.x} z={g.z} fits no linked pair "
                                       f"measured before")
        return out
    if [g.kind for g in configs] != ["measurement"] * (d * d) + ["matching"] * (d * d - 1):
        out["problems"].append("the log is not d^2 measurement configurations followed by d^2 - 1 matching "
                               "ones")
        return out
    kinds = [chain_kind(j, d) for j in range(1, d * d)]
    for j, (kind, match) in enumerate(zip(kinds, matching), start=1):
        out["problems"] += [f"link {j} (shared {kind}): {p}" for p in link_identities(kind, measured[j - 1],
                                                                                      measured[j], match)]
    design = fmpq_mat(d * d, d * d, [e for g in measured for e in _matrix(g)])
    if design.rank() != d * d:
        out["problems"].append("the d^2 matrices (z - x) x^T do not span all d x d matrices")
    out["links"] = len(matching)
    out["kinds"] = "".join(kinds)
    return out


def chain_tasks(settings) -> list[ChainTask]:
    ds, hs, per = ((1, 2, 3, 4), (1, 2, 3), 2) if settings.full else ((1, 2, 3), (1, 2), 1)
    return [ChainTask(d, H, i, settings.seed) for d in ds for H in hs for i in range(per)]
