"""Tests of ``stagewise.escape_speed.closed_forms``: Proposition "Closed forms" and Proposition "Example 1"."""
import math

import numpy as np
import torch

from stagewise.escape_speed import ascent, closed_forms, network, problems

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_example1_closed_forms():
    """Proposition "Example 1": Eq. (6) equals the direct rank-one speed, max sqrt(2) - 1; Eq. (2) has speed 1/2."""
    X, G = problems.example1_data()
    phi = np.linspace(0, 2 * np.pi, 5001)
    assert np.abs(closed_forms.neuron_speed(phi, X, G) - closed_forms.rank_one_speed_eq6(phi)).max() < 1e-12
    s, _ = closed_forms.shallow_speed(X, G, 2000)
    assert abs(s - (math.sqrt(2) - 1)) < 1e-12
    W = closed_forms.rank_two_construction()
    assert abs(float(network.sq_norm(W)[0]) - 3) < 1e-12
    assert abs(float(network.speed(W, X, G)[0]) - 0.5) < 1e-12
    assert abs(float(network.speed(closed_forms.rank_two_construction(+1.0), X, -G)[0]) - 0.5) < 1e-12


def test_linear_closed_form_and_chain():
    """Proposition "Closed forms" (i), (ii): s*_lin = sigma_max(G X^T) <= |G X^T|_F, reached by the chain and the solver."""
    g = gen(1)
    X, G = torch.randn(4, 10, generator=g, dtype=torch.float64), torch.randn(2, 10, generator=g, dtype=torch.float64)
    chain = closed_forms.linear_chain(X, G, 3, 5)
    assert abs(float(network.speed(chain, X, G, relu=False)[0]) - closed_forms.linear_speed(X, G)) < 1e-12
    r = ascent.projected_ascent(network.init_sphere(4, [5], 2, 2, g), X, G, 1500, 0.1, 1e-4, relu=False)
    assert abs(float(r.speeds.max()) / closed_forms.linear_speed(X, G) - 1) < 1e-5
    assert float(r.speeds.max()) <= closed_forms.linear_speed(X, G) + 1e-12
    assert closed_forms.one_layer_speed(X, G) >= closed_forms.linear_speed(X, G)


def test_rank_one_chain_and_linear_study():
    """Proposition "Closed forms" (ii): chains have unit layers; the solver reaches sigma_max at every depth."""
    X, G = problems.random_problem(4, 10, 2, gen(40))
    chain = closed_forms.rank_one_chain(torch.tensor([0.6, 0.8, 0.0, 0.0], dtype=torch.float64),
                                        torch.tensor([1.0, 0.0], dtype=torch.float64), 4, 3)
    assert [tuple(w.shape) for w in chain] == [(1, 3, 4), (1, 3, 3), (1, 3, 3), (1, 2, 3)]
    assert all(abs(float(w.norm()) - 1) < 1e-15 for w in chain)
    lin = closed_forms.linear_study(X, G, (2, 3), 4, 2, 1e-4, gen(41), target=1e-7)
    assert lin.closed_form == closed_forms.linear_speed(X, G)
    assert lin.solver_gap < 1e-6 and lin.chain_gap < 1e-12            # the derived horizon reaches the target
