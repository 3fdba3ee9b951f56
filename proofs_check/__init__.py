"""proofs_check: the verification suite of exactlearn (``python -m proofs_check``).

Each claim of the paper's abstract (and of docs/algorithm.md) is checked by its own
small module in :mod:`proofs_check.claims`; the runner prints one table with
what was checked, the measured figures, and PASS/FAIL.
"""
