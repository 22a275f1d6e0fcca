"""Unit tests of the escape-speed mathematics (stagewise.escape, stagewise.escape_training)."""
import math

import numpy as np
import pytest
import torch

from stagewise import ParameterError
from stagewise.escape_speed import speed as esc
from stagewise.escape_speed import training as tr

torch.set_num_threads(1)   # tiny tensors: threads only add overhead (the chapter runs with one thread too)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_homogeneity_and_euler():
    g = gen()
    X, G = torch.randn(3, 12, generator=g, dtype=torch.float64), torch.randn(2, 12, generator=g, dtype=torch.float64)
    for L in (2, 4):
        W = esc.init_sphere(3, [5] * (L - 1), 2, 6, g)
        l0 = esc.localized_loss(W, X, G)
        assert torch.allclose(esc.localized_loss([2.5 * w for w in W], X, G), 2.5 ** L * l0, rtol=1e-12)
        s, grad = esc.speed_and_grad(W, X, G)
        euler = sum((w * gi).sum(dim=(1, 2)) for w, gi in zip(W, grad))   # theta . grad(-L0)
        assert torch.allclose(euler, L * s, rtol=1e-12)


def test_example1_closed_forms():
    X, G = esc.example1_data()
    phi = np.linspace(0, 2 * np.pi, 5001)
    assert np.abs(esc.neuron_speed(phi, X, G) - esc.rank_one_speed_eq6(phi)).max() < 1e-12
    s, _ = esc.shallow_speed(X, G, 2000)
    assert abs(s - (math.sqrt(2) - 1)) < 1e-12
    W = esc.rank_two_construction()
    assert abs(float(esc.sq_norm(W)[0]) - 3) < 1e-12
    assert abs(float(esc.speed(W, X, G)[0]) - 0.5) < 1e-12
    assert abs(float(esc.speed(esc.rank_two_construction(+1.0), X, -G)[0]) - 0.5) < 1e-12


def test_linear_closed_form_and_chain():
    g = gen(1)
    X, G = torch.randn(4, 10, generator=g, dtype=torch.float64), torch.randn(2, 10, generator=g, dtype=torch.float64)
    chain = esc.linear_chain(X, G, 3, 5)
    assert abs(float(esc.speed(chain, X, G, relu=False)[0]) - esc.linear_speed(X, G)) < 1e-12
    r = esc.projected_ascent(esc.init_sphere(4, [5], 2, 2, g), X, G, 1500, 0.1, 1e-4, relu=False)
    assert abs(float(r.speeds.max()) / esc.linear_speed(X, G) - 1) < 1e-5
    assert float(r.speeds.max()) <= esc.linear_speed(X, G) + 1e-12
    assert esc.one_layer_speed(X, G) >= esc.linear_speed(X, G)


def test_solver_finds_rank_two_escape_and_never_beats_bound():
    X, G = esc.example1_data()
    r = esc.projected_ascent(esc.init_sphere(2, [16, 16], 1, 32, gen(2)), X, G, 1000, 0.1, 1e-4)
    assert math.sqrt(2) - 1 + 0.05 < float(r.speeds.max()) <= 0.5 + 1e-9     # beats every rank-one net
    w1 = esc.projected_ascent(esc.init_sphere(2, [1, 1], 1, 8, gen(3)), X, G, 300, 0.1, 1e-4)
    assert float(w1.speeds.max()) <= math.sqrt(2) - 1 + 1e-12       # width 1 = rank one


def test_padding_keeps_zero_neurons_zero():
    X, G = esc.example1_data()
    W = esc.init_sphere(2, [2, 2], 1, 3, gen(4))
    P = esc.pad_hidden(W, 6)
    a = esc.projected_ascent(W, X, G, 50, 0.1, 1e-3)
    b = esc.projected_ascent(P, X, G, 50, 0.1, 1e-3)
    assert torch.allclose(a.speeds, b.speeds, atol=1e-12)
    assert float(b.Ws[0][:, 2:].abs().max()) == 0.0


def test_deepen_never_lowers_speed():
    g = gen(5)
    X, G = torch.randn(3, 15, generator=g, dtype=torch.float64), torch.randn(2, 15, generator=g, dtype=torch.float64)
    W = esc.init_sphere(3, [4, 4], 2, 40, g)
    s0 = esc.speed(W, X, G)
    D = esc.deepen(W, X, G, k=2)
    assert len(D) == 5
    s1 = esc.speed(D, X, G)
    assert bool(((s1 >= s0 - 1e-12) | (s0 <= 0)).all())
    for w in D[2:]:                                                   # added layers rank one
        assert esc.nontop_fraction(w[0]) < 1e-12


def test_escape_by_depth_monotone_and_cos3_zero():
    X, G = esc.circle_data(24, "cos3")
    assert esc.shallow_speed(X, G, 4000)[0] < 1e-12                  # s*(2) = 0 exactly
    res = esc.escape_by_depth(X, G, [2, 3], 6, 6, 300, 0.1, 1e-4, gen(6))
    assert np.all(np.diff(res.speeds) >= 0)
    assert res.speeds[1] > 0.7
    c, lmin = esc.thm31_constant(X, G, 0.0)                          # zero speed: reported, not divided by
    assert math.isinf(c) and math.isinf(lmin)
    assert math.isnan(esc.safe_ratio(1.0, 0.0))


def test_thm31_constant_example1():
    X, G = esc.example1_data()
    c, lmin = esc.thm31_constant(X, G, 0.5)
    assert abs(c - 16 * math.sqrt(2 * math.log(16))) < 1e-12 and abs(lmin - c * c) < 1e-9
    assert math.isinf(esc.thm31_bound(c, 100)) and esc.thm31_bound(c, 10 ** 6) < 1


def test_prop34_inequality_random():
    g = gen(7)
    X, G = torch.randn(4, 20, generator=g, dtype=torch.float64), torch.randn(3, 20, generator=g, dtype=torch.float64)
    for L in (2, 5):
        lhs, rhs = esc.prop34_sides(esc.init_sphere(4, [6] * (L - 1), 3, 50, g), X, G)
        assert bool((lhs <= rhs + 1e-9).all())


def test_bad_inputs():
    X, G = esc.example1_data()
    with pytest.raises(ParameterError, match="depth"):
        esc.check_problem(X, G, [])
    with pytest.raises(ParameterError, match="widths"):
        esc.check_problem(X, G, [3, 0])
    with pytest.raises(esc.NoEscapeError, match="no escape"):
        esc.check_problem(X, torch.zeros_like(G), [3])
    with pytest.raises(ParameterError, match="depths"):
        esc.check_parameters({"depths": [3, 2]})
    with pytest.raises(ParameterError, match="pga_eta_final"):
        esc.check_parameters({"pga_eta": 0.01, "pga_eta_final": 0.1})
    with pytest.raises(ParameterError, match="alphas"):
        esc.check_parameters({"alphas": [0.1, 0.1]})
    with pytest.raises(ParameterError, match="mnist_depth_small"):
        esc.check_parameters({"mnist_depth": 4, "mnist_depth_small": 4})
    esc.check_parameters({"depths": [2, 3], "alphas": [0.1, 0.05], "mnist_depth": 6, "mnist_depth_small": 4})


def test_divergence_is_reported():
    g = gen(8)
    X, Y = esc.teacher_data(10, 3, g)
    W = tr.small_init(3, [4], 1, 2, 1e150, g)                         # overflow at the first step
    with pytest.raises(ParameterError, match="rel_step"):
        tr.euler_escape(W, X, Y, 0.01, 0.1, 5)


def test_ode_and_escape_time():
    assert abs(tr.ode_scale(0.1, 2.0, 2, np.array([1.0]))[0] - 0.1 * math.exp(2)) < 1e-15
    L, s, u0, u1 = 4, 1.5, 0.1, 0.5
    t1 = tr.escape_time(u0, u1, s, L)
    assert abs(tr.ode_scale(u0, s, L, np.array([t1]))[0] - u1) < 1e-12
    assert np.isnan(tr.ode_scale(u0, s, L, np.array([tr.blowup_time(u0, s, L) * 1.01]))[0])
    assert math.isinf(tr.escape_time(u0, u1, 0.0, 3))


def test_aligned_flow_follows_ode():
    g = gen(0)
    X, Y = esc.teacher_data(20, 5, g)
    rho, exact = esc.single_neuron_escape(X, -Y, 3, 3, g)
    assert exact and float(esc.kkt_residual(rho, X, -Y)[0]) < 1e-10
    s = float(esc.speed(rho, X, -Y)[0])
    times = np.linspace(0, tr.escape_time(0.05, 0.2, s, 3), 5)
    u = np.array([float(tr.layer_scale(W)[0]) for W in tr.flow([0.05 * w for w in rho], X, Y, times, True)])
    assert np.abs(u / tr.ode_scale(0.05, s, 3, times) - 1).max() < 1e-7


def test_mse_grad_matches_autograd():
    g = gen(9)
    X, Y = torch.randn(3, 11, generator=g, dtype=torch.float64), torch.randn(2, 11, generator=g, dtype=torch.float64)
    for widths in ([4], [5, 1], [6, 3, 4]):                       # depths 2, 3, 4; width-1 layers use the broadcast path
        W = tr.small_init(3, widths, 2, 5, 0.8, g)
        loss, grads = tr.mse_grad(W, X, Y)
        leaves = [w.clone().requires_grad_(True) for w in W]
        ref = tr.mse_loss(leaves, X, Y)
        ref_g = torch.autograd.grad(ref.sum(), leaves)
        assert torch.allclose(loss, ref.detach(), rtol=1e-13, atol=0)
        for a, b in zip(grads, ref_g):
            assert a.shape == b.shape and float((a - b).abs().max()) <= 1e-13 * float(b.abs().max())
    W = tr.small_init(2, [1, 1], 1, 3, 0.5, g)                    # scalar output, width 1: every _mm special case
    loss, grads = tr.mse_grad(W, *esc.example1_data())
    leaves = [w.clone().requires_grad_(True) for w in W]
    ref_g = torch.autograd.grad(tr.mse_loss(leaves, *esc.example1_data()).sum(), leaves)
    assert all(torch.allclose(a, b, rtol=1e-13, atol=1e-16) for a, b in zip(grads, ref_g))


def test_euler_escape_matches_autograd_reference():
    X, Y = esc.teacher_data(20, 5, gen(10))
    W0 = tr.small_init(5, [6, 6], 1, 6, 0.05, gen(11))
    a = tr.euler_escape(W0, X, Y, 0.01, 0.01, 100_000)
    b = tr.euler_escape_autograd(W0, X, Y, 0.01, 0.01, 100_000)
    assert a.steps == b.steps and bool(torch.isfinite(a.times).all())
    assert float(((a.times - b.times) / b.times).abs().max()) < 1e-10
    assert max(float((x - y).abs().max()) for x, y in zip(a.Ws, b.Ws)) < 1e-12


def test_gd_zero_neurons_stay_zero():
    X, G = esc.example1_data()
    W = tr.small_init(2, [2, 2], 1, 4, 0.01, gen(12))
    a = tr.euler_escape(W, X, G, 0.01, 0.01, 5000)
    b = tr.euler_escape(esc.pad_hidden(W, 7), X, G, 0.01, 0.01, 5000)
    assert a.steps == b.steps
    fin = torch.isfinite(a.times)
    assert bool(fin.any()) and torch.equal(fin, torch.isfinite(b.times))
    assert torch.allclose(a.times[fin], b.times[fin], rtol=1e-9)
    assert float(b.Ws[0][:, 2:].abs().max()) == 0.0 and float(b.Ws[1][:, 2:].abs().max()) == 0.0
    assert float(b.Ws[1][:, :, 2:].abs().max()) == 0.0 and float(b.Ws[2][:, :, 2:].abs().max()) == 0.0
    assert torch.allclose(tr.direction_speed(a.Ws, X, -G)[fin], tr.direction_speed(b.Ws, X, -G)[fin], rtol=1e-9)


def test_dead_network_stops_without_escape():
    X, G = esc.example1_data()
    W = tr.small_init(2, [3, 3], 1, 2, 0.01, gen(13))
    W[0][1] = 0.0                          # network 1: zero first layer, so all ReLUs are off and the gradient is 0
    r = tr.euler_escape(W, X, G, 0.01, 0.01, 100_000)
    assert math.isinf(float(r.times[1])) and r.steps < 100_000
    assert math.isfinite(float(r.times[0]))


def test_gd_width_one_never_beats_rank_one():
    X, G = esc.example1_data()
    sw = tr.gd_width_sweep(X, G, [1, 4], 3, 12, 1e-3, 0.01, 0.01, gen(14))
    s1 = sw.speeds[0][torch.isfinite(sw.speeds[0])]
    assert len(s1) > 0 and float(s1.max()) <= math.sqrt(2) - 1 + 1e-12     # rank one: a one-neuron function
    assert bool((torch.isfinite(sw.speeds) == sw.escaped).all())
    assert float(sw.speeds[torch.isfinite(sw.speeds)].max()) <= 0.5 + 1e-9


def test_prop33_bound_and_data():
    assert abs(esc.prop33_bound(1.0, 0.1, 0.9) - 1.0) < 1e-15
    assert math.isinf(esc.prop33_bound(1.0, 0.1, 0.1)) and math.isinf(esc.prop33_bound(2.0, 0.1, 0.15))
    assert esc.prop33_bound(1.0, 0.03, 0.5) < esc.prop33_bound(1.0, 0.03, 0.4)     # decreasing in s*
    X, G, u, v = esc.near_rank_one_data(5, 20, 2, 0.1, gen(15))
    assert bool((u >= 0).all() and (v >= 0).all())
    assert abs(float((X - torch.outer(u, v)).norm()) - 0.1) < 1e-12 and abs(float(G.norm()) - 1) < 1e-12
    r = esc.projected_ascent(esc.init_sphere(5, [6, 6], 2, 6, gen(16)), X, G, 600, 0.1, 1e-4)
    W, s = r.best()
    lo, hi = esc.prop33_speed_bracket(X, G, u, v)
    assert lo <= s <= hi
    d = esc.layer_diagnostics(W, X)
    worst = max(d["rho_W"] + d["rho_Z"] + d["nu"] + [esc.nontop_fraction(X)])
    assert worst <= esc.prop33_bound(1.0, 0.1, hi)                # the bound at the largest possible s*


def test_merging_a_linear_layer_keeps_the_function_and_never_slows():
    X, G = esc.example1_data()
    W = [w for w in esc.rank_two_construction()]
    deep = esc.deepen(W, X, G, k=2)                                # depth 5; layers 3 and 4 are linear
    merged = esc.merge_most_linear(deep, X)
    assert len(merged) == 4 and all(abs(float(m.norm()) - 1) < 1e-12 for m in merged)
    s_deep, s_merged = float(esc.speed(deep, X, G)[0]), float(esc.speed(merged, X, G)[0])
    assert s_merged >= s_deep - 1e-12
    f_deep, f_merged = esc.forward(deep, X)[0][-1], esc.forward(merged, X)[0][-1]
    assert torch.allclose(f_merged / f_merged.norm(), f_deep / f_deep.norm(), atol=1e-12)   # same function up to scale
    with pytest.raises(ValueError, match="depth >= 3"):
        esc.merge_most_linear(esc.init_sphere(2, [3], 1, 1, gen()), X)


def test_merging_a_nonlinear_layer_can_change_the_function():
    X, G = esc.example1_data()
    W = esc.rank_two_construction()                                # depth 3: both ReLUs matter
    d = esc.layer_diagnostics(W, X)
    assert min(d["nu"]) > 0.1
    assert float(esc.speed(esc.merge_most_linear(W, X), X, G)[0]) < 0.5 - 0.1


def test_backward_pass_never_lowers_and_keeps_monotone():
    X, G = esc.circle_data(16, "alternating")
    r = esc.escape_by_depth(X, G, [2, 3, 4], 6, 6, 200, 0.1, 1e-3, gen(20))
    assert all(a >= b - 1e-15 for a, b in zip(r.speeds, r.forward_speeds))
    assert all(b >= a - 1e-12 for a, b in zip(r.speeds, r.speeds[1:]))    # deepening is exact up to rounding
    assert math.isnan(r.merged_speeds[-1]) and len(r.merged_speeds) == 3
    for W, s in zip(r.optima, r.speeds):
        assert abs(float(esc.speed(W, X, G)[0]) - s) < 1e-12
