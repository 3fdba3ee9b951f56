"""In the learner's process: run a job, and say what the learner reported, as plain data.

A :class:`Job` names the learner (:class:`LearnerKind`, called through
:mod:`proofs_check.library` so that the self-test can wrap it; or an entry
point ``"module:function"`` for tests), the token width ``d`` and the
learner's own options (``heads`` or ``heads_bound``, its seed, schedule, ...).
:func:`run_job` calls it with the oracle process's asker and returns a
*summary*: the recovered model as JSON and every figure the learner reported
(queries, longest query, redraws and their reasons, per-step counts). The
judge trusts none of it: it compares the model with the truth and every figure
with the oracle's log (:mod:`proofs_check.instances`).

A refusal (:class:`~exactlearn.RecoveryError`) is summarised with its type,
message, redraw reasons and, for the Transformer learner, the condition it
names; any other exception is a crash.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from exactlearn.errors import RecoveryError

from . import library

__all__ = ["Job", "LearnerKind", "run_job", "summarize_exact"]


class LearnerKind(enum.Enum):
    """Which learner of exactlearn a job runs."""

    EXACT = "learn"
    APPROX = "learn_approx"
    TRANSFORMER = "learn_transformer"


@dataclass(frozen=True)
class Job:
    """One learning run: ``learner(oracle, d, **options)``."""

    kind: LearnerKind
    d: int
    options: dict = field(default_factory=dict)
    entry: str | None = None  # "module:function" in place of the library's learner (tests)


def _reasons(reasons: list) -> dict:
    return {"reasons": [str(r) for r in reasons],
            "ambiguous": [library.is_ambiguous_pairing(r) for r in reasons]}


def summarize_exact(rec: Any) -> dict:
    """What :func:`exactlearn.learn` returned, as plain data."""
    return {
        "model": rec.model.to_dict() if rec.is_rational else None,
        "num_heads": rec.num_heads,
        "queries": rec.queries,
        "verification_queries": rec.verification_queries,
        "max_length": rec.max_length,
        "redraws": rec.redraws,
        "lean_fallback": bool(rec.lean_fallback),
        **_reasons(rec.redraw_reasons),
    }


def _summarize_transformer(rec: Any) -> dict:
    return {
        "model": rec.model.to_dict(),
        "heads": rec.heads,
        "lines": rec.lines,
        "queries": rec.queries,
        "max_length": rec.max_length,
        "redraws": rec.redraws,
        "steps": {name: [s.queries, s.max_length] for name, s in rec.steps.items()},
        "attention": summarize_exact(rec.attention),
    }


def _summarize_approx(rec: Any) -> dict:
    return {
        "heads": [{"W": h.W, "v": h.v, "W_radius": h.W_radius, "v_radius": h.v_radius} for h in rec.heads],
        "num_heads": rec.num_heads,
        "affine": bool(rec.affine),
        "scale": (int(rec.scale.p), int(rec.scale.q)),
        "queries": rec.queries,
        "max_length": rec.max_length,
        "redraws": rec.redraws,
        "measurements": rec.measurements,
        "links": sorted((j, cfg.link) for j, cfg in rec.links.items()),
        **_reasons(rec.redraw_reasons),
    }


SUMMARIES: dict[LearnerKind, Callable[[Any], dict]] = {
    LearnerKind.EXACT: summarize_exact,
    LearnerKind.APPROX: _summarize_approx,
    LearnerKind.TRANSFORMER: _summarize_transformer,
}


def refusal(exc: RecoveryError) -> dict:
    """A refusal as plain data: type, message, the counts it carries, the condition it names."""
    condition = getattr(exc, "condition", None)
    return {"refused": type(exc).__name__, "message": str(exc)[:500],
            "queries": getattr(exc, "queries", None), "redraws": getattr(exc, "redraws", None),
            "condition": None if condition is None else condition.name,
            **_reasons(library.reasons_of(exc))}


def run_job(job: Job, ask: Callable) -> dict:
    """Run ``job`` with the oracle ``ask``; the learner's summary (a refusal or a crash included)."""
    from .processes import resolve

    learner = resolve(job.entry) if job.entry else getattr(library, job.kind.value)
    try:
        result = learner(ask, job.d, **job.options)
    except RecoveryError as exc:
        return refusal(exc)
    except Exception as exc:  # a crash is never a refusal
        return {"crashed": f"{type(exc).__name__}: {exc}"[:500]}
    summary = SUMMARIES[job.kind](result)
    extra = getattr(result, "proofs_check_extra", None)  # what a test's learner wants the judge to see
    if extra is not None:
        summary["extra"] = extra
    return summary
