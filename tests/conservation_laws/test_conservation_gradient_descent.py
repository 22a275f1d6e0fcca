"""Batched gradient descent over one time horizon; its drift is linear in the step size
(Proposition ``prf:thm-conservation-laws-one-step``)."""
import numpy as np
import pytest
import torch

from conservation_problem import small_problem
from stagewise.conservation_laws.gradient_descent import batch_over_step_sizes, gd_drift_study
from stagewise.conservation_laws.problem import gradients, loss
from stagewise.conservation_laws.trajectory import max_drift
from stagewise.numerics.fits import loglog_slope
from stagewise.numerics.flows import DivergenceError, gradient_descent_batched
from stagewise.numerics.params import flatten_batched


def test_batch_over_step_sizes_is_step_size_major():
    """Row e * S + s of the batch is seed s with step size etas[e]."""
    _, _, params = small_problem("relu", seeds=2)
    batched, eta = batch_over_step_sizes(params, [0.1, 0.05, 0.01])
    assert eta.tolist() == [0.1, 0.1, 0.05, 0.05, 0.01, 0.01]
    for e in range(3):
        for s in range(2):
            assert all(torch.equal(b[e * 2 + s], p[s]) for b, p in zip(batched, params))


def test_batched_gd_equals_independent_runs_and_covers_the_horizon():
    """Each (step size, problem) pair of the batch takes round(T / eta) plain GD steps."""
    family, data, params = small_problem("relu", seeds=1)
    batched, etas = batch_over_step_sizes(params, [0.1, 0.05])
    times, records = gradient_descent_batched(batched, lambda p: loss(family, p, data), etas, 1.0,
                                              flatten_batched, n_records=2)
    assert np.allclose(times, [0, 0.5, 1.0])
    for b, eta in enumerate([0.1, 0.05]):
        p = [x.clone() for x in params]
        for _ in range(round(1.0 / eta)):
            p = [x - eta * g for x, g in zip(p, gradients(family, p, data))]
        assert torch.allclose(records[-1, b], flatten_batched(p)[0], atol=1e-13)


def test_gd_divergence_is_reported_with_the_step_size():
    """Divergence stops with the shared DivergenceError naming the step-size parameter."""
    family, data, params = small_problem("linear", seeds=1, scale=3.0)
    with pytest.raises(DivergenceError, match="parameter etas"):
        gd_drift_study(family, data, params, [5.0, 4.0, 3.0], 500.0)


def test_drift_slope_is_one_for_relu_and_zero_for_tanh():
    """Proposition One gradient-descent step: drift ~ eta^1 (ReLU); tanh's drift does not vanish as eta -> 0."""
    etas = [0.04, 0.02, 0.01]
    for name, expected in (("relu", 1.0), ("tanh", 0.0)):
        family, data, params = small_problem(name, seeds=1)
        traj = gd_drift_study(family, data, params, etas, 4.0, n_records=20)
        drift = max_drift(traj.invariants.flatten(1, 2)).numpy()
        assert abs(loglog_slope(etas, drift) - expected) < 0.1


def test_layer_norms_are_recorded_per_parameter_tensor():
    """Corollary ``prf:thm-conservation-laws-deep``: the records hold ||W_l||_F^2 of every layer."""
    family, data, params = small_problem("deep_relu", seeds=2, depth=3)
    traj = gd_drift_study(family, data, params, [0.02, 0.01], 0.2, n_records=4)
    assert traj.layer_norms.shape == (5, 2, 2, 3)
    expected = torch.stack([(W**2).flatten(1).sum(-1) for W in params], dim=-1)
    assert torch.allclose(traj.layer_norms[0, 1], expected)
