"""Tests of Theorem 3.1, Propositions 3.3 and 3.4 (``stagewise.escape_speed.theorem_31``, ``proposition_33``,
``proposition_34``, ``layer_measures``)."""
import math

import torch

from stagewise.escape_speed import ascent, layer_measures, network, problems, proposition_33, proposition_34, theorem_31
from stagewise.numerics import spectra

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_thm31_constant_example1():
    """Theorem 3.1: c = kappa sqrt(2 log kappa) with kappa = 16 on Example 1; the bound is vacuous for l <= c^2."""
    X, G = problems.example1_data()
    c, lmin = theorem_31.thm31_constant(X, G, 0.5)
    assert abs(c - 16 * math.sqrt(2 * math.log(16))) < 1e-12 and abs(lmin - c * c) < 1e-9
    assert math.isinf(theorem_31.thm31_bound(c, 100)) and theorem_31.thm31_bound(c, 10 ** 6) < 1


def test_prop34_inequality_random():
    """Proposition 3.4: the deterministic inequality holds for random networks."""
    g = gen(7)
    X, G = torch.randn(4, 20, generator=g, dtype=torch.float64), torch.randn(3, 20, generator=g, dtype=torch.float64)
    for L in (2, 5):
        lhs, rhs = proposition_34.prop34_sides(network.init_sphere(4, [6] * (L - 1), 3, 50, g), X, G)
        assert bool((lhs <= rhs + 1e-9).all())


def test_prop33_bound_and_data():
    """Proposition 3.3: the bound, the data X = u v^T + E, the speed bracket and the bound at the optimum."""
    assert abs(proposition_33.prop33_bound(1.0, 0.1, 0.9) - 1.0) < 1e-15
    assert math.isinf(proposition_33.prop33_bound(1.0, 0.1, 0.1))
    assert math.isinf(proposition_33.prop33_bound(2.0, 0.1, 0.15))
    assert proposition_33.prop33_bound(1.0, 0.03, 0.5) < proposition_33.prop33_bound(1.0, 0.03, 0.4)   # decreasing in s*
    X, G, u, v = problems.near_rank_one_data(5, 20, 2, 0.1, gen(15))
    assert bool((u >= 0).all() and (v >= 0).all())
    assert abs(float((X - torch.outer(u, v)).norm()) - 0.1) < 1e-12 and abs(float(G.norm()) - 1) < 1e-12
    r = ascent.projected_ascent(network.init_sphere(5, [6, 6], 2, 6, gen(16)), X, G, 600, 0.1, 1e-4)
    W, s = r.best()
    lo, hi = proposition_33.prop33_speed_bracket(X, G, u, v)
    assert lo <= s <= hi
    d = layer_measures.layer_diagnostics(W, X)
    worst = max(d["rho_W"] + d["rho_Z"] + d["nu"] + [spectra.nontop_fraction(X)])
    assert worst <= proposition_33.prop33_bound(1.0, 0.1, hi)                # the bound at the largest possible s*


def test_studies_on_small_problems():
    """Theorem 3.1's trend, Proposition 3.4's inequality and Proposition 3.3 as the chapter runs them."""
    from stagewise.escape_speed import deepening
    data = {"Example 1": problems.example1_data()}
    res = deepening.escape_by_depth(*data["Example 1"], [2, 3], 6, 8, 300, 0.1, 1e-4, gen(30))
    ranks = theorem_31.optima_ranks({"Example 1": res}, data)
    assert 0.0 <= ranks.deep_max <= 1.0 and 0.0 <= ranks.first_max <= 1.0
    X, G = problems.random_problem(4, 20, 3, gen(31))
    assert proposition_34.prop34_gap(X, G, {"Example 1": res}, data, gen(32), depths=(3,), nets=20) <= 1e-9
    rows = proposition_33.prop33_study((0.1,), (3,), 6, 4, 400, 0.1, 1e-4, gen(33))
    assert len(rows) == 1 and rows[0].lo <= rows[0].s <= rows[0].hi
    assert rows[0].bound_up <= rows[0].bound_hat and max(rows[0].net, rows[0].x) <= rows[0].bound_up


def test_prop34_right_side_is_twice_the_log_of_the_bound_over_the_trace():
    """The right side of Proposition 3.4's inequality (log form) is 2 log(|X|_F |G|_F prod_l |W_l|_F / |Tr G^T Z_L|),
    computed here from the network's own output; the left side is the sum of log(|Z|_F^2/|Z|_op^2) over the live
    representations, at least 0. The power 2^log(...) (the control) is another number."""
    g = gen(11)
    X, G = torch.randn(4, 20, generator=g, dtype=torch.float64), torch.randn(3, 20, generator=g, dtype=torch.float64)
    Ws = network.init_sphere(4, [6, 6], 3, 5, g)
    lhs, rhs = proposition_34.prop34_sides(Ws, X, G)
    Z, _ = network.forward(Ws, X)
    prod = torch.ones(5, dtype=torch.float64)
    for W in Ws:
        prod = prod * W.flatten(1).norm(dim=1)
    ratio = float(X.norm() * G.norm()) * prod / (Z[-1] * G).sum(dim=(1, 2)).abs()
    finite = torch.isfinite(rhs)
    assert finite.any() and bool((lhs >= -1e-12).all())
    torch.testing.assert_close(rhs[finite], 2 * torch.log(ratio[finite]), rtol=1e-12, atol=0)
    assert not torch.allclose(rhs[finite], 2 ** torch.log(ratio[finite]))
