"""How models and results read in a Python session: exactlearn.display and the classes using it.

Models' reprs are code that ``eval`` reads back after ``from exactlearn import *``; results'
reprs are one-line summaries of measured counts (no timings, no log coefficients); ``str`` and
the IPython pretty printer show grids, ``_repr_latex_`` shows ``pmatrix`` and ``\\frac``.
"""

from __future__ import annotations

import re

import pytest
from flint import fmpq, fmpq_mat

import exactlearn
from exactlearn import Head, LogMatrix, MultiHeadAttention, NumberField, Oracle, RecoveredHead, learn
from exactlearn.display import grid
from exactlearn.transformer import Transformer, learn_transformer

#: the documented namespace of the reprs: ``from exactlearn import *``
NAMESPACE = {name: getattr(exactlearn, name) for name in exactlearn.__all__}
K = NumberField("a^2 - 2", root=1.414)


def pretty(obj) -> str:
    """What IPython prints for ``obj`` (a stand-in printer when IPython is not installed)."""
    try:
        from IPython.lib.pretty import pretty as ipython_pretty
    except ImportError:
        class Printer:
            def __init__(self):
                self.parts: list[str] = []

            def text(self, s):
                self.parts.append(s)

        printer = Printer()
        obj._repr_pretty_(printer, False)
        return "".join(printer.parts)
    return ipython_pretty(obj)


def latex(obj) -> str:
    out = obj._repr_latex_()
    assert out.startswith("$") and out.endswith("$")
    return out


@pytest.fixture(scope="module")
def recovery():
    """A run with one redraw (d = 3, H = 2, seed 1: 77 queries against the formula's 69)."""
    truth = MultiHeadAttention.random(3, 2, seed=1)
    oracle = Oracle(truth)
    return learn(oracle, d=3, heads=2), oracle, truth


# -- display ---------------------------------------------------------------------------------


def test_grid_is_flints_fmpq_mat():
    rows = [[fmpq(1), fmpq(-1, 3), fmpq(7)], [fmpq(22, 7), fmpq(0), fmpq(5, 12)]]
    assert "\n".join(grid(rows)) == str(fmpq_mat(rows))


# -- models ----------------------------------------------------------------------------------


def test_head_repr_evals_back_and_str_is_a_grid():
    h = Head([[2, "1/3"], [1, 3]], [1, "-1/2"], exp_w=["5/2", 1])
    assert repr(h) == "Head(exp_W=[[2, '1/3'], [1, 3]], v=[1, '-1/2'], exp_w=['5/2', 1])"
    assert eval(repr(h), NAMESPACE) == h
    assert str(h).splitlines() == ["exp_W = [2, 1/3]", "        [1,   3]", "v     = [1, -1/2]",
                                   "exp_w = [5/2, 1]"]
    assert pretty(h) == str(h)
    text = latex(h)
    assert r"\begin{pmatrix} 2 & \frac{1}{3} \\ 1 & 3 \end{pmatrix}" in text and r"-\frac{1}{2}" in text


def test_head_over_a_number_field_evals_back():
    h = Head([["1 + a", "1/2"], [3, "a"]], ["a", -1], field=K)
    assert eval(repr(h), NAMESPACE) == h and eval(repr(h), NAMESPACE).field == K
    assert "[1 + a, 1/2]" in str(h)
    assert r"1 + a & \frac{1}{2}" in latex(h)


@pytest.mark.parametrize("model", [
    MultiHeadAttention.random(3, 2, seed=1),
    MultiHeadAttention.random(2, 2, seed=4, affine=True),
    MultiHeadAttention.random(2, 2, seed=1, field=K),
    MultiHeadAttention([Head([[1, 1], [1, 1]], [1, -1]), Head([[1, 1], [1, 1]], [-1, 1])]).canonical(),
], ids=["rational", "affine", "number field", "no heads"])
def test_model_repr_evals_back(model):
    again = eval(repr(model), NAMESPACE)
    assert again == model and again.d == model.d and again.c0 == model.c0 and again.field == model.field
    assert len(again.heads) == len(model.heads)


def test_model_repr_is_short_and_exact():
    m = MultiHeadAttention.from_lists([[[2, "1/3"], [1, 3]]], [[1, "-1/2"]], c0="1/2")
    assert repr(m) == "MultiHeadAttention([Head(exp_W=[[2, '1/3'], [1, 3]], v=[1, '-1/2'])], c0='1/2')"
    big = MultiHeadAttention.from_lists([[[fmpq(10**30 + 1, 3)]]], [[1]])
    assert eval(repr(big), NAMESPACE) == big                     # exact: all 31 digits


def test_model_str_pretty_and_latex():
    m = MultiHeadAttention.from_lists([[[2, "1/3"], [1, 3]], [["5/7", 1], [1, 1]]],
                                      [[1, "-1/2"], [0, 4]], exp_ws=[None, [2, 3]], c0="1/2")
    lines = str(m).splitlines()
    assert lines[0] == "MultiHeadAttention: d = 2, 2 heads"
    assert lines[1:4] == ["heads[0].exp_W = [2, 1/3]", "                 [1,   3]",
                          "heads[0].v     = [1, -1/2]"]
    assert "heads[1].exp_w = [2, 3]" in lines and lines[-1] == "c0 = 1/2"
    assert str(m) != repr(m) and pretty(m) == str(m)
    text = latex(m)
    assert text.count(r"\begin{pmatrix}") == 5 and r"\frac{5}{7}" in text and r"c_0 = \frac{1}{2}" in text


def test_model_over_a_number_field_shows_the_field():
    m = MultiHeadAttention.from_lists([[["1 + a", "1/2"], [3, "a"]]], [["a", -1]], field=K)
    assert "over Q(a) with a^2 - 2 = 0" in str(m).splitlines()[0]
    assert r"\mathbb{Q}(a),\ a^{2} - 2 = 0" in latex(m)


def test_number_field_and_elements():
    assert eval(repr(K), NAMESPACE) == K
    assert repr(K("3/2 - a/5")) == str(K("3/2 - a/5")) == "3/2 - a/5"


# -- results ---------------------------------------------------------------------------------


def test_recovery_repr_is_a_short_summary_of_measured_counts(recovery):
    rec, oracle, _ = recovery
    text = repr(rec)
    assert text == (f"<Recovery d=3 H=2: {oracle.queries} queries (formula {rec.planned}), "
                    f"max length {oracle.max_length}, {rec.redraws} redraw>")
    assert (oracle.queries, rec.planned, rec.redraws) == (77, 69, 1)      # measured, not the formula
    assert len(text) <= 100 and "seconds" not in text and "LogMatrix" not in text
    with pytest.raises(SyntaxError):
        eval(text)


def test_recovery_str_pretty_and_latex_show_the_heads(recovery):
    rec, _, truth = recovery
    lines = str(rec).splitlines()
    assert lines[0] == repr(rec) and pretty(rec) == str(rec)
    for i, h in enumerate(rec.heads):
        assert f"heads[{i}].v     = [" + ", ".join(str(x) for x in h.v) + "]" in lines
        assert f"heads[{i}].exp_W = " + grid(h.exp_W)[0] in lines
    assert {tuple(h.v) for h in rec.heads} == {tuple(h.v) for h in truth.heads}
    text = latex(rec)
    assert text.count(r"\begin{pmatrix}") == 4 and r"\frac{8}{11}" in text and "<" not in text


def test_recovery_summary_names_the_schedule_and_the_bound():
    truth = MultiHeadAttention.random(2, 2, seed=0)
    rec = learn(Oracle(truth), d=2, heads_bound=3, schedule="lean")
    assert repr(rec).startswith("<Recovery d=2 H=2 (bound 3): ")
    assert f"({rec.schedule} formula {rec.planned})" in repr(rec)


def test_recovered_head_rational_and_not():
    log_W = LogMatrix((2, 3), (((fmpq(1), fmpq(0)), (fmpq(0), fmpq(-1))),
                               ((fmpq(0), fmpq(0)), (fmpq(2), fmpq(1)))))    # exp(W) = [[2, 1/3], [1, 12]]
    rational = RecoveredHead(log_W, (fmpq(1, 2), fmpq(3)))
    assert repr(rational) == "<RecoveredHead d=2: exp(W) rational>"
    assert str(rational).splitlines() == ["exp_W = [2, 1/3]", "        [1,  12]", "v     = [1/2, 3]"]
    assert r"\frac{1}{3}" in latex(rational)
    root = RecoveredHead(LogMatrix((2,), (((fmpq(1, 2),), (fmpq(0),)), ((fmpq(0),), (fmpq(1),)))),
                         (fmpq(1), fmpq(0)))
    assert repr(root) == "<RecoveredHead d=2: exp(W) not rational (see log_W)>"
    assert str(root).splitlines() == ["log_W = [1/2*log(2),      0]", "        [         0, log(2)]",
                                      "v     = [1, 0]"]
    assert r"\log" in latex(root) and pretty(root) == str(root)


def test_approx_recovery_and_head():
    from exactlearn.approx import NoisyOracle, RealMultiHeadAttention, learn_approx

    E = [[["11/10", "9/10"], ["4/5", "6/5"]], [["6/5", 1], ["9/10", "4/3"]]]
    truth = MultiHeadAttention.from_lists(E, [[1, -2], [3, 1]])
    oracle = NoisyOracle(truth, eps="1e-30", seed=1)
    rec = learn_approx(oracle, 2, heads=2)
    text = repr(rec)
    assert text.startswith(f"<ApproxRecovery d=2 H=2: {oracle.queries} queries (formula {rec.formula}), ")
    assert "eps 1.0e-30" in text and "(estimated)>" in text and "seconds" not in text and len(text) <= 130
    lines = str(rec).splitlines()
    assert all(len(line) <= 80 for line in lines) and str(rec).replace("\n    ", " ").startswith(text + "\n")
    assert any(line.startswith("heads[0].W      = [") for line in lines)
    assert pretty(rec) == str(rec)
    assert latex(rec).count(r"\begin{pmatrix}") == 4
    assert repr(rec.heads[0]).startswith("<ApproxHead d=2: radius ")
    real = RealMultiHeadAttention([[["1/2", 0], [0, "-1/4"]]], [[1, 2]])
    assert repr(real) == "<RealMultiHeadAttention d=2 H=1>"
    assert str(real).splitlines()[1:] == ["heads[0].W = [0.5,   0.0]", "             [0.0, -0.25]",
                                          "heads[0].v = [1.0, 2.0]"]


def test_transformer_repr_evals_back_and_shows_grids():
    t = Transformer([[[2, 1], [1, 3]]], [[["1/2", 0], [0, 1]]], [[1, -1]], [2], residual=True)
    assert repr(t) == ("Transformer(exp_Ws=[[[2, 1], [1, 3]]], Vs=[[['1/2', 0], [0, 1]]], U=[[1, -1]], "
                       "a=[2], residual=True)")
    again = eval(repr(t), {"Transformer": Transformer})
    assert again == t and (again.exp_Ws, again.Vs, again.U, again.a) == (t.exp_Ws, t.Vs, t.U, t.a)
    assert again.residual
    lines = str(t).splitlines()
    assert lines[3:5] == ["heads[0].V     = [1/2, 0]", "                 [  0, 1]"]
    assert lines[-2:] == ["U = [1, -1]", "a = [2]"] and pretty(t) == str(t)
    assert r"V_{0} = \begin{pmatrix} \frac{1}{2} & 0 \\ 0 & 1 \end{pmatrix}" in latex(t)


def test_transformer_results():
    truth = Transformer.random(2, 1, 2, seed=1)
    rec = learn_transformer(truth, 2, heads=1)
    text = repr(rec)
    assert text == (f"<TransformerRecovery d=2 H=1: {rec.lines} lines, {rec.queries} queries, "
                    f"max length {rec.max_length}, {rec.redraws} redraws>")
    lines = str(rec).splitlines()
    assert f"steps['attention']: {rec.steps['attention'].queries} queries (formula {rec.step1_formula}), " \
           f"max length {rec.steps['attention'].max_length}" in lines
    assert "Transformer: d = 2, 1 head, width" in str(rec) and "seconds" not in str(rec)
    form = rec.canonical
    assert repr(form) == f"<CanonicalTransformer d=2: 1 head, {len(form.lines)} lines>"
    assert f"lines[0].kappa = {form.lines[0].kappa}" in str(form).splitlines()
    assert r"\kappa_{0}" in latex(form) and pretty(form) == str(form)


def test_certificate_summary():
    from exactlearn.symbolic.certificate import certify

    cert = certify(2, 1)
    text = repr(cert)
    assert text == (f"<Certificate d=2 H=1: passed, {cert.queries} queries (formula {cert.formula}), "
                    f"max length {cert.max_length} (formula {cert.formula_max_length}), 0 redraws, "
                    f"{len(cert.factors)} exceptional factors>")
    assert all(len(line) <= 80 for line in str(cert).splitlines()) and pretty(cert) == str(cert)
    assert cert._repr_latex_() is None                                    # shown as text in Jupyter
    assert re.fullmatch(r"<ExceptionalFactor degree \d+: .+, \d+ records?>", repr(cert.factors[0]))
