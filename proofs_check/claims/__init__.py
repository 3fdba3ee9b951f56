"""The claims, one module each, discovered in module-name order.

Module names start with a number that fixes the table order
(``c01_exact_recovery.py``, ...). Each module defines ``CLAIM``.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..registry import Claim

__all__ = ["all_claims"]


def all_claims() -> list[Claim]:
    """Every ``CLAIM`` defined by a module of this package, in module-name order."""
    out = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        claim = getattr(module, "CLAIM", None)
        if isinstance(claim, Claim):
            out.append(claim)
    return out
