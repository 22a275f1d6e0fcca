"""Batched gradient descent over one time horizon; its drift is linear in the step size
(Proposition ``prf:thm-conservation-laws-one-step``)."""
import numpy as np
import pytest
import torch

from conservation_problem import small_problem
from stagewise.conservation_laws.gradient_descent import gd_drift_study
from stagewise.conservation_laws.problem import gradients, loss
from stagewise.conservation_laws.trajectory import loglog_slope, max_drift
from stagewise.numerics.flows import DivergenceError, gradient_descent_batched


def test_batched_gd_equals_independent_runs_and_covers_the_horizon():
    """Each (step size, problem) pair of the batch takes round(T / eta) plain GD steps."""
    family, data, params = small_problem("relu", seeds=1)
    etas = torch.tensor([0.1, 0.05], dtype=torch.float64)
    batched = [p.repeat(2, *([1] * (p.dim() - 1))) for p in params]
    times, records = gradient_descent_batched(batched, lambda p: loss(family, p, data), etas, 1.0,
                                              lambda p: torch.cat([x.flatten(1) for x in p], 1), n_records=2)
    assert np.allclose(times, [0, 0.5, 1.0])
    for b, eta in enumerate([0.1, 0.05]):
        p = [x.clone() for x in params]
        for _ in range(round(1.0 / eta)):
            p = [x - eta * g for x, g in zip(p, gradients(family, p, data))]
        assert torch.allclose(records[-1, b], torch.cat([x.flatten(1) for x in p], 1)[0], atol=1e-13)


def test_gd_divergence_is_reported_with_the_step_size():
    """Divergence stops with a DivergenceError naming the step-size parameter."""
    family, data, params = small_problem("linear", seeds=1, scale=3.0)
    with pytest.raises(DivergenceError, match="parameter etas"):
        gradient_descent_batched(params, lambda p: loss(family, p, data),
                                 torch.tensor([5.0], dtype=torch.float64), 500.0, family.invariant)


def test_drift_slope_is_one_for_relu_and_zero_for_tanh():
    """Proposition One gradient-descent step: drift ~ eta^1 (ReLU); tanh's drift does not vanish as eta -> 0."""
    etas = [0.04, 0.02, 0.01]
    for name, expected in (("relu", 1.0), ("tanh", 0.0)):
        family, data, params = small_problem(name, seeds=1)
        traj = gd_drift_study(family, data, params, etas, 4.0, n_records=20)
        drift = max_drift(traj.invariants.flatten(1, 2)).numpy()
        assert abs(loglog_slope(etas, drift) - expected) < 0.1
