"""Faults planted in proofs_check's own code: its evaluator, its oracle's log, its runner, its report.

A verifier that cannot fail proves nothing; these are realistic bugs of the
verifier itself (:mod:`proofs_check.faults` says which claim must catch each).
"""

from __future__ import annotations

from .probe import Probe, patch
from .wire import Role

__all__ = ["dedup_log", "dropped_crash", "field_library_evaluator", "json_verdict_any", "miscounting_log",
           "swapped_evaluator"]


def swapped_evaluator(probe: Probe, role: Role) -> None:
    """Claim 9's independent evaluator replaced by the library's own evaluation."""
    import sympy as sp

    from exactlearn import MultiHeadAttention

    from . import independent

    def library_evaluation(model, tokens):
        probe.effect("library evaluation used")
        value = MultiHeadAttention.from_dict(model)(tokens)
        return sp.Rational(int(value.p), int(value.q))

    patch(independent, "evaluate", probe.wrap("independent.evaluate", library_evaluation))


def field_library_evaluator(probe: Probe, role: Role) -> None:
    """Claim 21's sympy evaluator replaced by exactlearn's own evaluation over the number field."""
    import sympy as sp

    from exactlearn import MultiHeadAttention

    from . import independent_fields

    def library_evaluation(model, tokens):
        probe.effect("exactlearn's K arithmetic used")
        value = MultiHeadAttention.from_dict(model.source)(tokens)
        return tuple(sp.Rational(int(c.p), int(c.q)) for c in value.coordinates())

    patch(independent_fields, "evaluate", probe.wrap("independent_fields.evaluate", library_evaluation))


def miscounting_log(probe: Probe, role: Role) -> None:
    """The oracle process answers every query but leaves the first one of a session out of its log."""
    from .oracles import QueryLog

    real = QueryLog.record

    def record(self, query):
        if not self.queries and not getattr(self, "_fault_skipped", False):
            self._fault_skipped = True
            probe.effect("query left out of the log")
            return
        real(self, query)

    patch(QueryLog, "record", probe.wrap("QueryLog.record", record))


def dedup_log(probe: Probe, role: Role) -> None:
    """The oracle's log keeps a query only if it differs from the one before (oracle's process), and the
    learner retries every tenth query once without counting the retry (learner's process)."""
    if role is Role.ORACLE:
        from .oracles import QueryLog

        real = QueryLog.record

        def record(self, query):
            if self.queries and self.queries[-1] == query:
                probe.effect("repeat dropped from the log")
                return
            real(self, query)

        patch(QueryLog, "record", probe.wrap("QueryLog.record", record))
        return
    from . import library

    real_learn = library.learn

    def retrying(oracle, d, **kwargs):
        asked = [0]

        def ask(tokens):
            asked[0] += 1
            answer = oracle(tokens)
            if asked[0] % 10 == 0:
                probe.effect("retry asked")
                oracle(tokens)  # a retry the learner does not count
            return answer

        return real_learn(ask, d, **kwargs)

    patch(library, "learn", probe.wrap("retrying learner", retrying))


def dropped_crash(probe: Probe, role: Role) -> None:
    """The runner drops the result of a claim whose check raised (``except Exception: continue``)."""
    from . import runner

    real = runner.run_claims

    def dropping(*args, **kwargs):
        report = real(*args, **kwargs)
        kept = [r for r in report.results if r.error is None]
        if len(kept) < len(report.results):
            probe.effect("crashed claim dropped")
        report.results[:] = kept
        return report

    patch(runner, "run_claims", probe.wrap("run_claims", dropping))


def json_verdict_any(probe: Probe, role: Role) -> None:
    """The JSON report's top-level verdict is computed with ``any()`` (one passing claim passes the run)."""
    from . import runner

    real = runner.Report.to_dict

    def to_dict(self):
        data = real(self)
        passed = any(r.passed for r in self.results)
        if passed != data["passed"]:
            probe.effect("JSON verdict from any()")
        data["passed"], data["result"] = passed, "PASS" if passed else "FAIL"
        return data

    patch(runner.Report, "to_dict", probe.wrap("Report.to_dict", to_dict))
