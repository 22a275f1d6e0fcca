"""Gradient descent on (u, v): the exact identity of prop-diagonal-incremental-gd and divergence handling."""
import numpy as np
import pytest
import torch

from stagewise.core.parameters import ParameterError
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
    err = np.abs(out["c"] - out["c_pred"])
    assert np.all(err <= 8 * 2000 * np.finfo(float).eps * out["scale"])
    drift = np.abs(out["c"] / out["c0"] - 1).max(axis=1)
    assert drift[0] > 1e-4 and drift[1] < drift[0]      # conservation is violated at O(eta) by GD


def test_gd_divergence_names_parameter():
    """A diverging step size stops with a one-line error naming the parameter eta."""
    model = linear(np.eye(2), [5.0, 3.0])
    with pytest.raises(ParameterError, match="parameter eta"):
        descent.gradient_descent(model, np.array([1.0, 2.0]), np.array([0.5, 0.1]), [0.5], [5.0], 200)
