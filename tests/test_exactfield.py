"""The shared algebra of the exact fields (exactlearn.exactfield) and the final checks
(exactlearn.consistency)."""

from __future__ import annotations

import pickle
import random

import pytest
from flint import fmpq, fmpq_mat

from exactlearn import MultiHeadAttention, Oracle, ReconstructionError
from exactlearn.consistency import predicts, single_token_linearity, single_tokens_linear
from exactlearn.exactfield import ExactField, ExactRationals
from exactlearn.learn import run_schedule
from exactlearn.logspace import LogMatrix, LogNumber, log_matrix_of
from exactlearn.schedule import Configuration, weight_row
from exactlearn.states import ConfigKind, Linearity
from exactlearn.symbolic.field import SymbolicField

Q = ExactRationals()


def test_both_exact_fields_share_one_implementation():
    for method in ("solve_values", "solve_weights", "rho"):
        assert getattr(ExactRationals, method) is getattr(ExactField, method)
        assert getattr(SymbolicField, method) is getattr(ExactField, method)


def test_solve_values_checks_every_row():
    rows = [(1, 0), (0, 1), (1, 1)]
    assert Q.solve_values(rows, [[fmpq(2), fmpq(3), fmpq(5)]]) == [(2, 3)]
    with pytest.raises(ReconstructionError, match="not linear"):
        Q.solve_values(rows, [[fmpq(2), fmpq(3), fmpq(6)]])


def test_solve_weights_and_rho_round_trip():
    exp_W = [[fmpq(2), fmpq(1, 3)], [fmpq(5, 4), fmpq(1)]]
    W = log_matrix_of(exp_W)
    tokens = [((1, 0), (2, 1)), ((0, 1), (1, 3)), ((1, 1), (0, 2)), ((2, -1), (1, 1))]
    rhos = [Q.rho(W, tuple(zb - xb for zb, xb in zip(z, x)), x) for x, z in tokens]
    design = fmpq_mat(4, 4, [e for x, z in tokens for e in weight_row(x, z)])
    (solved,) = Q.solve_weights(design, [rhos])
    assert solved.exp() == tuple(tuple(row) for row in exp_W)
    half = log_matrix_of([[fmpq(2), fmpq(1)], [fmpq(1), fmpq(1)]])
    halved = tuple(tuple(tuple(c / 2 for c in cell) for cell in row) for row in half.coefficients)
    half = type(half)(half.base, halved)
    with pytest.raises(ReconstructionError):
        Q.rho(half, (1, 0), (1, 0))               # sqrt(2) is not rational


def test_the_final_checks_can_fail():
    truth = MultiHeadAttention.random(2, 2, seed=1)
    run = run_schedule(Oracle(truth), 2, 2)
    weights, values = [W for W, _ in run.result], [v for _, v in run.result]
    u = [values[0][a] + values[1][a] for a in range(2)]
    cfg = run.configs[0]
    assert predicts(Q, weights, values, u, cfg)
    wrong = Configuration(ConfigKind.MEASUREMENT, cfg.x, cfg.z, points=list(cfg.points),
                          values=[cfg.values[0] + 1] + list(cfg.values[1:]))
    assert not predicts(Q, weights, values, u, wrong)
    lin = [Configuration(ConfigKind.MEASUREMENT, x, x, points=[0], values=[fmpq(sum(x))])
           for x in [(1, 0), (0, 1), (1, 1)]]
    assert single_tokens_linear(Q, 2, lin)
    assert single_token_linearity(Q, 2, lin) is Linearity.LINEAR
    assert single_token_linearity(Q, 2, lin[:2]) is Linearity.UNDECIDED  # two tokens fit any u
    lin[2].values = [fmpq(3)]
    assert not single_tokens_linear(Q, 2, lin)
    assert single_token_linearity(Q, 2, lin) is Linearity.NOT_LINEAR


def test_rational_matrix_hooks_agree_with_the_generic_loops():
    """ExactRationals does times_matrix and row_values with FLINT products: the same exact values."""
    matrix = fmpq_mat(2, 3, [fmpq(1, 2), 0, 3, fmpq(-2, 7), 1, fmpq(5, 3)])
    columns = [[fmpq(1), fmpq(2, 9), fmpq(-4)], [fmpq(0), fmpq(1, 3), fmpq(7, 2)]]
    assert Q.times_matrix(matrix, columns) == ExactField.times_matrix(Q, matrix, columns)
    rows = [(1, 0, -2), (3, 1, 1)]
    assert Q.row_values(rows, columns) == ExactField.row_values(Q, rows, columns)
    assert Q.times_matrix(matrix, []) == [] and Q.row_values(rows, []) == []


def test_solve_values_reports_the_first_bad_head_and_row():
    rows = [(1, 0), (0, 1), (1, 1), (2, 1)]
    good = [fmpq(2), fmpq(3), fmpq(5), fmpq(7)]
    with pytest.raises(ReconstructionError, match="head 1 at measurement 2 "):
        Q.solve_values(rows, [good, [fmpq(1), fmpq(1), fmpq(3), fmpq(4)]])
    assert Q.solve_values(rows, [good, good]) == [(2, 3), (2, 3)]


def test_predicted_rho_equals_the_triple_loop():
    rng = random.Random(7)
    field = ExactRationals()
    d = 3
    exp_w = [[fmpq(rng.randint(1, 30), rng.randint(1, 30)) for _ in range(d)] for _ in range(d)]
    W = log_matrix_of(exp_w)
    for _ in range(30):
        left = tuple(rng.randint(-3, 3) for _ in range(d))
        right = tuple(rng.randint(-3, 3) for _ in range(d))
        rho = fmpq(1)
        for a in range(d):
            for b in range(d):
                rho *= exp_w[a][b] ** (left[a] * right[b])
        assert field.rho(W, left, right) == rho
    # against the direct formula (log coordinates by a triple loop, then exp), also for
    # weights whose exp is irrational (half-integer log coefficients): those must raise
    base = W.base
    for _ in range(30):
        coefficients = tuple(tuple(tuple(fmpq(rng.randint(-4, 4), rng.choice([1, 1, 2])) for _ in base)
                                   for _ in range(d)) for _ in range(d))
        V = LogMatrix(base, coefficients)
        left = tuple(rng.randint(-2, 2) for _ in range(d))
        right = tuple(rng.randint(-2, 2) for _ in range(d))
        predicted = [sum((left[a] * right[b] * coefficients[a][b][l]
                          for a in range(d) for b in range(d)), fmpq(0))
                     for l in range(len(base))]
        if all(c.q == 1 for c in predicted):
            assert field.rho(V, left, right) == LogNumber(base, tuple(predicted)).exp()
        else:
            with pytest.raises(ReconstructionError):
                field.rho(V, left, right)
    empty = LogMatrix((), tuple(tuple(() for _ in range(d)) for _ in range(d)))
    assert field.rho(empty, (1, 0, 2), (0, 1, 1)) == 1
    # pickled LogMatrix loses only its cache
    W2 = pickle.loads(pickle.dumps(W))
    assert W2 == W and "_coefficient_matrix" not in W2.__dict__
