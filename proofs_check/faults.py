"""The faults :mod:`proofs_check.selftest` plants, where each is planted, and the probe that watches it.

A :class:`Fault` names the claims that should catch it, the effects it must
have for the self-test to count it (a fault whose effects never occur was not
exercised), and *where* it is planted: in the judge's process (the claims, the
runner, the independent evaluator, the certificate), in the learner's process
(a wrapped learner, a patched function of exactlearn) or in the oracle's process
(the log). The judge plants its part itself; the sandbox's processes plant
theirs when they start, through the hook :func:`install` named in their spawn
arguments (:mod:`proofs_check.processes`), and report their probe's snapshot to
the judge with every reply. The plants themselves live in
:mod:`proofs_check.plants` (exactlearn's behaviour), :mod:`proofs_check.cheats`
(learners that cheat or miscount) and :mod:`proofs_check.bugs` (proofs_check's
own code).

Each process watches its part with a :class:`~proofs_check.probe.Probe`.

>>> [f.key for f in FAULTS][:3]
['oracle-peek', 'extra-sample', 'swapped-evaluator']
>>> find_fault("dedup-log").where
(<Role.LEARNER: 'learner'>, <Role.ORACLE: 'oracle'>)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import bugs, cheats, plants
from .probe import Probe, merge, patch
from .wire import Role

__all__ = ["FAULTS", "SELF_TEST_CHECKS", "Fault", "Probe", "find_fault", "guard", "install", "merge", "patch"]

JUDGE, LEARNER, ORACLE = Role.JUDGE, Role.LEARNER, Role.ORACLE


@dataclass(frozen=True)
class Fault:
    key: str
    description: str
    plant: Callable[[Probe, Role], None] | None  # plants the fault's part for one role
    claims: tuple[str, ...]  # the claims run with this fault planted
    where: tuple[Role, ...] = (LEARNER,)  # the processes the fault is planted in
    expects: tuple[str, ...] = ()  # effects that must occur for the fault to count as planted


#: the faults the self-test plants (``python -m proofs_check --self-test``)
FAULTS = [
    Fault("oracle-peek", "learner right only if it can read the model via its oracle",
          cheats.oracle_peek, ("1", "9"), expects=("model hidden: wrong model returned",)),
    Fault("extra-sample", "one more sample per matching configuration, library formulas changed to match",
          plants.extra_sample, ("2", "4", "7", "40", "50"), (JUDGE, LEARNER),
          ("extra sample asked",)),
    Fault("swapped-evaluator", "claim 9's evaluator replaced by the library's evaluation",
          bugs.swapped_evaluator, ("9",), (JUDGE,), ("library evaluation used",)),
    Fault("empty-exceptional-set", "the certificate's exceptional set is empty",
          plants.empty_exceptional_set, ("40",), (JUDGE,), ("exceptional polynomials dropped",)),
    Fault("spec-matching-tokens", "matching configuration (x + x', z + z') in the learner",
          plants.spec_matching_tokens, ("1", "7"), expects=("matching tokens changed",)),
    Fault("library-verdicts", "C understated 100x, library sweep verdicts and tolerances made to pass",
          plants.library_verdicts, ("20",), (JUDGE,), ("C understated",)),
    Fault("no-uniqueness-check", "exact path takes the first pairing, never checks uniqueness",
          plants.no_uniqueness_check, ("8",), expects=("ambiguous pairing taken",)),
    Fault("uncounted-query", "miscounting: the learner asks a query it does not count",
          cheats.uncounted_query, ("2", "7"), expects=("uncounted query asked",)),
    Fault("miscounting-oracle", "the oracle's log misses the first answered query of a session",
          bugs.miscounting_log, ("2", "3", "7", "50"), (ORACLE,), ("query left out of the log",)),
    Fault("skipped-redraw", "a redraw made but not counted or reported", plants.skipped_redraw,
          ("2",), expects=("redraw hidden",)),
    Fault("long-query", "one extra query of length 2H + 2", cheats.long_query, ("3",),
          expects=("long query asked",)),
    Fault("lenient-bound", "told H0 < H, the learner retries with larger H0", cheats.lenient_bound,
          ("6",), expects=("retried with a larger bound",)),
    Fault("tf-wrong-line", "the Transformer learner returns one FFN line perturbed", cheats.tf_wrong_line,
          ("50",), expects=("FFN line perturbed",)),
    Fault("tf-uncounted-verify", "the Transformer learner does not count its verification queries",
          plants.tf_uncounted_verify, ("50",), expects=("verification query not counted",)),
    Fault("tf-unpaired-step1", "Transformer step 1 asks T(X) again after every pair (X, -X)",
          plants.tf_unpaired_step1, ("50",), expects=("extra step-1 query asked",)),
    Fault("tf-oracle-peek", "Transformer learner right only if it can read the model via its oracle",
          cheats.tf_oracle_peek, ("50",), expects=("model hidden: wrong model returned",)),
    # the faults of issue 22, each in its own form
    Fault("introspecting-learner", "a wrong learner (v + 1; a_1 + 1) that searches gc, frames, closures "
          "and bound methods for the model and returns the truth if it finds it", cheats.introspecting,
          ("1", "9", "50"), expects=("wrong learner searched for the truth",)),
    Fault("log-eraser", "asks 2H + 1 uncounted probes (one of length 2H + 2) and deletes them from any "
          "log it can find", cheats.log_eraser, ("2", "3"), expects=("uncounted probes asked",)),
    Fault("dropped-crash", "the runner drops the row of a claim whose check raised", bugs.dropped_crash,
          ("0",), (JUDGE,), ("crashed claim dropped",)),
    Fault("json-verdict-any", "the JSON's top-level verdict uses any(): it disagrees with the exit code",
          bugs.json_verdict_any, ("0",), (JUDGE,), ("JSON verdict from any()",)),
    Fault("self-reported-length", "the learner reports max_length from its last query",
          cheats.self_reported_length, ("2", "3"), expects=("max_length taken from the last query",)),
    Fault("first-row-canonical", "canonical() merges heads whose exp(W) share the first row",
          plants.first_row_canonical, ("5",), (JUDGE, LEARNER, ORACLE),
          ("heads with equal first rows merged",)),
    Fault("missing-exceptional-factor", "the certificate's exceptional set misses its first "
          "pole-difference factor", plants.missing_exceptional_factor, ("40",), (JUDGE,),
          ("pole-difference factor dropped",)),
    Fault("lean-mislabel", "the lean schedule swaps the labels of its last predicted configuration",
          plants.lean_mislabel, ("2", "3"), expects=("labels swapped",)),
    Fault("refused-transformers", "the Transformer learner refuses every solvable d = 3, H = 2 model, "
          "naming LINES_ON_SLICE", cheats.refused_transformers, ("50",),
          expects=("solvable model refused",)),
    Fault("dedup-log", "the oracle's log drops a query equal to the one before; the learner retries a "
          "query without counting it", bugs.dedup_log, ("1",), (LEARNER, ORACLE),
          ("retry asked", "repeat dropped from the log")),
    # number fields (issue 21)
    Fault("unit-factor", "the number-field learner returns each exp(W) with its first entry off by a unit "
          "factor of K", plants.unit_factor, ("21",), expects=("exp(W) entry off by a unit factor",)),
    Fault("field-library-evaluator", "claim 21's sympy evaluator replaced by exactlearn's arithmetic over K",
          bugs.field_library_evaluator, ("21",), (JUDGE,), ("exactlearn's K arithmetic used",)),
]

#: broken plants that the self-test must report as broken, never as caught (used by the tests)
SELF_TEST_CHECKS = [
    Fault("stale-target", "patches a function that does not exist", plants.stale_target, ("8",)),
    Fault("wrong-signature", "patched redraw with the wrong signature", plants.wrong_signature, ("2",),
          expects=("redraw hidden",)),
]


def find_fault(key: str) -> Fault:
    return next(f for f in [*FAULTS, *SELF_TEST_CHECKS] if f.key == key)


def install(probe: Probe, role: Role, key: str) -> None:
    """The hook of a sandbox process: plant fault ``key``'s part for ``role`` (if it has one)."""
    fault = find_fault(key)
    if fault.plant is not None and role in fault.where:
        fault.plant(probe, role)


def guard(probe: Probe, role: Role) -> None:
    """The hook that watches every learner a process calls: an exception that is not a refusal is
    unexpected (in the learner's process: exactlearn's learners; in the judge's: the certificate)."""
    from . import library

    if role is LEARNER:
        for name in ("learn", "learn_approx", "learn_transformer"):
            patch(library, name, probe.wrap(f"library.{name}", getattr(library, name)))
    elif role is JUDGE:
        import exactlearn.symbolic

        patch(library, "learn_symbolic", probe.wrap("library.learn_symbolic", library.learn_symbolic))
        patch(exactlearn.symbolic, "certify", probe.wrap("certify", exactlearn.symbolic.certify))
