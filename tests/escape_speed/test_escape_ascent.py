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


def test_divergence_names_the_step_parameter():
    """The solver stops with the shared divergence error, naming pga_eta (no chapter-specific message)."""
    import pytest
    from stagewise.numerics.flows import DivergenceError
    X, G = problems.example1_data()
    with pytest.raises(DivergenceError, match="parameter pga_eta=inf"):
        ascent.projected_ascent(network.init_sphere(2, [3], 1, 2, gen(4)), X, G, 3, math.inf, 1e-3)


def test_perturbation_gain():
    """Definition 2.1 certificate: random points of the sphere gain speed O(delta) along some direction, the
    rank-two optimum of Example 1 gains at most O(delta^2)."""
    from stagewise.escape_speed import closed_forms
    X, G = problems.example1_data()
    W = network.init_sphere(2, [4, 4], 1, 3, gen(5))
    gain = ascent.perturbation_gain(W, X, G, 1e-2, 50, gen(6))
    assert gain.shape == (3,) and bool((gain > 1e-4).all())
    opt = ascent.perturbation_gain(closed_forms.rank_two_construction(), X, G, 1e-2, 50, gen(7))
    assert float(opt[0]) < 1e-3
