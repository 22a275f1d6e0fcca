"""The exact one-step law (Proposition ``prf:thm-conservation-laws-one-step``)."""
import pytest
import torch

from conservation_problem import small_problem
from stagewise.conservation_laws.one_step_law import diagonal_product_law, one_step_change


@pytest.mark.parametrize("name", ["diagonal", "linear", "relu", "deep_relu"])
@pytest.mark.parametrize("eta", [0.3, 0.01])
def test_one_gd_step_changes_invariant_by_eta_squared_q_of_gradient(name, eta):
    """Proposition One gradient-descent step: Q(theta+) - Q(theta) = eta^2 Q(g) exactly."""
    family, data, params = small_problem(name)
    actual, predicted = one_step_change(family, params, data, eta)
    assert predicted.abs().max() > 1e-10      # a change far above rounding: the comparison tests something
    assert torch.allclose(actual, predicted, atol=1e-14, rtol=0)


def test_tanh_violates_the_one_step_law():
    """Proposition One gradient-descent step needs homogeneity: for tanh the first-order term survives."""
    family, data, params = small_problem("tanh")
    actual, predicted = one_step_change(family, params, data, 0.01)
    assert (actual - predicted).abs().max() > 1e-5


def test_relu_one_step_law_matches_the_papers_form():
    """Town et al.'s form: change of a_j^2 - |w_j|^2 is eta^2 (<w_j, D_j>^2 - a_j^2 |D_j|^2)."""
    family, data, params = small_problem("relu", seeds=1)
    W, a = params
    residual = (family.forward(params, data.X) - data.Y)[0, :, 0] / data.X.shape[0]
    active = (data.X @ W[0].T > 0).double()                       # (n, m)
    D = (active * residual[:, None]).T @ data.X                    # (m, d): sum_i r_i 1[..] x_i
    expected = 0.05**2 * ((W[0] * D).sum(-1) ** 2 - a[0] ** 2 * (D**2).sum(-1))
    _, predicted = one_step_change(family, params, data, 0.05)
    assert torch.allclose(predicted[0], expected, atol=1e-15)


def test_diagonal_product_law_over_many_steps():
    """Corollary Diagonal networks, GD form: u^2 - v^2 is multiplied by 1 - eta^2 g^2 at each step."""
    family, data, params = small_problem("diagonal")
    measured, predicted, magnitude = diagonal_product_law(params[0], params[1], data, 0.05, 50)
    assert torch.allclose(measured, predicted, rtol=1e-12, atol=0)
    assert (magnitude >= measured.abs()).all() and (magnitude >= (params[0]**2 + params[1]**2)).all()
