"""The mathematics of Chapter 1: invariants, the exact one-step law, batched GD, the ODE path."""
import numpy as np
import pytest
import torch

from stagewise.conservation_laws import experiment as cl
from stagewise.core.parameters import ParameterError
from stagewise.numerics.flows import DivergenceError, gradient_descent_batched


def _problem(name, seeds=2, n=6, d=6, width=5, depth=3, scale=0.7, seed=0):
    g = torch.Generator().manual_seed(seed)
    family = cl.FAMILIES[name]
    k = 2 if name == "linear" else 1
    data = cl.make_orthogonal_data(n, d, k, g)
    return family, data, cl.init_params(family, seeds, d, k, width, depth, scale, g)


@pytest.mark.parametrize("name", ["diagonal", "linear", "relu", "deep_relu"])
def test_euler_identity_makes_first_order_term_vanish(name):
    family, data, params = _problem(name)
    grads = cl.gradients(family, params, data)
    # Q(theta + s g) is a quadratic in s; its linear coefficient is 2 B(theta, g).
    q = [family.invariant([p + s * g for p, g in zip(params, grads)]) for s in (-1.0, 0.0, 1.0)]
    linear_coefficient = (q[2] - q[0]) / 2
    assert linear_coefficient.abs().max() < 1e-12


@pytest.mark.parametrize("name", ["diagonal", "linear", "relu", "deep_relu"])
@pytest.mark.parametrize("eta", [0.3, 0.01])
def test_one_gd_step_changes_invariant_by_eta_squared_q_of_gradient(name, eta):
    family, data, params = _problem(name)
    actual, predicted = cl.one_step_change(family, params, data, eta)
    assert predicted.abs().max() > 0
    assert torch.allclose(actual, predicted, atol=1e-14, rtol=0)


def test_tanh_violates_the_one_step_law():
    family, data, params = _problem("tanh")
    actual, predicted = cl.one_step_change(family, params, data, 0.01)
    assert (actual - predicted).abs().max() > 1e-5


def test_relu_one_step_law_matches_the_papers_form():
    """Town et al.'s form: change of a_j^2 - |w_j|^2 is eta^2 (<w_j, D_j>^2 - a_j^2 |D_j|^2)."""
    family, data, params = _problem("relu", seeds=1)
    W, a = params
    residual = (family.forward(params, data.X) - data.Y)[0, :, 0] / data.X.shape[0]
    active = (data.X @ W[0].T > 0).double()                       # (n, m)
    D = (active * residual[:, None]).T @ data.X                    # (m, d): sum_i r_i 1[..] x_i
    expected = 0.05**2 * ((W[0] * D).sum(-1) ** 2 - a[0] ** 2 * (D**2).sum(-1))
    _, predicted = cl.one_step_change(family, params, data, 0.05)
    assert torch.allclose(predicted[0], expected, atol=1e-15)


def test_diagonal_product_law_over_many_steps():
    family, data, params = _problem("diagonal")
    measured, predicted = cl.diagonal_product_law(params[0], params[1], data, 0.05, 50)
    assert torch.allclose(measured, predicted, rtol=1e-12, atol=0)


def test_batched_gd_equals_independent_runs_and_covers_the_horizon():
    family, data, params = _problem("relu", seeds=1)
    etas = torch.tensor([0.1, 0.05], dtype=torch.float64)
    batched = [p.repeat(2, *([1] * (p.dim() - 1))) for p in params]
    times, records = gradient_descent_batched(batched, lambda p: cl.loss(family, p, data), etas, 1.0,
                                              lambda p: torch.cat([x.flatten(1) for x in p], 1), n_records=2)
    assert np.allclose(times, [0, 0.5, 1.0])
    for b, eta in enumerate([0.1, 0.05]):
        p = [x.clone() for x in params]
        for _ in range(round(1.0 / eta)):
            p = [x - eta * g for x, g in zip(p, cl.gradients(family, p, data))]
        assert torch.allclose(records[-1, b], torch.cat([x.flatten(1) for x in p], 1)[0], atol=1e-13)


def test_gd_divergence_is_reported_with_the_step_size():
    family, data, params = _problem("linear", seeds=1, scale=3.0)
    with pytest.raises(DivergenceError, match="parameter etas"):
        gradient_descent_batched(params, lambda p: cl.loss(family, p, data),
                                 torch.tensor([5.0], dtype=torch.float64), 500.0, family.invariant)


def test_gradient_flow_preserves_invariants_to_solver_tolerance():
    family, data, params = _problem("relu", seeds=1)
    for rtol in (1e-6, 1e-10):
        flow = cl.gradient_flow_study(family, data, params, 2.0, rtol, n_records=4)
        assert cl.max_drift(flow.invariants[:, 0]).max() < 100 * rtol


def test_drift_slope_is_one_for_relu_and_zero_for_tanh():
    etas = [0.04, 0.02, 0.01]
    for name, expected in (("relu", 1.0), ("tanh", 0.0)):
        family, data, params = _problem(name, seeds=1)
        traj = cl.gd_drift_study(family, data, params, etas, 4.0, n_records=20)
        drift = cl.max_drift(traj.invariants.flatten(1, 2)).numpy()
        assert abs(cl.loglog_slope(etas, drift) - expected) < 0.1


def test_chapter_parameter_validator():
    good = dict(n_samples=4, input_dim=4, etas=[0.1, 0.05, 0.02], horizon=10.0)
    cl.check_parameters(good)
    for bad, fragment in ((dict(n_samples=5), "n_samples"), (dict(etas=[0.1, 0.1, 0.05]), "etas"),
                          (dict(etas=[1e-7, 0.1, 0.2], horizon=100.0), "horizon")):
        with pytest.raises(ParameterError, match=fragment):
            cl.check_parameters({**good, **bad})
