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
