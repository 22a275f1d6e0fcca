"""Tests of ``stagewise.escape_speed.network``: the localized loss, its homogeneity, padding, bad problems."""
import pytest
import torch

from stagewise import ParameterError
from stagewise.escape_speed import ascent, network, problems

torch.set_num_threads(1)   # tiny tensors: threads only add overhead (the chapter runs with one thread too)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_homogeneity_and_euler():
    """Lemma "Homogeneity": L0(lambda theta) = lambda^L L0(theta) and Euler's identity theta . grad(-L0) = L s."""
    g = gen()
    X, G = torch.randn(3, 12, generator=g, dtype=torch.float64), torch.randn(2, 12, generator=g, dtype=torch.float64)
    for L in (2, 4):
        W = network.init_sphere(3, [5] * (L - 1), 2, 6, g)
        l0 = network.localized_loss(W, X, G)
        assert torch.allclose(network.localized_loss([2.5 * w for w in W], X, G), 2.5 ** L * l0, rtol=1e-12)
        s, grad = network.speed_and_grad(W, X, G)
        euler = sum((w * gi).sum(dim=(1, 2)) for w, gi in zip(W, grad))   # theta . grad(-L0)
        assert torch.allclose(euler, L * s, rtol=1e-12)


def test_padding_keeps_zero_neurons_zero():
    """Definition 2.1 solver on padded batches: zero neurons stay zero and speeds are unchanged."""
    X, G = problems.example1_data()
    W = network.init_sphere(2, [2, 2], 1, 3, gen(4))
    P = network.pad_hidden(W, 6)
    a = ascent.projected_ascent(W, X, G, 50, 0.1, 1e-3)
    b = ascent.projected_ascent(P, X, G, 50, 0.1, 1e-3)
    assert torch.allclose(a.speeds, b.speeds, atol=1e-12)
    assert float(b.Ws[0][:, 2:].abs().max()) == 0.0


def test_bad_problems():
    """Definition 2.1 needs depth >= 2, widths >= 1 and G != 0 (no escape direction otherwise)."""
    X, G = problems.example1_data()
    with pytest.raises(ParameterError, match="depth"):
        network.check_problem(X, G, [])
    with pytest.raises(ParameterError, match="widths"):
        network.check_problem(X, G, [3, 0])
    with pytest.raises(network.NoEscapeError, match="no escape"):
        network.check_problem(X, torch.zeros_like(G), [3])


def test_init_sphere_scale_and_direction():
    """Definition 2.1: layers of norm ``scale`` (balanced small init); ``direction`` lies on ``|rho|^2 = L``."""
    W = network.init_sphere(3, [4, 5], 2, 7, gen(30), scale=0.01)
    for w in W:
        assert torch.allclose(w.flatten(1).norm(dim=1), torch.full((7,), 0.01, dtype=torch.float64), rtol=1e-12)
    assert torch.allclose(network.sq_norm(network.direction(W)), torch.full((7,), 3.0, dtype=torch.float64), rtol=1e-12)
    a = network.init_sphere(3, [4], 2, 2, gen(31))
    b = network.init_sphere(3, [4], 2, 2, gen(31), scale=1.0)
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_homogeneity_error_is_rounding():
    """Lemma "Homogeneity": the chapter's experiment gives a rounding-level error."""
    X, G = problems.random_problem(4, 30, 3, gen(32))
    assert network.homogeneity_error(X, G, (2, 3), 5, 4, 1.7, gen(33)) < 1e-12
