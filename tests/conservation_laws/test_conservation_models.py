"""The invariants of the four homogeneous families (Theorem ``prf:thm-conservation-laws-balancedness``
and its corollaries ``prf:thm-conservation-laws-diagonal``, ``-linear``, ``-relu``, ``-deep``)."""
import pytest

from conservation_problem import small_problem
from stagewise.conservation_laws.problem import gradients


@pytest.mark.parametrize("name", ["diagonal", "linear", "relu", "deep_relu"])
def test_euler_identity_makes_first_order_term_vanish(name):
    """Theorem Balancedness (proof): the Euler identity makes B(theta, grad L) = 0 for every family."""
    family, data, params = small_problem(name)
    grads = gradients(family, params, data)
    # Q(theta + s g) is a quadratic in s; its linear coefficient is 2 B(theta, g).
    q = [family.invariant([p + s * g for p, g in zip(params, grads)]) for s in (-1.0, 0.0, 1.0)]
    linear_coefficient = (q[2] - q[0]) / 2
    assert linear_coefficient.abs().max() < 1e-12


def test_diagonal_step_product_identity_holds_for_any_g():
    """The diagonal step law is an algebraic identity in g: (u - eta g v)^2 - (v - eta g u)^2 = (u^2 - v^2)(1 - eta^2 g^2)."""
    import torch
    g = torch.Generator().manual_seed(0)
    u, v, grad = (torch.randn(50, generator=g, dtype=torch.float64) for _ in range(3))
    eta = 0.3
    lhs = (u - eta * grad * v) ** 2 - (v - eta * grad * u) ** 2
    assert torch.allclose(lhs, (u**2 - v**2) * (1 - eta**2 * grad**2), atol=1e-14, rtol=0)


def test_full_balancedness_where_every_neuron_is_active():
    """Corollary ``prf:thm-conservation-laws-deep``, full balancedness: with positive weights and
    inputs every ReLU is active, the layers act linearly, and the full matrix
    W_l W_l^T - W_{l+1}^T W_{l+1} obeys the one-step law (first-order term zero); with mixed
    signs only its diagonal (weak balancedness) does."""
    import torch
    from stagewise.conservation_laws.models import FAMILIES
    from stagewise.conservation_laws.problem import Data
    family = FAMILIES["deep_relu"]
    g = torch.Generator().manual_seed(1)
    X = torch.rand(6, 5, generator=g, dtype=torch.float64)
    data = Data(X, torch.randn(6, 1, generator=g, dtype=torch.float64))

    def full(p):
        return torch.cat([(W_in @ W_in.transpose(-1, -2) - W_out.transpose(-1, -2) @ W_out).flatten(1)
                          for W_in, W_out in zip(p[:-1], p[1:])], dim=-1)

    def first_order(p):
        grads = gradients(family, p, data)
        q = [full([w + s * d for w, d in zip(p, grads)]) for s in (-1e-3, 1e-3)]
        return ((q[1] - q[0]) / 2e-3).abs().max()

    positive = [torch.rand(1, *shape, generator=g, dtype=torch.float64) for shape in [(4, 5), (4, 4), (1, 4)]]
    mixed = [torch.randn(1, *shape, generator=g, dtype=torch.float64) for shape in [(4, 5), (4, 4), (1, 4)]]
    assert first_order(positive) < 1e-10
    assert first_order(mixed) > 1e-3
    weak = family.invariant
    grads = gradients(family, mixed, data)
    q = [weak([w + s * d for w, d in zip(mixed, grads)]) for s in (-1e-3, 1e-3)]
    assert ((q[1] - q[0]) / 2e-3).abs().max() < 1e-10
