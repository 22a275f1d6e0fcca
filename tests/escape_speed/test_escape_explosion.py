"""Tests of ``stagewise.escape_speed.explosion``: Proposition 2.2 ("Norm explosion", corrected)."""
import math

import numpy as np
import torch

from stagewise.escape_speed import ascent, closed_forms, explosion, network, problems

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_ode_and_escape_time():
    """Proposition 2.2: u' = s u^{L-1} solved in closed form; escape time reaches u1; nan after blow-up."""
    assert abs(explosion.ode_scale(0.1, 2.0, 2, np.array([1.0]))[0] - 0.1 * math.exp(2)) < 1e-15
    L, s, u0, u1 = 4, 1.5, 0.1, 0.5
    t1 = explosion.escape_time(u0, u1, s, L)
    assert abs(explosion.ode_scale(u0, s, L, np.array([t1]))[0] - u1) < 1e-12
    assert np.isnan(explosion.ode_scale(u0, s, L, np.array([explosion.blowup_time(u0, s, L) * 1.01]))[0])
    assert math.isinf(explosion.escape_time(u0, u1, 0.0, 3))


def test_aligned_flow_follows_ode():
    """Proposition 2.2: gradient flow on L0 from u0 rho follows the per-layer ODE (rho a true escape direction)."""
    g = gen(0)
    X, Y = problems.teacher_data(20, 5, g)
    rho, exact = closed_forms.single_neuron_escape(X, -Y, 3, 3, g)
    assert exact and float(ascent.kkt_residual(rho, X, -Y)[0]) < 1e-10
    s = float(network.speed(rho, X, -Y)[0])
    times = np.linspace(0, explosion.escape_time(0.05, 0.2, s, 3), 5)
    u = np.array([float(explosion.layer_scale(W)[0]) for W in explosion.flow([0.05 * w for w in rho], X, Y, times, True)])
    assert np.abs(u / explosion.ode_scale(0.05, s, 3, times) - 1).max() < 1e-7


def test_aligned_flow_experiment():
    """Proposition 2.2 as the chapter runs it: exact directions, the flow on L0 follows the ODE."""
    X, Y = problems.interior_teacher(20, 5, gen(3))
    r = explosion.aligned_flow(X, Y, (2, 3), 3, 0.05, 0.2, 5, gen(4))
    assert [c.L for c in r.curves] == [2, 3] and r.curves[0].times.shape == (5,)
    assert r.kkt < 1e-10 and r.ode_err < 1e-7 and r.full_err < r.speed * 0.2 ** 2
