"""The faults :mod:`proofs_check.selftest` plants, and the probe that watches each one.

A ``plant_*`` function changes one thing in the current process: it wraps a
learner that the claims call through :mod:`proofs_check.library`, or patches a
function of exactlearn (or of proofs_check). Every patched function is wrapped
by a :class:`Probe`, which

* counts the times the fault actually changed what happened (its *effects*,
  e.g. "a redraw was hidden"); a fault whose expected effect never occurs was
  not exercised, and the self-test fails;
* records every exception other than a refusal of exactlearn
  (:class:`~exactlearn.errors.ExactLearnError`) or a detection by a claim's own
  guard (:class:`~proofs_check.library.LibraryEvaluationCalled`): a plant that
  raises a ``TypeError`` or ``AttributeError`` is broken, and a claim that
  "catches" it has judged a crash, not the fault.

Patching goes through :func:`patch`, which refuses a name that does not exist,
so a plant aimed at a function that a refactoring removed fails loudly. The
patched names of exactlearn are the places to retarget when its internals move:
``exactlearn.learn`` (``MeasuredRun._query``, ``MeasuredRun.redraw``,
``link_matchings``, ``linked_tokens``), ``exactlearn.chain.linked_tokens``, the
count formulas of ``exactlearn.schedule``, ``exactlearn.symbolic.certificate.
exceptional_factors``, ``exactlearn.approx.sensitivity`` and the Transformer
learner's per-step counter ``exactlearn.transformer.learn._Asker.__call__``.

>>> probe = Probe()
>>> double = probe.wrap("double", lambda n: 2 * n)
>>> double(2), dict(probe.calls)
(4, {'double': 1})
>>> probe.expect("changed"); probe.missing()
['changed']
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["FAULTS", "SELF_TEST_CHECKS", "Fault", "Probe", "patch"]


class Probe:
    """What the planted fault did in this process: calls, effects, unexpected exceptions."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()  # calls of each wrapped function
        self.effects: Counter[str] = Counter()  # times the fault changed the run, by effect
        self.expected: list[str] = []  # effects that must occur for the fault to count as planted
        self.unexpected: list[str] = []  # exceptions no claim may count as a catch
        self._seen: list[BaseException] = []

    def expect(self, effect: str) -> None:
        """Declare an effect the fault must have at least once."""
        self.expected.append(effect)

    def effect(self, name: str) -> None:
        self.effects[name] += 1

    def missing(self) -> list[str]:
        """The expected effects that never occurred."""
        return [name for name in self.expected if not self.effects[name]]

    def wrap(self, name: str, fn: Callable) -> Callable:
        """``fn``, counted under ``name``; an exception it raises that is not a refusal or a claim's
        detection is recorded as unexpected (and raised on)."""
        from exactlearn.errors import ExactLearnError

        from .library import LibraryEvaluationCalled

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            try:
                return fn(*args, **kwargs)
            except LibraryEvaluationCalled:
                raise
            except Exception as exc:
                # a refusal is an ExactLearnError caused by nothing else (an OracleError chaining a
                # TypeError is a crash of the oracle)
                cause: BaseException | None = exc
                while cause is not None and isinstance(cause, ExactLearnError):
                    cause = cause.__cause__
                if cause is not None and not any(exc is seen for seen in self._seen):
                    self._seen.append(exc)
                    self.unexpected.append(f"{name}: {type(cause).__name__}: {cause}")
                raise

        return wrapper


def patch(owner: Any, name: str, value: Any) -> Any:
    """Replace ``owner.name`` (which must exist) by ``value``; returns the old value."""
    if not hasattr(owner, name):
        raise AttributeError(f"{getattr(owner, '__name__', owner)!r} has no attribute {name!r} to patch "
                             f"(retarget the fault)")
    old = getattr(owner, name)
    setattr(owner, name, value)
    return old


def patch_everywhere(name: str, value: Callable, *, skip: tuple[str, ...] = ()) -> list[str]:
    """Replace every binding of exactlearn's function ``name`` (by identity) in the loaded exactlearn
    modules except ``skip``; returns the modules changed."""
    import exactlearn  # noqa: F401  (loads the modules that bind the name)

    real = getattr(sys.modules["exactlearn.schedule"], name)
    changed = []
    for module_name, module in list(sys.modules.items()):
        ours = module_name == "exactlearn" or module_name.startswith("exactlearn.")
        if ours and module_name not in skip and getattr(module, name, None) is real:
            setattr(module, name, value)
            changed.append(module_name)
    return changed


def _learn_module():
    import exactlearn  # noqa: F401  (loads exactlearn.learn)

    return sys.modules["exactlearn.learn"]  # the module (the package attribute is the function)


def _wrap_learn(probe: Probe, name: str, wrapper: Callable) -> None:
    from . import library

    real = library.learn
    patch(library, "learn", probe.wrap(name, lambda oracle, d, **kwargs: wrapper(real, oracle, d, **kwargs)))


def _corrupted(rec):
    first = rec.heads[0]
    wrong = dataclasses.replace(first, v=(first.v[0] + 1,) + tuple(first.v[1:]))
    return dataclasses.replace(rec, heads=(wrong,) + tuple(rec.heads[1:]))


def plant_oracle_peek(probe: Probe | None = None) -> None:
    """A learner that is right only when it can read the model through its oracle."""
    from exactlearn import MultiHeadAttention

    probe = probe or Probe()
    probe.expect("model hidden: wrong model returned")

    def peek(real, oracle, d, **kwargs):
        rec = real(oracle, d, **kwargs)
        seen = getattr(oracle, "target", None) or getattr(oracle, "model", None)
        if isinstance(seen, MultiHeadAttention):
            return rec
        probe.effect("model hidden: wrong model returned")
        return _corrupted(rec)

    _wrap_learn(probe, "peeking learner", peek)


def plant_extra_sample(probe: Probe | None = None) -> None:
    """One more sample in every matching configuration, with the library's formulas changed to match."""
    from exactlearn import schedule

    probe = probe or Probe()
    probe.expect("extra sample asked")
    cls = _learn_module().ScheduleRun
    real = cls._query

    def query(self, cfg, where, *args, **kwargs):
        found = real(self, cfg, where, *args, **kwargs)
        if cfg.at_zero is not None:  # R(0), R(oo) known (a matching configuration): one more sample, k = 2H
            probe.effect("extra sample asked")
            self.ask(schedule.copies_query(cfg.x, cfg.z, 2 * self.H))
        return found

    patch(cls, "_query", probe.wrap("ScheduleRun._query", query))
    # every configuration with a known R(0) gets one more sample: d^2 - 1 of them in the paper and lean
    # schedules; the lean fallback matches d - 1 + 2 (d^2 - d)
    extra = {"paper_query_count": lambda d: d * d - 1, "lean_query_count": lambda d: d * d - 1,
             "fallback_query_count": lambda d: d - 1 + 2 * (d * d - d)}
    for name, more in extra.items():
        patch_everywhere(name, _plus(getattr(schedule, name), more))


def _plus(count: Callable[[int, int], int], more: Callable[[int], int]) -> Callable[[int, int], int]:
    def changed(d: int, heads: int) -> int:
        return count(d, heads) + more(d)

    return changed


def plant_swapped_evaluator(probe: Probe | None = None) -> None:
    """Claim 9's independent evaluator replaced by the library's own evaluation."""
    import sympy as sp

    from exactlearn import MultiHeadAttention

    from . import independent

    probe = probe or Probe()
    probe.expect("library evaluation used")

    def library_evaluation(model, tokens):
        probe.effect("library evaluation used")
        value = MultiHeadAttention.from_dict(model)(tokens)
        return sp.Rational(int(value.p), int(value.q))

    patch(independent, "evaluate", probe.wrap("independent.evaluate", library_evaluation))


def plant_empty_exceptional_set(probe: Probe | None = None) -> None:
    """The certificate records no exceptional polynomial (its all-nonzero check holds vacuously)."""
    from exactlearn.symbolic import certificate

    probe = probe or Probe()
    probe.expect("exceptional polynomials dropped")
    real = certificate.exceptional_factors

    def empty(ledger, n_e=0):
        factors, _ = real(ledger, n_e)
        if factors:
            probe.effect("exceptional polynomials dropped")
        return [], True

    patch(certificate, "exceptional_factors", probe.wrap("certificate.exceptional_factors", empty))


def plant_spec_matching_tokens(probe: Probe | None = None) -> None:
    """The learner's matching configuration is the superseded draft's (x + x', z + z')."""
    from exactlearn import schedule

    probe = probe or Probe()
    probe.expect("matching tokens changed")
    real = schedule.linked_tokens

    def added(kind, prev, cur):
        tokens = tuple(tuple(a + b for a, b in zip(p, c)) for p, c in zip(prev, cur))
        if tokens != real(kind, prev, cur):
            probe.effect("matching tokens changed")
        return tokens

    # the learner's modules only: the claims' own tokens (claim 8) stay the library's chain
    wrapped = probe.wrap("linked_tokens", added)
    patch(_learn_module(), "linked_tokens", wrapped)
    patch(sys.modules["exactlearn.chain"], "linked_tokens", wrapped)


def plant_library_verdicts(probe: Probe | None = None) -> None:
    """C understated 100 times, and the library's own sweep verdicts made to pass."""
    from exactlearn import approx
    from exactlearn.demos import evidence

    probe = probe or Probe()
    probe.expect("C understated")
    real = approx.sensitivity

    def understated(*args, **kwargs):
        sens = real(*args, **kwargs)
        probe.effect("C understated")
        return dataclasses.replace(sens, C_upper=sens.C_upper / 100)

    wrapped = probe.wrap("approx.sensitivity", understated)
    patch(approx, "sensitivity", wrapped)
    patch(evidence, "sensitivity", wrapped)
    # the library's verdicts, made to pass: claim 20 must not rely on them (they need not be called)
    patch(evidence.Sweep, "failures", lambda self: [])
    patch(evidence.SweepRow, "bound_holds", property(lambda self: True))
    patch(evidence.Refusal, "holds", property(lambda self: True))
    patch(evidence, "SLACK", 10**6)
    patch(evidence, "LINEAR_TOLERANCE", 10**6)


def plant_no_uniqueness_check(probe: Probe | None = None) -> None:
    """The exact path's pairing-uniqueness check removed: a link takes the first perfect matching."""
    probe = probe or Probe()
    probe.expect("ambiguous pairing taken")
    learn_module = _learn_module()
    real = learn_module.link_matchings

    def first_only(field, kind, prev, cur, target, limit=2):
        found = real(field, kind, prev, cur, target, limit=max(limit, 2))
        if len(found) > 1:
            probe.effect("ambiguous pairing taken")
        return found[:1]

    patch(learn_module, "link_matchings", probe.wrap("link_matchings", first_only))


def plant_uncounted_query(probe: Probe | None = None) -> None:
    """A miscounting learner: it asks one query (a one-token query) that its count leaves out."""
    probe = probe or Probe()
    probe.expect("uncounted query asked")

    def extra(real, oracle, d, **kwargs):
        probe.effect("uncounted query asked")
        oracle([(1,) + (0,) * (d - 1)])
        return real(oracle, d, **kwargs)

    _wrap_learn(probe, "miscounting learner", extra)


def plant_miscounting_oracle(probe: Probe | None = None) -> None:
    """The claims' oracle answers every query but leaves the first one out of its log."""
    from . import oracles

    probe = probe or Probe()
    probe.expect("query left out of the log")
    real = oracles.opaque_oracle

    def miscounting(evaluate):
        oracle, log = real(evaluate)
        state = {"first": True}

        def ask(tokens):
            answer = oracle(tokens)
            if state.pop("first", False):
                probe.effect("query left out of the log")
                log.queries.pop()
            return answer

        return probe.wrap("miscounting oracle", ask), log

    patch(oracles, "opaque_oracle", probe.wrap("opaque_oracle", miscounting))


def plant_skipped_redraw(probe: Probe | None = None) -> None:
    """The learner redraws its first degenerate configuration without counting or reporting it."""
    probe = probe or Probe()
    probe.expect("redraw hidden")
    cls = _learn_module().ScheduleRun
    real = cls.redraw

    def redraw(self, j, reason, detail):
        real(self, j, reason, detail)
        if not getattr(self, "_skipped", False):
            self._skipped = True
            self.counter.redraws -= 1
            self.redraw_reasons.pop()
            probe.effect("redraw hidden")

    patch(cls, "redraw", probe.wrap("ScheduleRun.redraw", redraw))


def plant_long_query(probe: Probe | None = None) -> None:
    """A learner that also asks one query of length 2H + 2 (and does not count it)."""
    probe = probe or Probe()
    probe.expect("long query asked")

    def longer(real, oracle, d, **kwargs):
        H = kwargs.get("heads") or kwargs.get("heads_bound")
        probe.effect("long query asked")
        oracle([(1,) + (0,) * (d - 1)] * (2 * H + 2))
        return real(oracle, d, **kwargs)

    _wrap_learn(probe, "long-query learner", longer)


def plant_lenient_bound(probe: Probe | None = None) -> None:
    """Told a bound H0, the learner retries with H0 + 1, H0 + 2 until it gets a model."""
    from exactlearn.errors import RecoveryError

    probe = probe or Probe()
    probe.expect("retried with a larger bound")

    def lenient(real, oracle, d, **kwargs):
        for extra in range(4):
            options = dict(kwargs)
            key = "heads" if "heads" in options else "heads_bound"
            options[key] = options[key] + extra
            if extra:
                probe.effect("retried with a larger bound")
            try:
                return real(oracle, d, **options)
            except RecoveryError:
                continue
        return real(oracle, d, **kwargs)

    _wrap_learn(probe, "lenient learner", lenient)


def _wrap_learn_transformer(probe: Probe, name: str, wrapper: Callable) -> None:
    from . import library

    real = library.learn_transformer
    patch(library, "learn_transformer",
          probe.wrap(name, lambda oracle, d, **kwargs: wrapper(real, oracle, d, **kwargs)))


def _with_model(rec, model):
    return dataclasses.replace(rec, model=model, canonical=model.canonical())


def plant_tf_wrong_line(probe: Probe | None = None) -> None:
    """The Transformer learner returns its model with the first FFN line ``u_1`` moved by ``e_1``."""
    from exactlearn.transformer import Transformer

    probe = probe or Probe()
    probe.expect("FFN line perturbed")

    def perturbed(real, oracle, d, **kwargs):
        rec = real(oracle, d, **kwargs)
        m = rec.model
        if not m.a[0] or not any(m.U[0]):
            return rec  # no line to perturb
        probe.effect("FFN line perturbed")
        U = [(m.U[0][0] + 1,) + tuple(m.U[0][1:])] + list(m.U[1:])
        return _with_model(rec, Transformer(m.exp_Ws, m.Vs, U, m.a, residual=m.residual))

    _wrap_learn_transformer(probe, "Transformer learner, line perturbed", perturbed)


def plant_tf_oracle_peek(probe: Probe | None = None) -> None:
    """A Transformer learner that is right only when it can read the model through its oracle."""
    from exactlearn.transformer import Transformer

    probe = probe or Probe()
    probe.expect("model hidden: wrong model returned")

    def peek(real, oracle, d, **kwargs):
        rec = real(oracle, d, **kwargs)
        seen = [oracle, getattr(oracle, "target", None), getattr(oracle, "model", None),
                getattr(oracle, "__self__", None)]
        if any(isinstance(s, Transformer) for s in seen):
            return rec
        probe.effect("model hidden: wrong model returned")
        m = rec.model
        return _with_model(rec, Transformer(m.exp_Ws, m.Vs, m.U, (m.a[0] + 1,) + tuple(m.a[1:]),
                                            residual=m.residual))

    _wrap_learn_transformer(probe, "peeking Transformer learner", peek)


def _asker_class():
    import exactlearn.transformer  # noqa: F401  (loads exactlearn.transformer.learn)

    return sys.modules["exactlearn.transformer.learn"]._Asker


def plant_tf_uncounted_verify(probe: Probe | None = None) -> None:
    """The Transformer learner asks its verification queries but leaves them out of its count."""
    probe = probe or Probe()
    probe.expect("verification query not counted")
    cls = _asker_class()
    real = cls.__call__

    def call(self, tokens):
        if self.step != "verify":
            return real(self, tokens)
        before = self.steps["verify"].queries
        value = real(self, tokens)
        self.steps["verify"].queries = before
        probe.effect("verification query not counted")
        return value

    patch(cls, "__call__", probe.wrap("_Asker.__call__", call))


def plant_tf_unpaired_step1(probe: Probe | None = None) -> None:
    """Step 1 asks ``T(X)`` once more after every odd-part pair ``(X, -X)`` (and counts it)."""
    probe = probe or Probe()
    probe.expect("extra step-1 query asked")
    cls = _asker_class()
    real = cls.__call__

    def call(self, tokens):
        value = real(self, tokens)
        if self.step != "attention":
            return value
        first = self.__dict__.pop("_fault_pair_first", None)
        if first is None:
            self._fault_pair_first = list(tokens)
        elif [tuple(-t for t in x) for x in first] == [tuple(x) for x in tokens]:
            probe.effect("extra step-1 query asked")
            real(self, first)
        return value

    patch(cls, "__call__", probe.wrap("_Asker.__call__", call))


@dataclass(frozen=True)
class Fault:
    key: str
    description: str
    plant: Callable[[Probe], None] | None
    claims: tuple[str, ...]  # the claims run with this fault planted


FAULTS = [
    Fault("oracle-peek", "learner right only if it can read the model via its oracle", plant_oracle_peek,
          ("1", "5", "9")),
    Fault("extra-sample", "one more sample per matching configuration, library formulas changed to match",
          plant_extra_sample, ("2", "3", "4", "7", "40", "50")),
    Fault("swapped-evaluator", "claim 9's evaluator replaced by the library's evaluation",
          plant_swapped_evaluator, ("9",)),
    Fault("empty-exceptional-set", "the certificate's exceptional set is empty", plant_empty_exceptional_set,
          ("40",)),
    Fault("spec-matching-tokens", "matching configuration (x + x', z + z') in the learner",
          plant_spec_matching_tokens, ("1", "7")),
    Fault("library-verdicts", "C understated 100x, library sweep verdicts and tolerances made to pass",
          plant_library_verdicts, ("20",)),
    Fault("no-uniqueness-check", "exact path takes the first pairing, never checks uniqueness",
          plant_no_uniqueness_check, ("8",)),
    Fault("uncounted-query", "miscounting: the learner asks a query it does not count",
          plant_uncounted_query, ("2", "7")),
    Fault("miscounting-oracle", "the claims' oracle log misses one answered query", plant_miscounting_oracle,
          ("2", "3", "7", "50")),
    Fault("skipped-redraw", "a redraw made but not counted or reported", plant_skipped_redraw, ("2", "8")),
    Fault("long-query", "one extra query of length 2H + 2", plant_long_query, ("3",)),
    Fault("lenient-bound", "told H0 < H, the learner retries with larger H0", plant_lenient_bound, ("6",)),
    Fault("tf-wrong-line", "the Transformer learner returns one FFN line perturbed", plant_tf_wrong_line,
          ("50",)),
    Fault("tf-uncounted-verify", "the Transformer learner does not count its verification queries",
          plant_tf_uncounted_verify, ("50",)),
    Fault("tf-unpaired-step1", "Transformer step 1 asks T(X) again after every pair (X, -X)",
          plant_tf_unpaired_step1, ("50",)),
    Fault("tf-oracle-peek", "Transformer learner right only if it can read the model via its oracle",
          plant_tf_oracle_peek, ("50",)),
]


def _plant_stale_target(probe: Probe) -> None:
    """A plant aimed at a function that no longer exists (the learner's old ``_perfect_matchings``)."""
    patch(_learn_module(), "_perfect_matchings", lambda *args, limit=2: [])


def _plant_wrong_signature(probe: Probe) -> None:
    """A plant whose patched function has the wrong signature (``redraw(self, j, reason)``)."""
    probe.expect("redraw hidden")
    cls = _learn_module().ScheduleRun

    def redraw(self, j, reason):  # the learner calls redraw(j, reason, detail): TypeError
        probe.effect("redraw hidden")

    patch(cls, "redraw", probe.wrap("ScheduleRun.redraw", redraw))


#: broken plants that the self-test must report as broken, never as caught (used by the tests)
SELF_TEST_CHECKS = [
    Fault("stale-target", "patches a function that does not exist", _plant_stale_target, ("8",)),
    Fault("wrong-signature", "patched redraw with the wrong signature", _plant_wrong_signature, ("2",)),
]
