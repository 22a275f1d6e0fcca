"""Every zero test of the escape-speed chapter is scaled to its problem (issue 21, item 1).

Degenerate inputs (a zero gradient G, a dead layer, a zero neuron, an output orthogonal to G, a zero speed, a
vanishing denominator, a dead network) and the same inputs perturbed at rounding level (1e-15 relative, as another
BLAS kernel would compute them) must get the same answer; a genuinely small but nonzero input must not be taken for
zero.
"""
import math

import numpy as np
import pytest
import torch

from stagewise.escape_speed import (deepening, explosion, gradient_descent, layer_measures, network, problems,
                                    proposition_33, proposition_34, width_trend)

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def noise(shape, size=1e-17, seed=1):
    return size * torch.randn(shape, generator=gen(seed), dtype=torch.float64)


def test_zero_gradient_G_is_relative():
    X, G = problems.random_problem(3, 10, 2, gen(0))
    for g in (torch.zeros_like(G), noise(G.shape)):                   # exactly zero, and zero up to rounding
        with pytest.raises(network.NoEscapeError):
            network.check_problem(X, g, [4])
    network.check_problem(X, 1e-6 * G, [4])                           # small, but an escape exists


def test_dead_layer_gives_the_same_diagnostics():
    X, G = problems.random_problem(3, 12, 1, gen(2))
    Ws = network.init_sphere(3, [4, 4], 1, 1, gen(3))
    dead = [Ws[0], torch.zeros_like(Ws[1]), Ws[2]]
    almost = [Ws[0], noise(Ws[1].shape), Ws[2]]
    d0, d1 = layer_measures.layer_diagnostics(dead, X), layer_measures.layer_diagnostics(almost, X)
    assert d0["ratio_W"] == d1["ratio_W"] and d0["nu"][1:] == d1["nu"][1:] == [0.0]
    dead_z, noise_z = torch.zeros(4, 12), noise((4, 12))
    assert layer_measures.relu_deviation(dead_z, 1.0, 4) == layer_measures.relu_deviation(noise_z, 1.0, 4) == 0.0
    assert abs(layer_measures.relu_deviation(-1e-6 * torch.ones(4, 12), 1.0, 4) - 1.0) < 1e-12   # small but live


def test_prop34_with_an_output_orthogonal_to_G():
    X, G = problems.random_problem(3, 12, 1, gen(4))
    Ws = network.init_sphere(3, [4], 1, 1, gen(5))
    out = network.forward(Ws, X)[0][-1][0]
    G_perp = G - (G * out).sum() / (out * out).sum() * out            # Tr[G^T Z_L] = 0 up to rounding
    dead = [Ws[0], torch.zeros_like(Ws[1])]                           # Tr[G^T Z_L] = 0 exactly
    for W, g in ((dead, G), (Ws, G_perp)):
        lhs, rhs = proposition_34.prop34_sides(W, X, g)
        assert math.isinf(float(rhs[0])) and math.isfinite(float(lhs[0]))
    lhs, rhs = proposition_34.prop34_sides(Ws, X, G)
    assert math.isfinite(float(rhs[0])) and float(lhs[0] - rhs[0]) <= 1e-9


def test_prop33_bound_at_a_vanishing_denominator():
    g, eps = 1.0, 0.3
    for s in (g * eps, g * eps * (1 + 1e-15), g * eps * (1 - 1e-15)):
        assert math.isinf(proposition_33.prop33_bound(g, eps, s))
    assert math.isfinite(proposition_33.prop33_bound(g, eps, g * eps * (1 + 1e-6)))


def test_deepening_ignores_zero_neurons_however_computed():
    X, G = problems.random_problem(3, 12, 2, gen(6))
    Ws = network.pad_hidden(network.init_sphere(3, [2, 2], 2, 1, gen(7)), 4)   # two zero neurons per hidden layer
    perturbed = [W + noise(W.shape, seed=8) * (W == 0) for W in Ws]
    a, b = deepening.deepen(Ws, X, G, k=1), deepening.deepen(perturbed, X, G, k=1)
    assert abs(float(network.speed(a, X, G)[0]) - float(network.speed(b, X, G)[0])) < 1e-12
    assert float(network.speed(a, X, G)[0]) >= float(network.speed(Ws, X, G)[0]) - 1e-12


def test_zero_speed_gives_no_escape_time():
    for s in (0.0, 1e-17, -1e-17):
        assert math.isinf(explosion.escape_time(0.05, 0.2, s, 3)) and math.isinf(explosion.blowup_time(0.05, s, 3))
    assert math.isfinite(explosion.escape_time(0.05, 0.2, 1e-6, 3))


def test_dead_network_is_stopped_on_every_machine():
    X, Y = problems.teacher_data(20, 5, gen(9))
    L, dim = 3, 20 * 8
    theta = torch.tensor([1e-4, 1e-4], dtype=torch.float64)
    loss = torch.full((2,), 0.5, dtype=torch.float64)
    dead = gradient_descent.dead_gradient(torch.tensor([0.0, 1e-300], dtype=torch.float64), loss, theta, X, L, dim)
    assert dead.tolist() == [True, True]
    # a live network at small initialization: its gradient is O(alpha^{L-1}) = 1e-8, tiny but far above rounding
    Ws = network.init_sphere(5, [8, 8], 1, 4, gen(10), scale=1e-4)
    loss, grads = gradient_descent.mse_grad(Ws, X, Y)
    gn = torch.sqrt(sum((g ** 2).sum(dim=(1, 2)) for g in grads))
    tn = torch.sqrt(network.sq_norm(Ws))
    assert not gradient_descent.dead_gradient(gn, loss, tn, X, L, dim).any()


def test_growth_decision_is_exact_on_counts():
    widths = [1, 2, 4, 8]
    # the same fractions computed two ways (sums of twelfths) and perturbed at rounding level: the same answer
    base = np.array([1 / 12, 2 / 12, 1 / 12, 2 / 12])                  # large-width mean = small-width mean
    for f in (base, base + 1e-16 * np.array([0, -1, 1, 1]), np.array([0.25 / 3, 0.5 / 3, (0.5 + 0.5) / 12, 0.5 / 3])):
        assert not width_trend.grows_with_width(widths, f)
    assert width_trend.grows_with_width(widths, np.array([0.0, 1 / 12, 1 / 12, 2 / 12]))
    assert not width_trend.grows_with_width(widths, np.full(4, 0.25))     # constant: no growth (and no warning)
