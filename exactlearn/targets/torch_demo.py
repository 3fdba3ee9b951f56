"""Learning a real ``torch.nn.MultiheadAttention`` from float64 answers (docs/algorithm.md section 7).

:func:`torch_demo` builds a bias-free layer and a readout, learns it with
:func:`exactlearn.approx.learn_approx` through :func:`~exactlearn.targets.torch_attention`
and compares with the layer's own parameters. ``exactlearn approx
--torch`` prints these figures. Needs torch (floats by design).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mpmath
from flint import fmpq

from ..approx import (
    DEFAULT_PRECISION,
    choose_scale,
    learn_approx,
    parameter_error,
    sensitivity,
    truth_parameters,
)
from ..approx.core.recovery import truth_offsets
from .torch_mha import torch_attention, torch_model

__all__ = ["torch_demo", "TorchResult", "TORCH_SETTINGS", "TORCH_MAX_REDRAWS", "torch_guided",
           "GuidedTorchResult", "torch_default", "torch_affine", "AffineTorchResult", "AFFINE_SETTINGS"]


#: How the torch demo queries a layer of ``d = 4`` (documented choices, see docs/approximate.md):
#: ``H = 2``: token entries in [-2, 2], scale chosen from 1/2, 1, 2 by choose_scale;
#: ``H = 4``: token entries in [-1, 1] (better-conditioned integer designs), scale from 3, 4,
#: and measured configurations with condition > 1e10 redrawn. A tighter limit costs more: a
#: redraw draws one vector of the chain again while the vector shared with the neighbour
#: stays, so a shared vector that few partners condition well keeps failing.
TORCH_SETTINGS: dict[int, dict[str, Any]] = {
    1: {"token_bound": 2, "max_condition": None, "scales": ("1/2", 1, 2)},
    2: {"token_bound": 2, "max_condition": None, "scales": ("1/2", 1, 2)},
    4: {"token_bound": 1, "max_condition": 10**10, "scales": (3, 4)},
}
#: Redraw budget of the torch runs (also of choose_scale's trial runs: a scale that does not
#: resolve the heads within it is skipped).
TORCH_MAX_REDRAWS = 1000


@dataclass
class TorchResult:
    """One torch layer learned through :func:`exactlearn.targets.torch_attention` (floats by design)."""

    heads: int
    seed: int
    scale: fmpq
    scale_table: list
    queries: int
    oracle_queries: int
    max_length: int
    redraws: int
    C: mpmath.mpf
    max_abs: mpmath.mpf
    rel_param: mpmath.mpf   # max over parameters (each W_h, each v_h) of max|error| / max|entry|
    rel_entry: mpmath.mpf   # max over entries of |error| / |entry| (unbounded for entries near 0)
    float_error: mpmath.mpf  # max |torch answer - exact value| over (an even sample of) the learner's queries
    eps: fmpq
    entries: int = 0        # number of parameter entries (H (d^2 + d))
    entries_above: int = 0  # entries with |error| / |entry| > 1e-6
    worst_entry_scale: mpmath.mpf | None = None  # |entry| / max|entry of its W_h or v_h| for the worst entry


def torch_demo(heads: int, seed: int = 0, *, d: int = 4, precision: int = DEFAULT_PRECISION) -> TorchResult:
    """Build a bias-free ``torch.nn.MultiheadAttention(d, heads)`` (``torch.manual_seed(seed)``,
    default initialisation) and a ``torch.randn(d)`` readout, learn it from float64 answers,
    and compare with ``W_h = W_K,h^T W_Q,h / sqrt(d_head)``, ``v_h = W_V,h^T W_O,h^T readout``."""
    settings = TORCH_SETTINGS.get(heads)
    if settings is None:
        raise ValueError(f"no torch settings for {heads} heads "
                         f"(torch needs heads | d; known: {sorted(TORCH_SETTINGS)})")
    oracle, truth, asked, recording = _torch_layer(d, heads, seed, precision)
    options = dict(token_bound=settings["token_bound"], max_condition=settings["max_condition"],
                   max_redraws=TORCH_MAX_REDRAWS, precision=precision)
    choice = choose_scale(truth, settings["scales"], eps=oracle.eps, **options)
    rec = learn_approx(recording, d, heads=heads, scale=choice.scale, eps=oracle.eps, guide=None, **options)
    err = parameter_error(rec, truth)
    true = truth_parameters(truth, precision)
    rel = []
    per_entry = []  # (|error| / |entry|, |entry| / max|entry of its parameter|)
    for j, (dW, dv) in enumerate(err.deviations):
        W, v = true[j]
        flat_dW, flat_W = [x for row in dW for x in row], [x for row in W for x in row]
        for dev, ref in ((flat_dW, flat_W), (list(dv), list(v))):
            top = max(abs(x) for x in ref)
            rel.append(max(abs(x) for x in dev) / top)
            per_entry += [(abs(e) / abs(x), abs(x) / top) for e, x in zip(dev, ref) if x != 0]
    worst = max(per_entry)
    limit = mpmath.mpf("1e-6")
    sample = asked[:: max(1, len(asked) // 400)]  # an even sample of the learner's queries
    with mpmath.mp.workprec(precision):
        float_error = max(abs(mpmath.mpf(value) - truth.evaluate(tokens, precision))
                          for tokens, value in sample)
    sens = sensitivity(truth, recovery=rec, precision=precision)
    return TorchResult(
        heads=heads, seed=seed, scale=choice.scale, scale_table=choice.table, queries=rec.queries,
        oracle_queries=oracle.queries, max_length=oracle.max_length, redraws=rec.redraws,
        C=sens.C_upper, max_abs=err.max_abs, rel_param=max(rel), rel_entry=err.max_rel,
        float_error=float_error,
        eps=oracle.eps, entries=heads * (d * d + d), entries_above=sum(1 for r, _ in per_entry if r > limit),
        worst_entry_scale=worst[1],
    )


#: The pilot of :func:`torch_guided`: query scale and redraw budget (no condition limit: every
#: configuration the balls resolve is used, so the pilot is rough but cheap to finish).
PILOT_SCALE = 2


@dataclass
class GuidedTorchResult:
    """A torch layer learned as a black box in two runs: a pilot, then configurations it chose."""

    heads: int
    seed: int
    pilot_queries: int       # answered by the oracle for the pilot (measured by the oracle's log)
    final_queries: int       # answered for the guided run
    total_queries: int       # everything the oracle answered
    formula: int
    redraws: int             # of the guided run
    C: mpmath.mpf            # of the guided run's queries
    max_abs: mpmath.mpf
    rel_param: mpmath.mpf
    rel_entry: mpmath.mpf
    entries_above: int
    entries: int
    pilot_max_abs: mpmath.mpf  # (0 for torch_default: a sketch has no error of its own to report)
    float_error: mpmath.mpf  # max |torch answer - exact value| over the guided run's queries


def torch_guided(heads: int, seed: int = 0, *, d: int = 4,
                 precision: int = DEFAULT_PRECISION) -> GuidedTorchResult:
    """Learn the layer of :func:`torch_demo` without using its parameters to choose anything.

    A pilot ``learn_approx(oracle, d, heads=H, scale=2)`` (no condition limit) gives rough
    heads; ``learn_approx(oracle, d, heads=H, scale=2, guide=pilot)`` then chooses every
    configuration's tokens by the conditioning the pilot predicts. The returned figures are
    the guided run's; the query counts are the oracle's own (pilot + guided run).
    """
    oracle, truth, asked, recording = _torch_layer(d, heads, seed, precision)
    options: dict[str, Any] = dict(scale=PILOT_SCALE, precision=precision, eps=oracle.eps)
    pilot = learn_approx(oracle, d, heads=heads, max_redraws=TORCH_MAX_REDRAWS, guide=None, **options)
    pilot_queries = oracle.queries
    rec = learn_approx(recording, d, heads=heads, guide=pilot, **options)
    float_error, err, rel, per_entry = _measured(rec, truth, asked, precision)
    return GuidedTorchResult(
        heads=heads, seed=seed, pilot_queries=pilot_queries, final_queries=oracle.queries - pilot_queries,
        total_queries=oracle.queries, formula=rec.formula, redraws=rec.redraws,
        C=sensitivity(truth, recovery=rec, precision=precision).C_upper, max_abs=err.max_abs,
        rel_param=max(rel), rel_entry=err.max_rel,
        entries_above=sum(1 for r in per_entry if r > mpmath.mpf("1e-6")), entries=heads * (d * d + d),
        pilot_max_abs=parameter_error(pilot, truth).max_abs, float_error=float_error,
    )


def torch_default(heads: int, seed: int = 0, *, d: int = 4,
                  precision: int = DEFAULT_PRECISION) -> GuidedTorchResult:
    """The layer of :func:`torch_demo` learned with default settings: ``learn_approx(oracle, d, heads=H)``.

    For ``H >= 3`` the default sketches the oracle first and lets the sketch choose the
    configurations (:mod:`exactlearn.approx.sketch`); ``pilot_queries`` are the sketch's. Nothing is
    taken from the layer's parameters; the counts are the oracle's own log.
    """
    oracle, truth, asked, recording = _torch_layer(d, heads, seed, precision)
    rec = learn_approx(recording, d, heads=heads, precision=precision)
    float_error, err, rel, per_entry = _measured(rec, truth, asked, precision)
    return GuidedTorchResult(
        heads=heads, seed=seed, pilot_queries=rec.sketch_queries,
        final_queries=oracle.queries - rec.sketch_queries, total_queries=oracle.queries, formula=rec.formula,
        redraws=rec.redraws, C=sensitivity(truth, recovery=rec, precision=precision).C_upper,
        max_abs=err.max_abs, rel_param=max(rel), rel_entry=err.max_rel,
        entries_above=sum(1 for r in per_entry if r > mpmath.mpf("1e-6")), entries=heads * (d * d + d),
        pilot_max_abs=mpmath.mpf(0), float_error=float_error,
    )


#: How :func:`torch_affine` queries a layer with biases: random configurations (``guide=None``; the
#: default guides of a layer with biases are measured by benchmarks/torch_frontier.py), ``H = 2``
#: otherwise the defaults; ``H = 4`` token entries in ``[-1, 1]``, scale 3 and configurations of
#: condition above ``10^9`` redrawn (docs/approximate.md, "Layers with biases").
AFFINE_SETTINGS: dict[int, dict[str, Any]] = {
    1: {"guide": None},
    2: {"guide": None},
    4: {"guide": None, "token_bound": 1, "scale": 3, "max_condition": 10**9},
}


@dataclass
class AffineTorchResult:
    """A layer with biases (``bias=True``) learned as affine attention (floats by design)."""

    heads: int
    seed: int
    biases: str              # "default" (PyTorch's initialisation: zero biases) or "normal" (N(0, 1) biases)
    queries: int             # counted by the oracle's own log
    formula: int             # 4 H d(d+1) - 2H + 1
    max_length: int          # the oracle's longest query
    redraws: int
    rel_param: mpmath.mpf    # max over W_h, w_h, v_h, c0 of max|error| / max|entry| (|error| for a zero one)
    max_abs: mpmath.mpf
    error_bound: mpmath.mpf  # the recovery's largest radius
    float_error: mpmath.mpf  # max |torch answer - exact value| over an even sample of the learner's queries


def torch_affine(heads: int, seed: int = 0, *, d: int = 4, biases: str = "default",
                 precision: int = DEFAULT_PRECISION, **options: Any) -> AffineTorchResult:
    """Learn ``torch.nn.MultiheadAttention(d, heads)`` with biases (``torch.manual_seed(seed)``; ``biases``:
    PyTorch's zero initialisation, or ``"normal"``, every bias drawn from N(0, 1)) and a ``torch.randn(d)``
    readout with ``learn_approx`` (:data:`AFFINE_SETTINGS`), and compare with ``W_h``, ``w_h``, ``v_h``,
    ``c0`` of :func:`~exactlearn.targets.torch_parameters`; ``options`` replace the settings."""
    if biases not in ("default", "normal"):
        raise ValueError(f"biases must be 'default' or 'normal', got {biases!r}")
    oracle, truth, asked, recording = _torch_layer(d, heads, seed, precision, biases=biases)
    recording.affine = oracle.affine  # type: ignore[attr-defined]
    options = AFFINE_SETTINGS.get(heads, AFFINE_SETTINGS[4]) | options
    rec = learn_approx(recording, d, heads=heads, precision=precision, max_redraws=TORCH_MAX_REDRAWS,
                       **options)
    sample = asked[:: max(1, len(asked) // 400)]  # an even sample of the learner's queries
    float_error, err, rel, _ = _measured(rec, truth, sample, precision)
    ws, c0 = truth_offsets(truth, precision)
    for dw, w in zip(err.w_deviations or (), ws):
        top = max(abs(x) for x in w)
        rel.append(max(abs(x) for x in dw) / (top if top else 1))
    rel.append(abs(err.c0_deviation) / (abs(c0) if c0 else 1))
    return AffineTorchResult(
        heads=heads, seed=seed, biases=biases, queries=oracle.queries, formula=rec.formula,
        max_length=oracle.max_length, redraws=rec.redraws, rel_param=max(rel), max_abs=err.max_abs,
        error_bound=rec.error_bound, float_error=float_error,
    )


def _measured(rec, truth, asked, precision: int) -> tuple:
    """The largest float64 error of the answers ``asked``, the parameter error, and its relative forms."""
    with mpmath.mp.workprec(precision):
        float_error = max(abs(mpmath.mpf(value) - truth.evaluate(tokens, precision))
                          for tokens, value in asked)
    err = parameter_error(rec, truth)
    rel, per_entry = _relative_errors(err, truth_parameters(truth, precision))
    return float_error, err, rel, per_entry


def _relative_errors(err, true) -> tuple[list, list]:
    """Per parameter ``max|error| / max|entry|`` and per entry ``|error| / |entry|``."""
    rel, per_entry = [], []
    for j, (dW, dv) in enumerate(err.deviations):
        W, v = true[j]
        flat_dW, flat_W = [x for row in dW for x in row], [x for row in W for x in row]
        for dev, ref in ((flat_dW, flat_W), (list(dv), list(v))):
            rel.append(max(abs(x) for x in dev) / max(abs(x) for x in ref))
            per_entry += [abs(e) / abs(x) for e, x in zip(dev, ref) if x != 0]
    return rel, per_entry


def _torch_layer(d: int, heads: int, seed: int, precision: int, biases: str | None = None):
    """The demo's layer: its float64 oracle, the exact truth, and a recording copy of the oracle.

    ``recording`` answers like ``oracle`` and appends ``(tokens, value)`` to ``asked``. ``biases``:
    ``None`` a layer without biases, ``"default"`` with PyTorch's (zero) biases, ``"normal"`` with
    N(0, 1) biases (drawn after the readout).
    """
    import torch

    torch.manual_seed(seed)
    module = torch.nn.MultiheadAttention(d, heads, bias=biases is not None)
    readout = torch.randn(d)
    if biases == "normal":
        with torch.no_grad():
            module.in_proj_bias.normal_()
            module.out_proj.bias.normal_()
    oracle = torch_attention(module, readout, dtype=torch.float64)
    truth = torch_model(module, readout, precision)
    asked: list = []

    def recording(tokens):
        value = oracle(tokens)
        asked.append((tokens, value))
        return value

    recording.d = d  # type: ignore[attr-defined]
    recording.eps = oracle.eps  # type: ignore[attr-defined]
    return oracle, truth, asked, recording
