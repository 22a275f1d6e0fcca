"""Gradient flow (stagewise.linear_riccati.gradient_flow): the beta-ODE against the reduced flow (3.4), Lemma C.10
along the flow (thm-linear-riccati-invariant), and the closed-form / ODE choice (thm-linear-riccati-closed)."""
import warnings

import numpy as np
import pytest
import torch

from stagewise.linear_riccati import data, gradient_flow, riccati


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_non_whitened_falls_back_to_ode():
    """Theorem C.12's closed form is used only on whitened data; otherwise the beta-ODE, with a warning."""
    p = data.make_regression(5, 10, 3, gen())
    t = np.linspace(0, 2, 5)
    with pytest.warns(UserWarning, match="not whitened"):
        sv, method = gradient_flow.singular_value_trajectories(p, 0.1, t)
    assert method == "ode" and sv.shape == (5, 3)
    pw, _, _ = data.make_whitened(4, [2.0, 1.0], gen())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sv_w, method_w = gradient_flow.singular_value_trajectories(pw, 0.1, t)
    assert method_w == "closed form"
    assert np.allclose(sv_w, riccati.sigma_beta(np.array([2.0, 1.0]), 0.1, t[:, None]))


def test_beta_ode_matches_z_flow_and_lemma_c10():
    """The closed beta-ODE equals Z1 Z2 of the reduced flow (3.4), and Lemma C.10 holds at all times."""
    p = data.make_regression(3, 5, 2, gen(6))
    t = np.linspace(0, 3, 7)
    b = gradient_flow.beta_flow(p.XtX, p.XtY, 0.05, t)
    Z1, Z2 = gradient_flow.z_flow(p.XtX, p.XtY, 0.05, t)
    assert (b - Z1 @ Z2).abs().max() < 1e-8
    I = torch.eye(5, dtype=torch.float64)
    c10 = Z1 @ Z1.transpose(-2, -1) - 0.05 * I - gradient_flow.psd_sqrt(0.05 ** 2 * I + b @ b.transpose(-2, -1))
    assert c10.abs().max() < 1e-8


def test_flipped_sign_beta_ode_is_another_flow():
    """The control ODE (w2_sign = +1) differs from the beta-ODE once beta is nonzero."""
    import numpy as np
    import torch
    from stagewise.linear_riccati import data, gradient_flow
    p = data.make_regression(3, 5, 2, torch.Generator().manual_seed(9))
    t = np.linspace(0.0, 2.0, 5)
    a = gradient_flow.beta_flow(p.XtX, p.XtY, 0.1, t)
    b = gradient_flow.beta_flow(p.XtX, p.XtY, 0.1, t, w2_sign=1.0)
    assert float((a - b).abs().max()) > 1e-3 and float((a[0] - b[0]).abs().max()) == 0.0
