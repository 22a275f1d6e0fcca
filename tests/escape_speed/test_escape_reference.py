"""Tests of ``stagewise.escape_speed.reference``: the plain loops equal the batched code they stand for."""
import torch

from stagewise.escape_speed import ascent, network, problems, reference
from stagewise.escape_speed import gradient_descent as gd

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_euler_escape_matches_autograd_reference():
    """Escape times (Proposition 2.2 from small init): batched Euler equals the autograd reference loop."""
    X, Y = problems.teacher_data(20, 5, gen(10))
    W0 = network.init_sphere(5, [6, 6], 1, 6, gen(11), scale=0.05)
    a = gd.euler_escape(W0, X, Y, 0.01, 0.01, 100_000)
    b = reference.euler_escape_reference(W0, X, Y, 0.01, 0.01, 100_000)
    assert a.steps == b.steps and bool(torch.isfinite(a.times).all())
    assert float(((a.times - b.times) / b.times).abs().max()) < 1e-10
    assert max(float((x - y).abs().max()) for x, y in zip(a.Ws, b.Ws)) < 1e-12


def test_projected_ascent_matches_one_restart_at_a_time():
    """Definition 2.1 solver: the batched ascent equals the ascent run one restart at a time."""
    X, G = problems.example1_data()
    W0 = network.init_sphere(2, [4, 4], 1, 5, gen(21))
    batched = ascent.projected_ascent(W0, X, G, 100, 0.1, 1e-3).speeds
    loop = reference.projected_ascent_reference(W0, X, G, 100, 0.1, 1e-3)
    assert float((batched - loop).abs().max()) < 1e-12
