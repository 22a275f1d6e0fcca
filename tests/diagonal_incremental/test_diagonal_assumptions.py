"""Assumptions 4.3-4.5 (asm-diagonal-incremental-43/44/45) checked in practice on diagonal linear networks."""
import numpy as np
import torch

from stagewise.diagonal_incremental import algorithm, assumptions, flow, networks, perturbations, plateaus, relaxation

CORR = [[1, .2, .75], [.2, 1, .75], [.75, .75, 1]]


def model():
    return networks.LinearDiagonal(torch.tensor(CORR, dtype=torch.float64),
                                   torch.tensor([1.0, 0.6, -0.3], dtype=torch.float64))


def test_assumption_study_on_correlated_example():
    """Assumption 4.3 (positive margins), 4.4 (positive restricted Hessian), 4.5 (stage (B) reruns agree),
    and stationarity of every theta^k recomputed outside the solver."""
    m = model()
    stages = algorithm.algorithm1(m)
    study = assumptions.assumption_study(m, stages, seed=3)
    assert study.margin_min > 0 and study.hessian_min > 0
    assert study.spread < 1e-6 and study.stationarity < 1e-8
    assert m.device == torch.device("cpu")


def test_perturbation_decays_on_a_plateau():
    """Assumption 4.4 by perturbation: GD from a perturbed plateau point returns to theta^k (product space)."""
    m = networks.LinearDiagonal(torch.eye(3, dtype=torch.float64), torch.tensor([0.9, -0.5, 0.3], dtype=torch.float64))
    stages = algorithm.algorithm1(m)
    T = np.array([s.T for s in stages[1:]])
    u0, v0 = np.array([1.0, 0.7, -1.2]), np.array([0.3, -0.2, 0.5])
    tau = np.linspace(0, 1.1 * T[-1] + 0.3, 600)
    out = flow.log_scale_flow(m, [1e-32], u0, v0, tau, rtol=1e-9)
    mids = plateaus.plateau_midpoints(T, tau[-1])[1:]                 # one per plateau after stage 1
    study = perturbations.perturbation_study(m, tau, out["b"][:, 0], 1e-32, T, mids, u0, v0,
                                             np.random.default_rng(0), std=0.05, eta=0.05, n_steps=600)
    assert study.dist.shape == (3, 61) and study.ratio < 0.1


def test_perturbation_at_a_new_coordinate_ends_on_the_same_plateau():
    """Assumption 4.5 by perturbation (the paper's Fig. 11): noise on the non-negligible weights when a coordinate
    crosses 1e-5 does not change where stage (B) ends; noise on the negligible ones too (the control) does."""
    m = networks.LinearDiagonal(torch.eye(3, dtype=torch.float64), torch.tensor([0.9, -0.5, 0.3], dtype=torch.float64))
    stages = algorithm.algorithm1(m)
    T = np.array([s.T for s in stages[1:]])
    u0, v0 = np.array([1.0, 0.7, -1.2]), np.array([0.3, -0.2, 0.5])
    tau = np.linspace(0, 1.1 * T[-1] + 0.3, 600)
    b = flow.log_scale_flow(m, [1e-32], u0, v0, tau, rtol=1e-9)["b"][:, 0]
    ends = plateaus.plateau_midpoints(T, tau[-1])
    ends[-1] = tau[-1]                                                # the last window runs to the end
    rates = relaxation.relaxation_rates(m, stages)
    args = (m, tau, b, 1e-32, stages, ends, rates, u0, v0)
    study = perturbations.new_coordinate_study(*args, np.random.default_rng(0), eta=0.05)
    assert study.dist.shape[0] == 3 and study.resolved.all() and study.ratio < 0.1
    noisy = perturbations.new_coordinate_ratio(*args, np.random.default_rng(0), eta=0.05, everywhere=True)
    assert noisy > 0.1
