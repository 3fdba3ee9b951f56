"""Faults planted in exactlearn's behaviour (the self-test's table: :mod:`proofs_check.faults`).

Each ``plant(probe, role)`` patches exactlearn in the process it runs in, and
records on ``probe`` every time the patch changed what happened. These are the
places to retarget when exactlearn's internals move: ``exactlearn.learn``
(``ScheduleRun._query``, ``ScheduleRun.redraw``, ``ScheduleRun._label_by_residues``,
``link_matchings``, ``linked_tokens``), ``exactlearn.chain.linked_tokens``, the
count formulas of ``exactlearn.schedule``, ``exactlearn.symbolic.certificate.
exceptional_factors``, ``exactlearn.approx.sensitivity``, the Transformer
learner's per-step counter ``exactlearn.transformer.learn._Asker.__call__`` and
``MultiHeadAttention.canonical`` and the number-field learner's
``exactlearn.numberfield.exactfield.exp_matrix``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable

from .probe import Probe, patch, patch_everywhere
from .wire import Role

__all__ = ["empty_exceptional_set", "extra_sample", "first_row_canonical", "lean_mislabel",
           "library_verdicts", "missing_exceptional_factor", "no_uniqueness_check", "skipped_redraw",
           "spec_matching_tokens", "stale_target", "tf_uncounted_verify", "tf_unpaired_step1",
           "unit_factor", "wrong_signature"]


def _learn_module():
    import exactlearn  # noqa: F401  (loads exactlearn.learn)

    return sys.modules["exactlearn.learn"]  # the module (the package attribute is the function)


def _plus(count: Callable[[int, int], int], more: Callable[[int], int]) -> Callable[[int, int], int]:
    def changed(d: int, heads: int) -> int:
        return count(d, heads) + more(d)

    return changed


def extra_sample(probe: Probe, role: Role) -> None:
    """One more sample in every matching configuration, with the library's formulas changed to match."""
    from exactlearn import schedule

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


def empty_exceptional_set(probe: Probe, role: Role) -> None:
    """The certificate records no exceptional polynomial (its all-nonzero check holds vacuously)."""
    from exactlearn.symbolic import certificate

    real = certificate.exceptional_factors

    def empty(ledger, n_e=0):
        factors, _ = real(ledger, n_e)
        if factors:
            probe.effect("exceptional polynomials dropped")
        return [], True

    patch(certificate, "exceptional_factors", probe.wrap("certificate.exceptional_factors", empty))


def missing_exceptional_factor(probe: Probe, role: Role) -> None:
    """The certificate's exceptional set misses the first factor recorded for a pole difference."""
    from exactlearn.symbolic import certificate

    real = certificate.exceptional_factors

    def missing(ledger, n_e=0):
        factors, nonzero = real(ledger, n_e)
        first = next((f for f in factors if f.recorded("pole difference")), None)
        if first is None:
            return factors, nonzero
        probe.effect("pole-difference factor dropped")
        return [f for f in factors if f is not first], nonzero

    patch(certificate, "exceptional_factors", probe.wrap("certificate.exceptional_factors", missing))


def spec_matching_tokens(probe: Probe, role: Role) -> None:
    """The learner's matching configuration is the superseded draft's (x + x', z + z')."""
    from exactlearn import schedule

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


def library_verdicts(probe: Probe, role: Role) -> None:
    """C understated 100 times, and the library's own sweep verdicts made to pass."""
    from exactlearn import approx
    from exactlearn.demos import evidence

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


def no_uniqueness_check(probe: Probe, role: Role) -> None:
    """The exact path's pairing-uniqueness check removed: a link takes the first perfect matching."""
    learn_module = _learn_module()
    real = learn_module.link_matchings

    def first_only(field, kind, prev, cur, target, limit=2):
        found = real(field, kind, prev, cur, target, limit=max(limit, 2))
        if len(found) > 1:
            probe.effect("ambiguous pairing taken")
        return found[:1]

    patch(learn_module, "link_matchings", probe.wrap("link_matchings", first_only))


def skipped_redraw(probe: Probe, role: Role) -> None:
    """The learner redraws its first degenerate configuration without counting or reporting it."""
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


def lean_mislabel(probe: Probe, role: Role) -> None:
    """The lean schedule swaps the first two labels of its last predicted configuration."""
    cls = _learn_module().ScheduleRun
    real = cls._label_by_residues

    def label(self, j, cfg, expected):
        labelled = real(self, j, cfg, expected)
        if labelled and j == self.chain.n_configs - 1 and cfg.labels is not None and len(cfg.labels) >= 2:
            cfg.labels[0], cfg.labels[1] = cfg.labels[1], cfg.labels[0]
            probe.effect("labels swapped")
        return labelled

    patch(cls, "_label_by_residues", probe.wrap("ScheduleRun._label_by_residues", label))


def first_row_canonical(probe: Probe, role: Role) -> None:
    """``canonical()`` groups heads by the first row of exp(W) only (sorted first): heads that differ in
    a later row are merged, the first one's exp(W) kept."""
    from exactlearn import Head, MultiHeadAttention

    real = MultiHeadAttention.canonical

    def canonical(self):
        form = real(self)
        groups: dict = {}
        for head in form.heads:
            groups.setdefault(head.exp_W[0], []).append(head)
        if len(groups) == len(form.heads):
            return form
        probe.effect("heads with equal first rows merged")
        merged = [Head(hs[0].exp_W, tuple(sum(vs, type(vs[0])(0)) for vs in zip(*(h.v for h in hs))))
                  for hs in groups.values()]
        merged = [h for h in merged if any(h.v)]
        return _sorted(MultiHeadAttention, merged, form.d)

    patch(MultiHeadAttention, "canonical", probe.wrap("MultiHeadAttention.canonical", canonical))


def _sorted(cls, heads, d):
    """A model of ``heads`` in canonical order (the zero model if none is left)."""
    heads = sorted(heads, key=lambda h: h.key())
    return cls(heads) if heads else cls._unchecked([], d)


def _asker_class():
    import exactlearn.transformer  # noqa: F401  (loads exactlearn.transformer.learn)

    return sys.modules["exactlearn.transformer.learn"]._Asker


def tf_uncounted_verify(probe: Probe, role: Role) -> None:
    """The Transformer learner asks its verification queries but leaves them out of its count."""
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


def tf_unpaired_step1(probe: Probe, role: Role) -> None:
    """Step 1 asks ``T(X)`` once more after every odd-part pair ``(X, -X)`` (and counts it)."""
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


def _small_unit(K):
    """A unit of ``K`` other than +-1, positive at the root: the first ``c0 + c1 a`` (``c`` in -2..2) with
    integer coordinates whose inverse has integer coordinates too (``None`` if there is none)."""
    import itertools

    for c in itertools.product(range(-2, 3), repeat=2):
        x = K.from_coordinates(list(c) + [0] * (K.degree - 2)) if K.degree >= 2 else None
        if x is None or x.is_rational() or x.sign() <= 0:
            continue
        if all(q.q == 1 for q in x.coordinates() + x.inverse().coordinates()):
            return x
    return None


def unit_factor(probe: Probe, role: Role) -> None:
    """The number-field learner returns each head's ``exp(W)`` with its first entry multiplied by a unit
    of ``K`` (as a recognition that works up to units would)."""
    import exactlearn  # noqa: F401  (loads exactlearn.numberfield.exactfield)

    exactfield = sys.modules["exactlearn.numberfield.exactfield"]
    real = exactfield.exp_matrix

    def off(K, design, rhos, max_bits=1024):
        E = real(K, design, rhos, max_bits)
        u = _small_unit(K)
        if u is None:
            return E
        probe.effect("exp(W) entry off by a unit factor")
        return ((E[0][0] * u,) + tuple(E[0][1:]),) + tuple(E[1:])

    patch(exactfield, "exp_matrix", probe.wrap("numberfield.exp_matrix", off))


def stale_target(probe: Probe, role: Role) -> None:
    """A plant aimed at a function that no longer exists (the learner's old ``_perfect_matchings``)."""
    patch(_learn_module(), "_perfect_matchings", lambda *args, limit=2: [])


def wrong_signature(probe: Probe, role: Role) -> None:
    """A plant whose patched function has the wrong signature (``redraw(self, j, reason)``)."""
    cls = _learn_module().ScheduleRun

    def redraw(self, j, reason):  # the learner calls redraw(j, reason, detail): TypeError
        probe.effect("redraw hidden")

    patch(cls, "redraw", probe.wrap("ScheduleRun.redraw", redraw))
