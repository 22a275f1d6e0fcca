"""Tests of ``stagewise.escape_speed.ascent``: the solver for ``s*(L)`` of Definition 2.1."""
import math

import torch

from stagewise.escape_speed import ascent, network, problems

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_solver_finds_rank_two_escape_and_never_beats_bound():
    """Proposition "Example 1" (b) and "Closed forms" (iv): depth 3 beats sqrt(2) - 1, width 1 never does."""
    X, G = problems.example1_data()
    r = ascent.projected_ascent(network.init_sphere(2, [16, 16], 1, 32, gen(2)), X, G, 1000, 0.1, 1e-4)
    assert math.sqrt(2) - 1 + 0.05 < float(r.speeds.max()) <= 0.5 + 1e-9     # beats every rank-one net
    w1 = ascent.projected_ascent(network.init_sphere(2, [1, 1], 1, 8, gen(3)), X, G, 300, 0.1, 1e-4)
    assert float(w1.speeds.max()) <= math.sqrt(2) - 1 + 1e-12       # width 1 = rank one
