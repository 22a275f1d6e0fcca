"""The benchmark's plain reference loop (stagewise.linear_riccati.reference) computes the same reduced GD
(Lemma 3.1, thm-linear-riccati-reduction) as the batched code."""
import numpy as np
import torch

from stagewise.linear_riccati import data, gradient_descent, initialization, reference


def test_gd_reference_equals_batched_gd():
    """Per-gamma NumPy loop = batched compiled GD, final beta, to rounding."""
    p = data.make_regression(5, 10, 3, torch.Generator().manual_seed(0))
    gammas = [1.0, 1e-2]
    res = gradient_descent.gd(p.XtX, p.XtY, *initialization.reduced_init(gammas, 10, 3), 0.01, 300,
                              record_every=100)
    ref = np.stack([reference.gd_reference(p.XtX.numpy(), p.XtY.numpy(), g, 0.01, 300) for g in gammas])
    assert np.abs(ref - res["beta"][-1]).max() < 1e-12
