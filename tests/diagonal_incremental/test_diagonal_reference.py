"""The plain references of the benchmark: one GD run at a time equals the batched GD
(prop-diagonal-incremental-gd)."""
import numpy as np
import torch

from stagewise.diagonal_incremental import descent, networks, reference

f64 = torch.float64


def test_gradient_descent_reference_matches_batched():
    """Batched GD over (alpha, eta) rows gives the same numbers as the loop over single runs."""
    model = networks.LinearDiagonal(torch.eye(3, dtype=f64) + 0.1, torch.tensor([1.0, -0.5, 0.2], dtype=f64))
    rng = np.random.default_rng(2)
    u0, v0 = rng.standard_normal(3), rng.standard_normal(3)
    fast = descent.gradient_descent(model, u0, v0, [0.1, 0.01], [0.05, 0.02], 300, record_every=50)
    slow = reference.gradient_descent_reference(model, u0, v0, [0.1, 0.01], [0.05, 0.02], 300, record_every=50)
    for key in ("tau", "loss", "beta", "c", "c_pred", "u", "v"):
        np.testing.assert_allclose(getattr(fast, key), getattr(slow, key), rtol=1e-12, atol=1e-15)
