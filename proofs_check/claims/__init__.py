"""The claims: a fixed manifest of modules, one claim each.

:data:`MANIFEST` lists every claim module in table order (as python-flint
lists its test modules); nothing is discovered, so a claim cannot drop out of
the table unnoticed. A module name starts with its number (``c02_query_count``
is claim 2). A manifest entry that cannot be imported, or defines no ``CLAIM``,
still gets a row: a claim whose check raises, which the runner reports as FAIL
(so the exit code is 1).

>>> [c.module for c in load_claims(["c01_exact_recovery", "c99_no_such_claim"])]
['c01_exact_recovery', 'c99_no_such_claim']
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from ..registry import Claim, Outcome, Settings

__all__ = ["MANIFEST", "all_claims", "load_claims"]

#: every claim module, in table order
MANIFEST = (
    "c00_runner",
    "c01_exact_recovery",
    "c02_query_count",
    "c03_max_length",
    "c04_upper_bound",
    "c05_canonical_form",
    "c06_wrong_bound",
    "c07_symbolic_lemmas",
    "c08_probability_one",
    "c09_independent_check",
    "c20_approximate",
    "c21_number_fields",
    "c40_generic_certificate",
    "c50_transformer",
)


class Unloadable:
    """The check of a manifest entry that could not be loaded: it raises, so its row is a FAIL."""

    def __init__(self, module: str, problem: str):
        self.module, self.problem = module, problem

    def __call__(self, settings: Settings) -> Outcome:
        raise ImportError(f"claim module {self.module}: {self.problem}")


def load_claims(names: Sequence[str], package: str = __name__) -> list[Claim]:
    """The ``CLAIM`` of each module in ``names`` (in order); a placeholder that fails for one that cannot
    be imported or defines no claim."""
    out = []
    for name in names:
        try:
            claim = getattr(importlib.import_module(f"{package}.{name}"), "CLAIM", None)
            problem = None if isinstance(claim, Claim) else "defines no CLAIM"
        except Exception as exc:  # the row says why; the run fails
            claim, problem = None, f"cannot be imported: {type(exc).__name__}: {exc}"
        if problem is None:
            out.append(Claim(claim.key, claim.title, claim.statement, claim.source, claim.check, module=name))
        else:
            out.append(Claim(name, f"{name} (not loaded)", "-", f"proofs_check/claims/{name}.py",
                             Unloadable(name, problem), module=name))
    return out


def all_claims() -> list[Claim]:
    """Every claim of :data:`MANIFEST`, in table order."""
    return load_claims(MANIFEST)
