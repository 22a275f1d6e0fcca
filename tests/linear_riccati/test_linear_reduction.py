"""The reduction experiment (stagewise.linear_riccati.reduction): Lemma 3.1 for GD (thm-linear-riccati-reduction)
and Lemma 3.2 / C.10 along the flow (thm-linear-riccati-invariant)."""
import numpy as np
import torch

from stagewise.linear_riccati import data, initialization, reduction


def test_orthogonal_init_is_reduced_init_lifted_by_p():
    """Definition thm-linear-riccati-init: W1(0) = sqrt(2 gamma) P with P P^T = I, W2(0) = 0."""
    W1, W2, P = initialization.orthogonal_init([0.5, 2.0], 4, 9, torch.Generator().manual_seed(0), 2)
    assert torch.allclose(P @ P.T, torch.eye(4, dtype=torch.float64), atol=1e-14)
    g = torch.tensor([0.5, 2.0], dtype=torch.float64)
    assert torch.equal(W1, torch.sqrt(2 * g)[:, None, None] * P[None])
    assert W2.shape == (2, 9, 2) and not W2.any()


def test_full_vs_reduced_and_flow_invariant():
    """Full-width GD equals reduced GD to rounding; the flow keeps Z1^T Z1 - Z2 Z2^T = 2 gamma I and Lemma C.10."""
    p = data.make_regression(4, 6, 2, torch.Generator().manual_seed(1))
    run = reduction.full_vs_reduced(p, [1.0, 1e-3], 30, 0.02, 400, torch.Generator().manual_seed(2))
    assert run.full_vs_reduced < 1e-12 and run.off_subspace < 1e-12
    assert run.full["beta"].shape == run.reduced["beta"].shape and run.P.shape == (6, 30)
    flow = reduction.invariant_along_flow(p, 0.05, np.linspace(0.0, 3.0, 7))
    assert flow.invariant_rel < 1e-7 and flow.c10 < 1e-7


def test_reduction_controls():
    """Controls: lifting by another basis of the row space, GD's invariant drift, C.10 without gamma I, a start in
    the row space of P with a Gaussian W2(0) that the dynamics carry out of it."""
    p = data.make_regression(3, 5, 2, torch.Generator().manual_seed(2))
    r = reduction.full_vs_reduced(p, [1.0, 1e-3], 12, 0.01, 2000, torch.Generator().manual_seed(3))
    assert reduction.lift_error(r, 1) > 1e-3 > 1e-10 > reduction.lift_error(r)
    assert reduction.invariant_rel(r.reduced, [1.0, 1e-3]) > 1e-6
    inv = reduction.invariant_along_flow(p, 0.01, np.linspace(0.0, 5.0, 11))
    assert reduction.c10_error(inv, False) > 1e-3 > 1e-7 > reduction.c10_error(inv)
    assert reduction.off_subspace(r.full["W1"], r.P) < 1e-10
    assert reduction.off_subspace_with_w2(p, 1e-3, r.P, 0.01, 200, torch.Generator().manual_seed(4), 0.03) > 1e-4
    # at t = 0 that start is in the row space: the control tests the dynamics, not the initialization
    assert reduction.off_subspace_with_w2(p, 1e-3, r.P, 0.01, 0, torch.Generator().manual_seed(4), 0.03) < 1e-14
