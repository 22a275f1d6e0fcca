"""Exact log-scale gradient flow (Lemma 4.2, lem-diagonal-incremental-conservation; eqs. 6-7, 14) and the
transition times of Theorem 4.1 (thm-diagonal-incremental-main) it reproduces."""
import math

import numpy as np
import pytest
import torch

from stagewise.diagonal_incremental import closed_forms, flow, networks, plateaus
from stagewise.numerics.fits import inverse_log_fit

f64 = torch.float64


def test_normalize_init_and_weights_from_b():
    """App. C.3 normalisation preserves u * v and gives u > |v|; eq. (7) recovers alpha^2 u0 v0 from b(0)."""
    rng = np.random.default_rng(1)
    u0, v0 = rng.standard_normal(6), rng.standard_normal(6)
    un, vn = flow.normalize_init(u0, v0)
    np.testing.assert_allclose(un * vn, u0 * v0)
    assert np.all(un > np.abs(vn))
    L = math.log(1e20)
    b0 = 1 + np.log(un + vn) / -L
    u, v = flow.weights_from_b(b0, L, u0, v0)
    np.testing.assert_allclose(u * v, 1e-40 * u0 * v0, rtol=1e-10)
    with pytest.raises(ValueError):
        flow.normalize_init(np.array([1.0]), np.array([-1.0]))


def test_log_scale_flow_orthogonal_transition_times():
    """Theorem 4.1 for Sigma = I: transition times within C / log(1/alpha) of T_k, extrapolated to 2e-3;
    batched and one-ODE-per-alpha integration agree."""
    bs = [0.9, -0.5, 0.3]
    model = networks.LinearDiagonal(torch.eye(3, dtype=f64), torch.tensor(bs, dtype=f64))
    T, _, losses = closed_forms.closed_form_orthogonal(np.array(bs))
    tau = np.linspace(0, 4.0, 801)
    alphas = [1e-16, 1e-64, 1e-256]
    out = flow.log_scale_flow(model, alphas, np.array([1.0, 0.7, -1.2]), np.array([0.3, -0.2, 0.5]), tau,
                              rtol=1e-10, batched=True)
    for j, a in enumerate(alphas):
        tt = plateaus.transition_times(tau, out["loss"][:, j], losses,
                                       lambda t: float(model.loss(out["dense"](t)[j:j + 1])[0]))
        # error ~ C / log(1/alpha) with C = O(1): check at that scale
        assert np.max(np.abs(np.array(tt) - T)) < 5.0 / -math.log(a)
    one_by_one = flow.log_scale_flow(model, alphas, np.array([1.0, 0.7, -1.2]), np.array([0.3, -0.2, 0.5]), tau,
                                     rtol=1e-10, batched=False)
    np.testing.assert_allclose(one_by_one["loss"], out["loss"], atol=1e-6)
    x = np.array([plateaus.transition_times(tau, out["loss"][:, j], losses,
                                            lambda t: float(model.loss(out["dense"](t)[j:j + 1])[0]))
                  for j in range(3)])
    for k in range(3):
        assert inverse_log_fit(-np.log(alphas), x[:, k], 2)[0] == pytest.approx(T[k], rel=2e-3)
