"""The probe that watches a planted fault in one process, and the patching it relies on.

A :class:`Probe`

* counts the times a fault actually changed what happened (its *effects*);
* records every exception other than a refusal of exactlearn
  (:class:`~exactlearn.errors.ExactLearnError`) or a detection by a claim's own
  guard (:class:`~proofs_check.library.LibraryEvaluationCalled`): a plant that
  raises a ``TypeError`` or ``AttributeError`` is broken, and a claim that
  "catches" it has judged a crash, not the fault.

Patching goes through :func:`patch`, which refuses a name that does not exist,
so a plant aimed at a function that a refactoring removed fails loudly.

>>> probe = Probe()
>>> double = probe.wrap("double", lambda n: 2 * n)
>>> double(2), dict(probe.calls)
(4, {'double': 1})
>>> merge([probe.snapshot(), {"calls": {"double": 2}, "effects": {"changed": 1}, "unexpected": []}])["calls"]
{'double': 3}
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

__all__ = ["Probe", "merge", "patch", "patch_everywhere"]


class Probe:
    """What a planted fault did in one process: calls, effects, unexpected exceptions."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()  # calls of each wrapped function
        self.effects: Counter[str] = Counter()  # times the fault changed the run, by effect
        self.unexpected: list[str] = []  # exceptions no claim may count as a catch
        self._seen: list[BaseException] = []

    def effect(self, name: str) -> None:
        self.effects[name] += 1

    def snapshot(self) -> dict:
        """The probe's counts as plain data (sent to the judge with every reply of a sandbox process)."""
        return {"calls": dict(self.calls), "effects": dict(self.effects), "unexpected": list(self.unexpected)}

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


def merge(snapshots: list[dict]) -> dict:
    """The sum of several probes' snapshots (the judge's and each sandbox process's)."""
    calls: Counter[str] = Counter()
    effects: Counter[str] = Counter()
    unexpected: list[str] = []
    for snap in snapshots:
        calls.update(snap["calls"])
        effects.update(snap["effects"])
        unexpected += snap["unexpected"]
    return {"calls": dict(calls), "effects": dict(effects), "unexpected": unexpected}


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
