"""The diagonal attention head of Example 3.2 (ex-diagonal-incremental-transformer)."""
import numpy as np
import torch

from stagewise.diagonal_incremental import attention, reference
from stagewise.numerics.roundoff import roundoff

f64 = torch.float64


def test_attention_gradient_matches_autograd_and_first_stage_is_vo():
    """Eq. (4) for Example 3.2: analytic g (numba and torch paths) = autograd; g_KQ(0) = 0; teacher loss 0."""
    model, beta_star = attention.make_teacher_problem(20, 4, 5, 1, 2, seed=3)
    beta = torch.randn(3, 10, dtype=f64, generator=torch.Generator().manual_seed(0)) * 0.5
    np.testing.assert_allclose(model.g(beta).numpy(), reference.g_reference(model, beta).numpy(), atol=1e-12)
    np.testing.assert_allclose(model.g_torch(beta).numpy(), reference.g_reference(model, beta).numpy(), atol=1e-12)
    g0 = model.g(torch.zeros(1, 10, dtype=f64))[0]
    # key-query gradient vanishes at beta = 0 (uniform attention, c = 0): zero within rounding of |g(0)|
    assert float(g0[:5].abs().max()) <= roundoff(float(g0.abs().max()), 10)
    assert model.loss(beta_star[None])[0] < 1e-28
