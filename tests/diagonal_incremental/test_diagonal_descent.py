"""Gradient descent on (u, v): the exact identity of prop-diagonal-incremental-gd and divergence handling."""
import numpy as np
import pytest
import torch

from stagewise.numerics.flows import DivergenceError
from stagewise.diagonal_incremental import descent, networks

f64 = torch.float64
CORR = [[1, .2, .75], [.2, 1, .75], [.75, .75, 1]]


def linear(sigma, beta_star):
    return networks.LinearDiagonal(torch.tensor(sigma, dtype=f64), torch.tensor(beta_star, dtype=f64))


def test_gd_identity_exact_to_rounding():
    """Proposition prop-diagonal-incremental-gd: c_n = c_0 prod(1 - eta^2 g^2) to rounding; violation O(eta)."""
    model = linear(CORR, [1.0, 0.6, -0.3])
    rng = np.random.default_rng(0)
    u0, v0 = rng.standard_normal(3), rng.standard_normal(3)
    out = descent.gradient_descent(model, u0, v0, alphas=[1e-2, 1e-2], etas=[0.1, 0.05], n_steps=2000)
    err = np.abs(out.c - out.c_pred)
    assert np.all(err <= 8 * 2000 * np.finfo(float).eps * out.scale)
    assert descent.identity_error(out, 2000) <= 8
    drift = np.abs(out.c / out.c0 - 1).max(axis=1)
    assert drift[0] > 1e-4 and drift[1] < drift[0]      # conservation is violated at O(eta) by GD


def test_gd_divergence_names_parameter():
    """A diverging step size stops with a one-line error naming the parameter eta."""
    model = linear(np.eye(2), [5.0, 3.0])
    with pytest.raises(DivergenceError, match="parameter eta"):
        descent.gradient_descent(model, np.array([1.0, 2.0]), np.array([0.5, 0.1]), [0.5], [5.0], 200)


def test_descend_from_given_rows_and_gradient_descent_agree():
    """descend from alpha * theta_0 rows is gradient_descent (prop-diagonal-incremental-gd), tau = t / log(1/alpha)."""
    model = linear(CORR, [1.0, 0.6, -0.3])
    u0, v0 = np.array([0.3, -1.0, 0.5]), np.array([0.1, 0.4, -0.2])
    gd = descent.gradient_descent(model, u0, v0, [1e-3], [0.05], 300, record_every=30)
    run = descent.descend(model, 1e-3 * u0[None], 1e-3 * v0[None], 0.05, 300, record_every=30)
    np.testing.assert_array_equal(gd.beta, run.beta)
    np.testing.assert_allclose(gd.tau, run.t / np.log(1e3))
    assert run.tau is None and run.t[0, -1] == pytest.approx(15.0)


def test_conservation_study_first_order_in_eta():
    """Lemma 4.2 is violated by GD at first order in eta; the product identity holds to rounding."""
    model = linear(CORR, [1.0, 0.6, -0.3])
    u0, v0 = np.array([0.3, -1.0, 0.5]), np.array([0.1, 0.4, -0.2])
    cs = descent.conservation_study(model, u0, v0, [0.04, 0.02, 0.01], t_end=10.0, alpha=0.1)
    assert cs.identity_err < 8
    assert 0.8 < cs.slope <= 1.05 and 0.8 < cs.slopes[0] <= 1.05
    assert cs.drift[0] > cs.drift[1] > cs.drift[2]


def test_richardson_slope_and_its_window():
    """A violation A eta (1 + B eta): local slopes 1 - c eta; Richardson removes the O(eta) term, and the window
    is half of it; the control's slope 2 (same number of steps) lies far outside."""
    from stagewise.diagonal_incremental.descent import ConservationStudy
    cs = ConservationStudy([0.2, 0.1, 0.05], [1.0, 1.0, 1.0], 0.0, np.array([0.8, 0.9]))
    assert cs.slope_extrapolated == pytest.approx(1.0) and cs.slope_window == pytest.approx(0.1)
    ctl = ConservationStudy([0.2, 0.1, 0.05], [1.0, 1.0, 1.0], 0.0, np.array([2.0, 2.0]))
    assert abs(ctl.slope_extrapolated - 1) > cs.slope_window
