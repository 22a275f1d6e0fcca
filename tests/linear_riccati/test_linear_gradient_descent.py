"""Batched gradient descent (stagewise.linear_riccati.gradient_descent): Lemma 3.1 for GD
(thm-linear-riccati-reduction), the one-step invariant law, exact per-mode GD on whitened data, divergence."""
import numpy as np
import pytest
import torch

from stagewise.linear_riccati import data, gradient_descent, initialization, whitened_gd
from stagewise.numerics.flows import DivergenceError


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_divergence_names_eta():
    """Divergence stops with a DivergenceError naming the step-size parameter (both loops)."""
    p = data.make_regression(5, 10, 3, gen())
    for compiled in (False, True):
        Z1, Z2 = initialization.reduced_init([1.0], 10, 3)
        with pytest.raises(DivergenceError, match="eta=5.0"):
            gradient_descent.gd(p.XtX, p.XtY, Z1, Z2, 5.0, 2000, record_every=10, compiled=compiled)
        with pytest.raises(DivergenceError, match="parameter eta_white=5.0"):
            gradient_descent.gd(p.XtX, p.XtY, Z1, Z2, 5.0, 2000, record_every=10, compiled=compiled,
                                param="eta_white")


def test_reduction_exact_for_gd_and_invariant_step_law():
    """Lemma 3.1 extended to GD (thm-linear-riccati-reduction), and the derived one-step law of the invariant
    Delta_{m+1} - Delta_m = eta^2 (W2 E^T E W2^T - W1^T E E^T W1)."""
    p = data.make_regression(4, 6, 2, gen(2))
    W1, W2, P = initialization.orthogonal_init([0.5, 1e-3], 6, 40, gen(3), 2)
    full = gradient_descent.gd(p.XtX, p.XtY, W1, W2, 0.02, 300, record_every=50, compiled=False)
    Z1, Z2 = initialization.reduced_init([0.5, 1e-3], 6, 2)
    red = gradient_descent.gd(p.XtX, p.XtY, Z1, Z2, 0.02, 300, record_every=50, compiled=False)
    assert (full["W1"] - red["W1"] @ P).abs().max() < 1e-12
    assert np.abs(full["sv_beta"] - red["sv_beta"]).max() < 1e-12
    # one step: Delta_{m+1} - Delta_m = eta^2 (W2 E^T E W2^T - W1^T E E^T W1)
    A, C = red["W1"], red["W2"]
    E = p.XtY - p.XtX @ A @ C
    eta = 0.02
    A2, C2 = A + eta * E @ C.transpose(-2, -1), C + eta * A.transpose(-2, -1) @ E
    inv = lambda a, c: a.transpose(-2, -1) @ a - c @ c.transpose(-2, -1)
    pred = eta ** 2 * (C @ E.transpose(-2, -1) @ E @ C.transpose(-2, -1)
                       - A.transpose(-2, -1) @ E @ E.transpose(-2, -1) @ A)
    assert (inv(A2, C2) - inv(A, C) - pred).abs().max() < 1e-14


def test_compiled_equals_torch_loop():
    """The compiled (numba) and torch loops of GD (2.3)-(2.4) give the same records."""
    p = data.make_regression(5, 10, 3, gen(4))
    Z1, Z2 = initialization.reduced_init([1.0, 1e-2], 10, 3)
    a = gradient_descent.gd(p.XtX, p.XtY, Z1, Z2, 0.01, 500, record_every=100, compiled=False)
    b = gradient_descent.gd(p.XtX, p.XtY, Z1, Z2, 0.01, 500, record_every=100, compiled=True)
    assert np.allclose(a["t"], b["t"]) and np.abs(a["beta"] - b["beta"]).max() < 1e-12
    assert np.abs(a["sv_W1"] - b["sv_W1"]).max() < 1e-12


def test_whitened_gd_equals_mode_recursion():
    """On whitened data GD is the per-mode recursion, with invariant 2 gamma prod(1 - eta^2 r^2) (derived,
    section of thm-linear-riccati-closed)."""
    s = [2.0, 1.0]
    pw, U, V = data.make_whitened(4, s, gen(5))
    Z1, Z2 = initialization.reduced_init([1e-2], 4, 2)
    res = gradient_descent.gd(pw.XtX, pw.XtY, Z1, Z2, 0.01, 800, record_every=100, basis=(U[:, :2].contiguous(), V),
                              compiled=False)
    rec = whitened_gd.whitened_mode_recursion(np.array(s), 1e-2, 0.01, 800)
    assert np.abs(res["modes"][:, 0] - rec["sigma_beta"]).max() < 1e-12
    inv_modes = torch.diagonal(U[:, :2].T @ res["inv"][0] @ U[:, :2]).numpy()
    assert np.allclose(inv_modes, rec["invariant_law"], rtol=1e-9)
