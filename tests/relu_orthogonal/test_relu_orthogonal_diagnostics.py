"""Tests of stagewise.relu_orthogonal.diagnostics: Measurements against Algorithm 1 (Theorem 2's 1/log rate, the predicted error scales)."""
import numpy as np
import pytest

from stagewise.relu_orthogonal import algorithm, diagnostics, training
from relu_problem import hand_example


def test_plateau_midpoints():
    """Theorem 2's comparisons happen at plateau midpoints (t_k + t_{k+1})/2, t_0 = 0, k = 0..K-1."""
    y, s, M = hand_example()
    lp = algorithm.algorithm1(y, M, s)
    mids = diagnostics.plateau_midpoints(lp)
    np.testing.assert_allclose(mids, [lp.times[0] / 2, (lp.times[0] + lp.times[1]) / 2])
    assert np.all(lp.loss(mids) == lp.plateau_losses[:-1])


def test_measured_jumps_and_errors_on_a_small_run():
    """Theorem 2 measured on a run at small lambda: jump order, log-norm offsets O(1) nats, plateau and
    exponent errors within the predicted scales."""
    (_, (y, U, s, M)), = algorithm.find_instances(1, 1, 16, 4, "abs_gaussian", "positive", gap=0.5, t_max=30)
    L, eta = 100.0, 0.2
    lp = algorithm.algorithm1(y, M, s, eta=eta)
    Ub, bb, lb = training.balanced_state(U, s, -L)
    res = training.gd_numba(y[None], Ub[None], bb[None], lb[None], np.array([eta]), 1.0,
                            np.array([training.steps_for(lp, L, eta, 1.0, 16)]), rec_every=20)
    order, that = diagnostics.measured_jumps(res, 0, eta, L)
    assert order.tolist() == lp.neurons.tolist()
    assert np.max(np.abs(diagnostics.jump_offsets_nats(lp, that, L))) < 0.5 * np.log(16) + 1
    assert np.all(diagnostics.plateau_errors(res, 0, lp, eta, L) <= np.maximum(10 * diagnostics.plateau_error_scale(lp, L), 1e-10))
    assert diagnostics.exponent_errors(res, 0, lp, eta, L).max() * L < 0.5 * np.log(16) + 1
    assert diagnostics.record_at(res, 1e12) == len(res.rec_steps) - 1 and diagnostics.record_at(res, 29) == 1


def test_error_scales_are_powers_of_lambda():
    """Theorem 2 / Eq. (15) tolerances: the predicted plateau and norm error scales are powers of lambda set by Algorithm 1's exponents."""
    y, s, M = hand_example()
    lp = algorithm.algorithm1(y, M, s)
    a, b = diagnostics.plateau_error_scale(lp, 50.0), diagnostics.plateau_error_scale(lp, 100.0)
    assert a.shape == (lp.K,) and np.all(b <= a) and np.all((0 <= b) & (b <= 1))
    # the first plateau's scale is lambda^{2 min tau} at the midpoint t_1 / 2
    tau = lp.exponents(np.array([lp.times[0] / 2]))[0]
    assert a[0] == pytest.approx(np.exp(-2 * 50.0 * tau.min()))
    assert diagnostics.norm_error_scale(lp, 100.0) == pytest.approx(diagnostics.norm_error_scale(lp, 50.0) ** 2)
