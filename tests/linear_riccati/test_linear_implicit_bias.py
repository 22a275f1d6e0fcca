"""Where training ends (stagewise.linear_riccati.implicit_bias): Corollary 3.1 (thm-linear-riccati-cor), the
objective (3.1) of Theorem 3.1 (thm-linear-riccati-main) and its closed-form minimum (thm-linear-riccati-varopt)."""
import math

import numpy as np
import torch

from stagewise.linear_riccati import data, implicit_bias
from stagewise.numerics import spectra


def test_corollary_and_variational_value():
    """Corollary 3.1's spectrum; the objective (3.1) at the closed-form optimum equals V*(gamma)."""
    sig = np.array([3.0, 1.5])
    d, g = 4, 0.3
    cs = implicit_bias.corollary_spectrum(sig, g, d)
    assert np.allclose(cs, np.sqrt([g + math.sqrt(g * g + 9), g + math.sqrt(g * g + 2.25), 2 * g, 2 * g]))
    beta = np.zeros((d, 2)); beta[0, 0], beta[1, 1] = sig
    M = g * np.eye(d) + np.diag(np.sqrt(g ** 2 + np.concatenate([sig, [0, 0]]) ** 2))
    W1 = np.sqrt(M)                                     # diagonal square root
    W2 = np.linalg.solve(W1, beta)
    val = implicit_bias.objective(torch.from_numpy(W1)[None], torch.from_numpy(W2)[None], [g])[0]
    assert abs(val - implicit_bias.variational_value(sig, g, d)) < 1e-12
    assert abs(spectra.stable_rank_np(cs) - (cs ** 2).sum() / cs[0] ** 2) < 1e-15


def test_variational_numeric_matches_closed_form():
    """Proposition thm-linear-riccati-varopt: L-BFGS on the convex reformulation finds V* and beta_* = X^+ Y."""
    p = data.make_regression(3, 5, 2, torch.Generator().manual_seed(1))
    r = implicit_bias.variational_numeric(p.X.numpy(), p.Y.numpy(), 0.5)
    V = implicit_bias.variational_value(torch.linalg.svdvals(p.beta_star).numpy(), 0.5, 5)
    assert abs(r["value"] - V) / V < 1e-7 and r["beta_error"] < 1e-4
