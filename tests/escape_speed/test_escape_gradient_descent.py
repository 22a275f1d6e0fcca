"""Tests of ``stagewise.escape_speed.gradient_descent``: gradient descent from small initialization
(escape times of Proposition 2.2; which escape direction of Definition 2.1 it finds on Example 1)."""
import math

import pytest
import torch

from stagewise import ParameterError
from stagewise.escape_speed import gradient_descent as gd
from stagewise.escape_speed import network, problems

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_divergence_is_reported():
    """Divergence of the Euler scheme names the step parameter rel_step."""
    g = gen(8)
    X, Y = problems.teacher_data(10, 3, g)
    W = network.init_sphere(3, [4], 1, 2, g, scale=1e150)                         # overflow at the first step
    with pytest.raises(ParameterError, match="rel_step"):
        gd.euler_escape(W, X, Y, 0.01, 0.1, 5)


def test_mse_grad_matches_autograd():
    """Definition "Localized loss" (squared loss): the hand-written backward pass equals autograd."""
    g = gen(9)
    X, Y = torch.randn(3, 11, generator=g, dtype=torch.float64), torch.randn(2, 11, generator=g, dtype=torch.float64)
    for widths in ([4], [5, 1], [6, 3, 4]):                       # depths 2, 3, 4; width-1 layers use the broadcast path
        W = network.init_sphere(3, widths, 2, 5, g, scale=0.8)
        loss, grads = gd.mse_grad(W, X, Y)
        leaves = [w.clone().requires_grad_(True) for w in W]
        ref = network.mse_loss(leaves, X, Y)
        ref_g = torch.autograd.grad(ref.sum(), leaves)
        assert torch.allclose(loss, ref.detach(), rtol=1e-13, atol=0)
        for a, b in zip(grads, ref_g):
            assert a.shape == b.shape and float((a - b).abs().max()) <= 1e-13 * float(b.abs().max())
    W = network.init_sphere(2, [1, 1], 1, 3, g, scale=0.5)                    # scalar output, width 1: every _mm special case
    loss, grads = gd.mse_grad(W, *problems.example1_data())
    leaves = [w.clone().requires_grad_(True) for w in W]
    ref_g = torch.autograd.grad(network.mse_loss(leaves, *problems.example1_data()).sum(), leaves)
    assert all(torch.allclose(a, b, rtol=1e-13, atol=1e-16) for a, b in zip(grads, ref_g))


def test_gd_zero_neurons_stay_zero():
    """Padding for the width sweep (Proposition "Example 1"): zero neurons stay zero under gradient descent."""
    X, G = problems.example1_data()
    W = network.init_sphere(2, [2, 2], 1, 4, gen(12), scale=0.01)
    a = gd.euler_escape(W, X, G, 0.01, 0.01, 5000)
    b = gd.euler_escape(network.pad_hidden(W, 7), X, G, 0.01, 0.01, 5000)
    assert a.steps == b.steps
    fin = torch.isfinite(a.times)
    assert bool(fin.any()) and torch.equal(fin, torch.isfinite(b.times))
    assert torch.allclose(a.times[fin], b.times[fin], rtol=1e-9)
    assert float(b.Ws[0][:, 2:].abs().max()) == 0.0 and float(b.Ws[1][:, 2:].abs().max()) == 0.0
    assert float(b.Ws[1][:, :, 2:].abs().max()) == 0.0 and float(b.Ws[2][:, :, 2:].abs().max()) == 0.0
    assert torch.allclose(gd.direction_speed(a.Ws, X, -G)[fin], gd.direction_speed(b.Ws, X, -G)[fin], rtol=1e-9)


def test_dead_network_stops_without_escape():
    """Definition 2.1: a dead network (zero gradient) never escapes; its time stays inf."""
    X, G = problems.example1_data()
    W = network.init_sphere(2, [3, 3], 1, 2, gen(13), scale=0.01)
    W[0][1] = 0.0                          # network 1: zero first layer, so all ReLUs are off and the gradient is 0
    r = gd.euler_escape(W, X, G, 0.01, 0.01, 100_000)
    assert math.isinf(float(r.times[1])) and r.steps < 100_000
    assert math.isfinite(float(r.times[0]))


def test_gd_width_one_never_beats_rank_one():
    """Proposition "Closed forms" (iv) and "Example 1": width 1 never beats sqrt(2) - 1; nothing beats 1/2."""
    X, G = problems.example1_data()
    sw = gd.gd_width_sweep(X, G, [1, 4], 3, 12, 1e-3, 0.01, 0.01, gen(14))
    s1 = sw.speeds[0][torch.isfinite(sw.speeds[0])]
    assert len(s1) > 0 and float(s1.max()) <= math.sqrt(2) - 1 + 1e-12     # rank one: a one-neuron function
    assert bool((torch.isfinite(sw.speeds) == sw.escaped).all())
    assert float(sw.speeds[torch.isfinite(sw.speeds)].max()) <= 0.5 + 1e-9


def test_escape_time_law_and_alignment():
    """Proposition 2.2's escape-time scaling from small init, and GD alignment with the single-neuron optimum."""
    from stagewise.escape_speed import closed_forms
    X, Y = problems.interior_teacher(20, 5, gen(15))
    law = gd.escape_time_law(X, Y, [0.04, 0.01], 4, 4, 0.02, gen(16), depths=(3,))
    assert law.alphas[3].tolist() == [0.04, 0.01] and len(law.median_times[3]) == 2
    assert abs(law.slopes[3] + 1) < 0.3
    rho, _ = closed_forms.single_neuron_escape(X, -Y, 3, 4, gen(17))
    s = float(network.speed(rho, X, -Y)[0])
    al = gd.alignment(X, Y, rho, s, 3, 4, 4, 0.01, 0.02, gen(18))
    assert al.cosine_median > 0.9 and 0.9 < al.speed_ratio_median <= 1 + 1e-6 and al.prop34_gap <= 1e-9


def test_finite_alpha_bias_detects_a_large_initialization():
    """Proposition 2.2's alpha -> 0 limit: the ODE's slope bias shrinks with alpha and is infinite above the escape
    scale u1 = (drop |Y|^2 / (2 s))^{1/L}."""
    from stagewise.escape_speed.gradient_descent import escape_scale, finite_alpha_bias
    assert abs(escape_scale(0.5, 0.1, 1.0, 3) ** 3 * 0.5 - 0.05) < 1e-15
    small, large = finite_alpha_bias([0.04, 0.02, 0.01], 3, 0.5), finite_alpha_bias([0.2, 0.1, 0.05], 3, 0.5)
    assert small < 0.1 < large
    assert finite_alpha_bias([0.04, 0.02, 0.01], 4, 0.5) < small                  # (alpha / u1)^(L-2) is smaller
    assert math.isinf(finite_alpha_bias([1.0, 0.5], 3, 0.5))


def test_direct_start_counts_growing_neurons():
    from stagewise.escape_speed.gradient_descent import direct_start
    X, Y = problems.teacher_data(20, 5, gen(11))
    W1 = torch.randn(1, 3, 5, generator=gen(12), dtype=torch.float64)
    grow = (torch.relu(W1[0] @ X) * Y[0]).sum(dim=1)                   # sign of each neuron's speed for a = +1
    W2 = torch.sign(grow)[None, None]                                  # every neuron grows
    assert bool(direct_start([W1, W2], X, Y)[0]) and not bool(direct_start([W1, -W2], X, Y)[0])
