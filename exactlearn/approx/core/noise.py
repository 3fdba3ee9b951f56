"""What the single-token answers say about the noise: a refusal that names an ``eps`` set too low.

Every multi-head attention answers a single token linearly: ``f([x]) = u^T x``
(affine attention: ``c0 + u^T x``, fitted with an intercept when ``affine``).
The schedule asks many single tokens (``k = 0`` of every measurement), so their
answers show the oracle's actual error without any model: the residuals of the
least-squares fit ``u`` (floats, by design). If every answer were within
``eps``, residual ``i`` would be at most ``sum_j |(I - P)_ij| eps`` (``P`` the
fit's projection); a larger one proves that the answers are *not* within
``eps`` -- an oracle computing in float32 with a float64 ``eps``, say. The
learner then says so (:func:`eps_diagnosis`) instead of blaming the number of
heads or the oracle's form.

>>> seen = SingleTokens()
>>> for x, y in [((1, 0), 1.0), ((0, 1), 2.0), ((1, 1), 3.001), ((2, 1), 4.0)]:
...     seen.record([x], y)
>>> print(eps_diagnosis(seen, 2, 1e-13)[:60])
the single-token answers f([x]) -- linear in x for every att
>>> eps_diagnosis(seen, 2, 1e-2)
''
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .balls import to_arb, to_mpf

__all__ = ["SingleTokens", "eps_diagnosis", "scatter", "digits"]


class SingleTokens:
    """The answers to one-token queries, by token (integer tokens, as the schedule asks them)."""

    def __init__(self) -> None:
        self.answers: dict[tuple[int, ...], float] = {}

    def record(self, tokens: Sequence[Sequence[int]], answer: Any) -> None:
        if len(tokens) != 1:
            return
        try:
            self.answers[tuple(tokens[0])] = float(to_mpf(to_arb(answer)))
        except Exception:  # an unreadable answer is refused elsewhere, with its own message
            return

    def clear(self) -> None:
        self.answers.clear()


def _residuals(seen: SingleTokens, d: int, affine: bool = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """``(X, y, P, residual)`` of the linear fit (affine: with an intercept column), or ``None`` with
    too few tokens to test it."""
    unknowns = d + 1 if affine else d
    if len(seen.answers) <= unknowns:
        return None
    X = np.array(list(seen.answers), dtype=float)
    if affine:
        X = np.hstack([X, np.ones((len(X), 1))])
    y = np.array(list(seen.answers.values()))
    if np.linalg.matrix_rank(X) < unknowns:
        return None
    P = X @ np.linalg.pinv(X)
    return X, y, P, y - P @ y


def scatter(seen: SingleTokens, d: int, affine: bool = False) -> float | None:
    """The root-mean-square residual of the single-token answers' linear fit (per degree of freedom)."""
    found = _residuals(seen, d, affine)
    if found is None:
        return None
    residual = found[3]
    return float(np.sqrt(np.sum(residual**2) / max(1, len(residual) - found[0].shape[1])))


def digits(seen: SingleTokens, d: int, affine: bool = False) -> float | None:
    """The significant digits the single-token answers carry: ``-log10`` of their scatter around the fit
    over their root-mean-square size (float64 answers: about 15 to 16; float32: about 7 to 8)."""
    found = _residuals(seen, d, affine)
    if found is None:
        return None
    y, residual = found[1], found[3]
    rms = float(np.sqrt(np.sum(residual**2) / max(1, len(residual) - found[0].shape[1])))
    size = float(np.sqrt(np.mean(y**2)))
    if size == 0:
        return None
    return float(-np.log10(max(rms / size, np.finfo(float).eps)))


def eps_diagnosis(seen: SingleTokens, d: int, eps: float, affine: bool = False) -> str:
    """A sentence when the single-token answers prove that they are not all within ``eps``; ``""``
    otherwise (or with ``d`` or fewer of them; ``d + 1`` affine)."""
    found = _residuals(seen, d, affine)
    if found is None:
        return ""
    X, y, P, residual = found
    allowed = np.abs(np.eye(len(y)) - P).sum(axis=1) * eps
    rounding = 8 * np.finfo(float).eps * (np.abs(X) @ np.abs(np.linalg.pinv(X) @ y) + np.abs(y))
    excess = np.abs(residual) - allowed - rounding
    if not np.any(excess > 0):
        return ""
    rms = float(np.sqrt(np.sum(residual**2) / max(1, len(y) - X.shape[1])))
    kind = "affine" if affine else "linear"
    return (f"the single-token answers f([x]) -- {kind} in x for every attention -- miss their best "
            f"{kind} fit by up to {np.abs(residual).max():.1e} (root mean square {rms:.1e}), which answers "
            f"within eps = {eps:.1e} cannot: eps is below the answers' real error; increase eps (to at "
            f"least about {10 * np.abs(residual).max():.0e})")
