"""Tests of ``stagewise.escape_speed.deepening``: Proposition 3.2 ("Monotonicity in depth") and
Proposition "Merging a linear layer"."""
import math

import numpy as np
import pytest
import torch

from stagewise.escape_speed import closed_forms, deepening, layer_measures, network, problems, theorem_31
from stagewise.numerics import spectra

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_deepen_never_lowers_speed():
    """Proposition 3.2: the deepening construction never lowers the speed and adds rank-one layers."""
    g = gen(5)
    X, G = torch.randn(3, 15, generator=g, dtype=torch.float64), torch.randn(2, 15, generator=g, dtype=torch.float64)
    W = network.init_sphere(3, [4, 4], 2, 40, g)
    s0 = network.speed(W, X, G)
    D = deepening.deepen(W, X, G, k=2)
    assert len(D) == 5
    s1 = network.speed(D, X, G)
    assert bool(((s1 >= s0 - 1e-12) | (s0 <= 0)).all())
    for w in D[2:]:                                                   # added layers rank one
        assert spectra.nontop_fraction(w[0]) < 1e-12


def test_escape_by_depth_monotone_and_cos3_zero():
    """Proposition 3.2: s_hat(L) non-decreasing; the cos 3 data has s*(2) = 0 but escapes at depth 3."""
    X, G = problems.circle_data(24, "cos3")
    assert closed_forms.shallow_speed(X, G, 4000)[0] < 1e-12                  # s*(2) = 0 exactly
    res = deepening.escape_by_depth(X, G, [2, 3], 6, 6, 300, 0.1, 1e-4, gen(6))
    assert np.all(np.diff(res.speeds) >= 0)
    assert res.speeds[1] > 0.7
    c, lmin = theorem_31.thm31_constant(X, G, 0.0)                          # zero speed: reported, not divided by
    assert math.isinf(c) and math.isinf(lmin)
    assert math.isnan(theorem_31.safe_ratio(1.0, 0.0))


def test_merging_a_linear_layer_keeps_the_function_and_never_slows():
    """Proposition "Merging a linear layer": same function up to scale, speed not lower."""
    X, G = problems.example1_data()
    W = [w for w in closed_forms.rank_two_construction()]
    deep = deepening.deepen(W, X, G, k=2)                                # depth 5; layers 3 and 4 are linear
    merged = deepening.merge_most_linear(deep, X)
    assert len(merged) == 4 and all(abs(float(m.norm()) - 1) < 1e-12 for m in merged)
    s_deep, s_merged = float(network.speed(deep, X, G)[0]), float(network.speed(merged, X, G)[0])
    assert s_merged >= s_deep - 1e-12
    f_deep, f_merged = network.forward(deep, X)[0][-1], network.forward(merged, X)[0][-1]
    assert torch.allclose(f_merged / f_merged.norm(), f_deep / f_deep.norm(), atol=1e-12)   # same function up to scale
    with pytest.raises(ValueError, match="depth >= 3"):
        deepening.merge_most_linear(network.init_sphere(2, [3], 1, 1, gen()), X)


def test_merging_a_nonlinear_layer_can_change_the_function():
    """Proposition "Merging a linear layer" needs nu_l = 0: merging a nonlinear layer can lose speed."""
    X, G = problems.example1_data()
    W = closed_forms.rank_two_construction()                                # depth 3: both ReLUs matter
    d = layer_measures.layer_diagnostics(W, X)
    assert min(d["nu"]) > 0.1
    assert float(network.speed(deepening.merge_most_linear(W, X), X, G)[0]) < 0.5 - 0.1


def test_backward_pass_never_lowers_and_keeps_monotone():
    """Propositions 3.2 and "Merging a linear layer": the backward pass never lowers s_hat and keeps it monotone."""
    X, G = problems.circle_data(16, "alternating")
    r = deepening.escape_by_depth(X, G, [2, 3, 4], 6, 6, 200, 0.1, 1e-3, gen(20))
    assert all(a >= b - 1e-15 for a, b in zip(r.speeds, r.forward_speeds))
    assert all(b >= a - 1e-12 for a, b in zip(r.speeds, r.speeds[1:]))    # deepening is exact up to rounding
    assert math.isnan(r.merged_speeds[-1]) and len(r.merged_speeds) == 3
    for W, s in zip(r.optima, r.speeds):
        assert abs(float(network.speed(W, X, G)[0]) - s) < 1e-12


def test_deepening_check_and_depth_study():
    """Proposition 3.2 and "Merging a linear layer" as the chapter runs them: no loss, monotone, bounded."""
    X, G = problems.random_problem(4, 30, 3, gen(21))
    chk = deepening.deepening_check(X, G, [4, 4], 20, 2, gen(22))
    assert chk.max_loss <= 1e-12 and 0 < chk.n_positive <= 20
    data = {"Example 1": problems.example1_data(), "cos": problems.circle_data(24, "cos3")}
    st = deepening.depth_study(data, [2, 3], 6, 6, 200, 0.1, 1e-3, gen(23))
    assert st.min_increment >= -1e-12 and st.norm_bound_ok
    assert abs(st.shallow["cos"]) < 1e-12 and set(st.results) == set(data)
    assert st.n_deep == 0 and (st.merge_gap <= 1e-12 if st.n_linear else math.isinf(st.merge_gap))
