"""Tests of stagewise.relu_orthogonal.training: Log-scale gradient descent (Proposition 1, Theorem 2, Assumption 3)."""
import math

import numpy as np
import pytest

from stagewise.numerics.flows import DivergenceError
from stagewise.relu_orthogonal import algorithm, data, diagnostics, training


def _state(seed=0, n=10, m=4, log_lam=-3.0, signs="random"):
    y, U, s, M = data.draw_instance(seed, n, m, "gaussian", signs)
    return y, U, s, M, log_lam


def test_log_scale_is_exact_reparametrisation():
    """The log-scale form w = e^l U, a = e^l b is exactly GD on (w, a) under Assumption 3's balanced init."""
    # plain GD in (w, a) against the log-scale loop started at ell = log(lambda)
    y, U, s, M, ll = _state(seed=3, log_lam=-2.0)
    lam, eta, c = math.exp(ll), 0.25, 2.0
    W, a = lam * U.copy(), lam * s.copy()
    n = len(y)
    for _ in range(2000):
        act = W > 0
        res_ = c / n * (y - a @ (W * act))
        gW = a[:, None] * act * res_[None, :]
        ga = np.sum(W * act * res_[None, :], axis=1)
        W, a = W + eta * gW, a + eta * ga
    Ub, bb, lb = training.balanced_state(U, s, ll)
    res = training.gd_numba(y[None], Ub[None], bb[None], lb[None], np.array([eta]), c, np.array([2000]), renorm=7)
    W1, a1 = res.weights()
    np.testing.assert_allclose(W1[0], W, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(a1[0], a, rtol=1e-9, atol=1e-13)


def test_one_step_imbalance_identity():
    """Proposition 1 for GD: one step changes a_j^2 - ||w_j||^2 by eta^2(<w_j, D_j>^2 - a_j^2 ||D_j||^2)."""
    rng = np.random.default_rng(5)
    n, m, eta, c = 8, 5, 0.4, 1.0
    y = rng.standard_normal(n)
    W, a = rng.standard_normal((m, n)), rng.standard_normal(m)
    act = W > 0
    h = a @ (W * act)
    D = c / n * (y - h)[None, :] * act
    W2, a2 = W + eta * a[:, None] * D, a + eta * np.sum(W * D, axis=1)
    lhs = (a2 ** 2 - (W2 ** 2).sum(1)) - (a ** 2 - (W ** 2).sum(1))
    rhs = eta ** 2 * (np.sum(W * D, axis=1) ** 2 - a ** 2 * (D ** 2).sum(1))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-14)


def test_rotation_invariance():
    """Setting: GD with orthonormal inputs X in d = 2n equals GD with X = I_n (why the chapter takes X = I_n)."""
    # GD with a random orthonormal X in d = 2n equals GD with X = I and the init rotated accordingly
    rng = np.random.default_rng(2)
    n, m, d, eta = 6, 3, 12, 0.3
    y = rng.standard_normal(n)
    X = np.linalg.qr(rng.standard_normal((d, n)))[0]        # columns x_i
    W, a = 0.1 * rng.standard_normal((m, d)), 0.1 * rng.standard_normal(m)
    V, b = W @ X, a.copy()                                   # coordinates in span(X); the rest is frozen
    for _ in range(500):
        P = W @ X
        act = P > 0
        r = (y - a @ (P * act)) / n
        W, a = W + eta * a[:, None] * ((act * r[None, :]) @ X.T), a + eta * np.sum(P * act * r[None, :], axis=1)
        actv = V > 0
        rv = (y - b @ (V * actv)) / n
        V, b = V + eta * b[:, None] * actv * rv[None, :], b + eta * np.sum(V * actv * rv[None, :], axis=1)
    np.testing.assert_allclose(a @ np.maximum(W @ X, 0), b @ np.maximum(V, 0), atol=1e-12)


def test_gd_follows_algorithm1_at_small_lambda():
    """Theorem 2: at small lambda GD jumps in Algorithm 1's order, at its times (O(1/log(1/lambda))), fits its sets and reaches Eq. (15)'s norm."""
    inst = algorithm.find_instances(0, 1, 16, 4, "abs_gaussian", "positive", gap=0.5, t_max=30)
    (_, (y, U, s, M)), = inst
    L, eta = 200.0, 0.2
    lp = algorithm.algorithm1(y, M, s, eta=eta)
    Ub, bb, lb = training.balanced_state(U, s, -L)
    res = training.gd_numba(y[None], Ub[None], bb[None], lb[None], np.array([eta]), 1.0,
                      np.array([training.steps_for(lp, L, eta, 1.0, 16)]))
    order, that = diagnostics.measured_jumps(res, 0, eta, L)
    assert order.tolist() == lp.neurons.tolist()
    assert np.max(np.abs(that - lp.times)) * L < 60
    sets = res.fitted_sets(y)[0]
    for j, S in zip(lp.neurons, lp.fitted_sets):
        assert sets[j].tolist() == S.tolist()
    assert res.final_norm_sq()[0] == pytest.approx(lp.norm_sq(), rel=1e-6)


def test_divergence_names_parameter():
    """Divergence (NaN/overflow) stops GD with the shared one-line DivergenceError naming the step-size parameter."""
    # ReLU GD with a too-large step usually kills neurons instead of diverging; overflow of the loss
    # (labels of size 1e200) exercises the same NaN/overflow detection
    y, U, s, M, ll = _state(log_lam=0.0)
    y = 1e200 * np.abs(y)
    Ub, bb, lb = training.balanced_state(np.abs(U), np.ones_like(s), 0.0)
    with pytest.raises(DivergenceError, match="parameter fig1_lr=5: training diverged"):
        training.gd_numba(y[None], Ub[None], bb[None], lb[None], np.array([5.0]), 2.0, np.array([2000]), eta_name="fig1_lr")
