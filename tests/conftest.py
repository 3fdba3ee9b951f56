"""Shared test helpers: an independent reference evaluator, hand-built models, the built docs."""

from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from flint import fmpq

from exactlearn import MultiHeadAttention


def reference_output(model: MultiHeadAttention, tokens) -> Fraction:
    """f(X) computed straight from the definition with Python Fractions.

    Independent of exactlearn.model: scores are prod_{a,b} E[a][b]**(x_i[a] x_N[b])
    (times prod_a e[a]**x_i[a] with e = exp_w, plus the offset c0, for affine
    attention), no grouping of equal tokens, no factor reuse.
    """
    last = tokens[-1]
    total = as_fraction(model.c0)
    for head in model.heads:
        E = [[Fraction(int(e.p), int(e.q)) for e in row] for row in head.exp_W]
        v = [Fraction(int(e.p), int(e.q)) for e in head.v]
        bias = [Fraction(1)] * len(v) if head.exp_w is None else [as_fraction(e) for e in head.exp_w]
        weights = []
        for x in tokens:
            w = Fraction(1)
            for a in range(len(x)):
                w *= bias[a] ** x[a]
                for b in range(len(x)):
                    w *= E[a][b] ** (x[a] * last[b])
            weights.append(w)
        norm = sum(weights)
        total += sum(w * sum(vi * xi for vi, xi in zip(v, x)) for w, x in zip(weights, tokens)) / norm
    return total


def as_fraction(q: fmpq) -> Fraction:
    return Fraction(int(q.p), int(q.q))


@pytest.fixture
def two_head_model() -> MultiHeadAttention:
    return MultiHeadAttention.from_lists(
        [[[2, "1/3"], [5, 1]], [["7/2", 1], [1, "2/9"]]],
        [[1, -2], ["3/4", 5]],
    )


def antisymmetric_head(d: int, entries: dict) -> list[list[Fraction]]:
    """exp_W of an antisymmetric W: exp_W[a][b] * exp_W[b][a] = 1, diagonal 1."""
    E = [[Fraction(1)] * d for _ in range(d)]
    for (a, b), value in entries.items():
        E[a][b] = Fraction(value)
        E[b][a] = 1 / Fraction(value)
    return E


DOCS = Path(__file__).resolve().parent.parent / "docs"


def sphinx_build(src: Path, out: Path) -> subprocess.CompletedProcess:
    """``sphinx-build -W`` of ``src`` into ``out`` (HTML), this checkout's exactlearn imported."""
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-E",
                           str(src), str(out)], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(DOCS.parent)})


@pytest.fixture(scope="session")
def docs_site(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """The documentation site, built once per test run: ``(the build's result, the HTML folder)``."""
    pytest.importorskip("sphinx", reason="sphinx is not installed (pip install -e '.[docs]')")
    pytest.importorskip("myst_parser", reason="myst-parser is not installed (pip install -e '.[docs]')")
    html = tmp_path_factory.mktemp("docs") / "html"
    return sphinx_build(DOCS, html), html


def plant_stuck_link(monkeypatch, j: int) -> None:
    """Make link ``j`` of every schedule run fail ("too few poles") for as long as configuration ``j - 1``
    keeps the tokens it had at the first try: only drawing ``j - 1`` again gets past it."""
    from exactlearn.states import LinkOutcome, RedrawReason

    run_class = sys.modules["exactlearn.learn"].ScheduleRun
    real_link, first = run_class.link, {}

    def link(self, k):
        if k == j and first.setdefault("tokens", self.chain.tokens_of(j - 1)) == self.chain.tokens_of(j - 1):
            return LinkOutcome.REDRAW, RedrawReason.MATCHING_TOO_FEW_POLES, "planted: too few poles"
        return real_link(self, k)

    monkeypatch.setattr(run_class, "link", link)


def loud_values(factor: int = 1000) -> MultiHeadAttention:
    """A d = 3, H = 2 attention whose values are ``factor`` times seed 0's: its ``W_h`` are about
    ``1/(2 factor)`` of the largest parameter (a small matrix, for the estimate per matrix)."""
    t = MultiHeadAttention.random(3, 2, seed=0)
    return MultiHeadAttention.from_lists([[[str(x) for x in row] for row in h.exp_W] for h in t.heads],
                                         [[str(x * factor) for x in h.v] for h in t.heads])


def worst_W(rec, truth: MultiHeadAttention) -> float:
    """The largest ``max |error| / max |entry|`` of a learned ``W_h`` (an approximate recovery)."""
    from exactlearn.approx import parameter_error, truth_parameters

    err = parameter_error(rec, truth)
    return max(max(abs(float(x)) for row in dW for x in row) / max(abs(float(x)) for row in W for x in row)
               for (dW, _), (W, _) in zip(err.deviations, truth_parameters(truth, 128)))
