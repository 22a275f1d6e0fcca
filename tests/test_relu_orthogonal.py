"""Unit tests for stagewise.relu_orthogonal.algorithm and stagewise.relu_orthogonal.training (relu-orthogonal chapter)."""
import itertools
import math

import numpy as np
import pytest

from stagewise.relu_orthogonal.algorithm import algorithm as ro
from stagewise.relu_orthogonal.algorithm import training as rt
from stagewise.core.parameters import ParameterError


def hand_example():
    # n = 3 points, 2 positive neurons: neuron 0 active on {0, 1}, neuron 1 on {1, 2}
    y = np.array([3.0, 4.0, 1.0])
    s = np.array([1.0, 1.0])
    M = np.array([[1, 0], [1, 1], [0, 1]], bool)
    return y, s, M


def test_algorithm1_hand_computed():
    y, s, M = hand_example()
    lp = ro.algorithm1(y, M, s, c=1.0)
    r0, r1 = 5 / 3, math.sqrt(17) / 3
    t1 = 1 / r0
    tau1 = 1 - t1 * r1
    t2 = t1 + tau1 / (1 / 3)
    assert lp.neurons.tolist() == [0, 1]
    np.testing.assert_allclose(lp.times, [t1, t2], rtol=1e-14)
    assert [S.tolist() for S in lp.fitted_sets] == [[0, 1], [2]]
    np.testing.assert_allclose(lp.plateau_losses, [26 / 6, 1 / 6, 0.0], atol=1e-15)
    np.testing.assert_allclose(lp.tau[1], [0.0, tau1], rtol=1e-14)
    assert lp.norm_sq() == pytest.approx(2 * (5 + 1))
    # the fitted neurons interpolate exactly and are balanced (eqs. 12-13)
    out = (lp.a[:, None] * np.maximum(lp.W, 0)).sum(0)
    np.testing.assert_allclose(out, y, rtol=1e-14)
    np.testing.assert_allclose(lp.a ** 2, (lp.W ** 2).sum(1), rtol=1e-14)


def test_loss_constant_rescales_time_and_eta_correction():
    y, s, M = hand_example()
    lp1, lp2 = ro.algorithm1(y, M, s, c=1.0), ro.algorithm1(y, M, s, c=2.0)
    np.testing.assert_allclose(lp2.times, lp1.times / 2, rtol=1e-14)
    lpe = ro.algorithm1(y, M, s, c=1.0, eta=0.1)
    r0 = 5 / 3
    assert lpe.times[0] == pytest.approx(0.1 / math.log1p(0.1 * r0), rel=1e-14)
    assert np.all(lpe.times > lp1.times)   # log(1 + eta r)/eta < r: GD is slower than the flow


def test_exponent_evaluator_piecewise_affine():
    y, s, M = hand_example()
    lp = ro.algorithm1(y, M, s)
    tau = lp.exponents(np.concatenate([[0.0], lp.times]))
    np.testing.assert_allclose(tau[0], [1, 1])
    np.testing.assert_allclose(tau[1], lp.tau[1], atol=1e-14)
    assert tau[2].max() == pytest.approx(0.0, abs=1e-12)
    assert lp.loss(np.array([0.1, lp.times[0] + 1e-9, 10.0])).tolist() == pytest.approx([26 / 6, 1 / 6, 0.0])


def test_tie_is_reported_not_resolved():
    y = np.array([1.0, 1.0, 1.0, 1.0])
    s = np.ones(2)
    M = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], bool)   # two neurons with equal ||y_S||
    lp = ro.algorithm1(y, M, s)
    assert lp.tie is not None and lp.tie[0] == 1 and sorted(lp.tie[1].tolist()) == [0, 1]
    assert lp.K == 0


def test_uncovered_point_never_fitted():
    y = np.array([1.0, 2.0, 0.5])
    s = np.ones(2)
    M = np.array([[1, 0], [0, 1], [0, 0]], bool)
    lp = ro.algorithm1(y, M, s)
    assert lp.uncovered.tolist() == [2]
    assert lp.plateau_losses[-1] == pytest.approx(0.5 ** 2 / 6)
    assert ro.coverage_report(M)["uncovered_points"].tolist() == [2]


def test_min_norm_and_sandwich():
    rng = np.random.default_rng(0)
    for _ in range(50):
        y, U, s, M = rt.draw_instance(int(rng.integers(1 << 30)), 24, 12, "gaussian", "random")
        lp = ro.algorithm1(y, M, s)
        ratio, upper = ro.sandwich(lp)
        assert ratio <= upper * (1 + 1e-12)
        if lp.uncovered.size == 0:
            assert ratio >= 1 - 1e-12
    y = np.array([3.0, -4.0, 4.0])
    assert ro.min_norm_sq(y) == pytest.approx(2 * (5 + 4))


def test_coverage_exact_matches_enumeration():
    m, y = 3, np.array([1.0, 2.0, -1.0])
    total = 0.0
    for signs in itertools.product([1, -1], repeat=m):
        for bits in itertools.product([0, 1], repeat=m * len(y)):
            act = np.array(bits).reshape(len(y), m).astype(bool)
            M = act & ((np.array(signs)[None, :] * y[:, None]) > 0)
            total += M.any(axis=1).all()
    p_enum = total / (2 ** m * 2 ** (m * len(y)))
    assert ro.coverage_exact(m, 2, 1) == pytest.approx(p_enum, rel=1e-12)
    for m in range(2, 30, 3):
        assert ro.coverage_union_bound(m, 40) <= ro.coverage_exact(m, 20, 20) + 1e-12
        assert ro.assumption4_union_bound(m, 20, 20) <= ro.coverage_union_bound(m, 40)


def test_coverage_monte_carlo_matches_sphere_draws():
    # the bit-packed simulation equals drawing w_j on the sphere against a random orthonormal X (d > n)
    rng = np.random.default_rng(1)
    n, m, d, trials = 12, 8, 20, 3000
    y = ro.make_labels(n, "gaussian", rng)
    X = np.linalg.qr(rng.standard_normal((d, n)))[0]
    hits = 0
    for _ in range(trials):
        W = rng.standard_normal((m, d))
        s = rng.choice([-1.0, 1.0], size=m)
        M = ((s[None, :] * y[:, None]) > 0) & ((W @ X).T > 0)
        hits += M.any(axis=1).all()
    p_sphere = hits / trials
    p_exact = ro.coverage_exact(m, int((y > 0).sum()), int((y < 0).sum()))
    p_bits = ro.coverage_monte_carlo(m, y, trials, rng)
    sig = math.sqrt(p_exact * (1 - p_exact) / trials)
    assert abs(p_sphere - p_exact) < 4.5 * sig and abs(p_bits - p_exact) < 4.5 * sig


def test_half_coverage_threshold_near_two_log2n():
    for k in (6, 10, 14):
        mh = ro.half_coverage_width(2 ** (k - 1), 2 ** (k - 1))
        assert 2 * k <= mh <= 2 * k + 4


def _state(seed=0, n=10, m=4, log_lam=-3.0, signs="random"):
    y, U, s, M = rt.draw_instance(seed, n, m, "gaussian", signs)
    return y, U, s, M, log_lam


def test_numba_matches_numpy_reference():
    y, U, s, M, ll = _state()
    Ub, bb, lb = rt.balanced_state(U, s, ll)
    res = rt.gd_numba(y[None], Ub[None], bb[None], lb[None], np.array([0.3]), 1.0, np.array([3000]), rec_every=100)
    Un, bn, ln, losses = rt.gd_numpy(y, Ub, bb, lb, 0.3, 1.0, 3000)
    W1, a1 = res.weights()
    np.testing.assert_allclose(W1[0], np.exp(ln)[:, None] * Un, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(a1[0], np.exp(ln) * bn, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(res.loss[0, :30], losses, rtol=1e-9)


def test_log_scale_is_exact_reparametrisation():
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
    Ub, bb, lb = rt.balanced_state(U, s, ll)
    res = rt.gd_numba(y[None], Ub[None], bb[None], lb[None], np.array([eta]), c, np.array([2000]), renorm=7)
    W1, a1 = res.weights()
    np.testing.assert_allclose(W1[0], W, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(a1[0], a, rtol=1e-9, atol=1e-13)


def test_one_step_imbalance_identity():
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
    inst = rt.find_instances(0, 1, 16, 4, "abs_gaussian", "positive", gap=0.5, t_max=30)
    (_, (y, U, s, M)), = inst
    L, eta = 200.0, 0.2
    lp = ro.algorithm1(y, M, s, eta=eta)
    Ub, bb, lb = rt.balanced_state(U, s, -L)
    res = rt.gd_numba(y[None], Ub[None], bb[None], lb[None], np.array([eta]), 1.0,
                      np.array([rt.steps_for(lp, L, eta, 1.0, 16)]))
    order, that = rt.measured_jumps(res, 0, eta, L)
    assert order.tolist() == lp.neurons.tolist()
    assert np.max(np.abs(that - lp.times)) * L < 60
    sets = res.fitted_sets(y)[0]
    for j, S in zip(lp.neurons, lp.fitted_sets):
        assert sets[j].tolist() == S.tolist()
    assert res.final_norm_sq()[0] == pytest.approx(lp.norm_sq(), rel=1e-6)


def test_divergence_names_parameter():
    # ReLU GD with a too-large step usually kills neurons instead of diverging; overflow of the loss
    # (labels of size 1e200) exercises the same NaN/overflow detection
    y, U, s, M, ll = _state(log_lam=0.0)
    y = 1e200 * np.abs(y)
    Ub, bb, lb = rt.balanced_state(np.abs(U), np.ones_like(s), 0.0)
    with pytest.raises(ParameterError, match="parameter fig1_lr"):
        rt.gd_numba(y[None], Ub[None], bb[None], lb[None], np.array([5.0]), 2.0, np.array([2000]), eta_name="fig1_lr")


def test_extrapolation_recovers_intercept():
    Ls = np.array([50.0, 100.0, 200.0])
    t0, C = rt.extrapolate(Ls, 3.0 + 40.0 / Ls)
    assert t0 == pytest.approx(3.0) and C == pytest.approx(40.0)


def test_validator_messages():
    good = {"sweep_log_inv_lambdas": [25, 50, 100], "bal_etas": [0.2, 0.1], "norm_gd_log2n_max": 7,
            "norm_log2n_max": 14, "fig1_lr": 0.01, "fig1_loss_c": 2.0}
    ro.check_parameters(good)
    for key, val, word in [("sweep_log_inv_lambdas", [25, 25, 50], "sweep_log_inv_lambdas"),
                           ("bal_etas", [0.1], "bal_etas"), ("norm_gd_log2n_max", 15, "norm_gd_log2n_max"),
                           ("fig1_lr", 0.25, "fig1_lr")]:
        with pytest.raises(ParameterError) as err:
            ro.check_parameters({**good, key: val})
        msg = str(err.value)
        assert msg.startswith(f"parameter {word}") and "\n" not in msg and "allowed" in msg


def test_identical_columns_jump_as_one_group():
    y = np.array([2.0, 1.0, 0.5])
    s = np.ones(3)
    M = np.array([[1, 1, 0], [1, 1, 1], [0, 0, 1]], bool)   # neurons 0 and 1 share their column
    lp = ro.algorithm1(y, M, s)
    assert lp.tie is None and ro.merged_groups(lp) == 1
    assert sorted(lp.members[0].tolist()) == [0, 1]
    out = (lp.a[:, None] * np.maximum(lp.W, 0)).sum(0)
    np.testing.assert_allclose(out, y, rtol=1e-14)
    assert np.sum(lp.a ** 2 + (lp.W ** 2).sum(1)) == pytest.approx(lp.norm_sq(), rel=1e-14)
    with pytest.raises(AssertionError):
        assert ro.algorithm1(y, M, s, merge_identical=False).tie is None


def test_error_scales_are_powers_of_lambda():
    y, s, M = hand_example()
    lp = ro.algorithm1(y, M, s)
    a, b = rt.plateau_error_scale(lp, 50.0), rt.plateau_error_scale(lp, 100.0)
    assert a.shape == (lp.K,) and np.all(b <= a) and np.all((0 <= b) & (b <= 1))
    # the first plateau's scale is lambda^{2 min tau} at the midpoint t_1 / 2
    tau = lp.exponents(np.array([lp.times[0] / 2]))[0]
    assert a[0] == pytest.approx(np.exp(-2 * 50.0 * tau.min()))
    assert rt.norm_error_scale(lp, 100.0) == pytest.approx(rt.norm_error_scale(lp, 50.0) ** 2)
