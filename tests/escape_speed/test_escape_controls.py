"""Tests of the controls and guards of the escape-speed checks: wrong closed forms and constructions that the
chapter's checks must reject, random-restart optima, untrained networks, relative zero speeds."""
import math

import numpy as np
import torch

from stagewise.escape_speed import closed_forms, deepening, example1_rank_one, explosion, network, problems, theorem_31

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_linear_steps_grow_with_a_small_gap():
    """The horizon of the deep linear study is derived from the spectral gap g = 1 - sigma_2/sigma_1 and the schedule."""
    steps = [closed_forms.linear_steps(r, 1e-4, 1e-7) for r in (0.3, 0.6, 0.9, 0.99)]
    assert steps == sorted(steps) and steps[0] >= 100                   # a smaller gap needs more steps
    assert closed_forms.linear_steps(0.9, 1e-4, 1e-9) > closed_forms.linear_steps(0.9, 1e-4, 1e-7)   # a finer target too
    assert closed_forms.linear_steps(1.0, 1e-4, 1e-7) == 100            # no gap: every top direction is as fast
    g = 0.1                                                             # the model: S = log(0.1 g / target) / (0.5 g)
    S = math.log(0.1 * g / 1e-7) / (closed_forms.LINEAR_RATE * g)
    per = (1.0 - 1e-4) / math.log(1.0 / 1e-4)
    assert closed_forms.linear_steps(0.9, 1e-4, 1e-7) == math.ceil(S / per)


def test_wrong_eq6_period_and_rotated_data_are_rejected():
    phi = np.linspace(0, 2 * np.pi, 2001)
    X, G = problems.example1_data()
    direct = closed_forms.neuron_speed(phi, X, G)
    assert np.abs(closed_forms.rank_one_speed_eq6(phi) - direct).max() < 1e-12
    assert np.abs(closed_forms.rank_one_speed_eq6(phi, np.pi / 2) - direct).max() > 1e-3
    c, s = math.cos(math.pi / 8), math.sin(math.pi / 8)
    R = torch.tensor([[c, -s], [s, c]], dtype=X.dtype)
    assert example1_rank_one.pi4_offset(closed_forms.shallow_speed(X, G)[1]) < 1e-9
    assert abs(example1_rank_one.pi4_offset(closed_forms.shallow_speed(R @ X, G)[1]) - 0.5) < 1e-6


def test_paper_sign_of_the_construction_gives_the_wrong_speed():
    X, G = problems.example1_data()
    assert abs(float(network.speed(closed_forms.rank_two_construction(-1.0), X, G)[0]) - 0.5) < 1e-12
    assert abs(float(network.speed(closed_forms.rank_two_construction(1.0), X, G)[0]) + 0.5) < 1e-12


def test_wrong_neuron_in_the_deepening_loses_speed():
    g = gen(3)
    X, G = torch.randn(3, 15, generator=g, dtype=torch.float64), torch.randn(2, 15, generator=g, dtype=torch.float64)
    chk = deepening.deepening_check(X, G, [4, 4], 30, 2, g)
    assert chk.max_loss <= 1e-12 and chk.wrong_max_loss > 1e-3


def test_paper_scale_differs_from_the_corrected_law():
    t = np.linspace(0, 1.0, 5)
    assert np.allclose(explosion.paper_scale(0.1, 1.0, 2, t), 0.1 * np.exp(2 * t))
    for L in (3, 4):
        ode, paper = explosion.ode_scale(0.1, 1.0, L, t), explosion.paper_scale(0.1, 1.0, L, t)
        assert paper[0] == ode[0] and abs(paper[-1] / ode[-1] - 1) > 1e-3


def test_random_optima_and_untrained_ranks():
    X, G = problems.gaussian_data(20, 5, gen(4))
    data = {"Gaussian": (X, G)}
    res = deepening.escape_by_depth(X, G, [2, 3, 4], 6, 8, 300, 0.1, 1e-4, gen(5))
    assert len(res.random_optima) == 3
    for W, s in zip(res.random_optima, res.random_speeds):
        assert abs(float(network.speed(W, X, G)[0]) - s) < 1e-12
    rnd = theorem_31.optima_ranks({"Gaussian": res}, data, plateau=math.inf, source="random")
    assert rnd.count == 2 and 0.0 <= rnd.deep_max <= 1.0 and not math.isnan(rnd.deep_repr_max)
    none = theorem_31.optima_ranks({"Gaussian": res}, data, plateau=-1.0, source="random")
    assert none.count == 0 and math.isnan(none.deep_max)
    w, z = theorem_31.untrained_ranks(data, [2, 3, 4], 6, 4, gen(6))
    assert w > 0.1 and z > 0.1                                         # untrained nets are far from rank one
    assert all(math.isnan(v) for v in theorem_31.untrained_ranks(data, [2], 6, 4, gen(6)))


def test_zero_speed_is_relative():
    X, G = problems.circle_data(24, "cos3")
    scale = float(X.norm() * G.norm())
    assert theorem_31.thm31_constant(X, G, 1e-15)[0] == math.inf       # rounding-level speed counts as zero
    assert math.isfinite(theorem_31.thm31_constant(X, G, 0.5)[0])
    assert math.isnan(theorem_31.safe_ratio(1.0, 1e-15, scale)) and theorem_31.safe_ratio(1.0, 0.5, scale) == 2.0


def test_optima_ranks_measures_the_optima_of_the_source_it_names():
    """source="kept" measures the kept optima (the continuation's, often the Prop 3.2 construction) and
    source="random" the best random restarts: each row's layer measures are those of that source's network at its
    depth (control: the two sources' networks measure differently here, so a swap would show)."""
    X, G = problems.gaussian_data(20, 5, gen(4))
    data = {"Gaussian": (X, G)}
    res = deepening.escape_by_depth(X, G, [2, 3, 4], 6, 8, 300, 0.1, 1e-4, gen(5))
    differ = False
    for source, nets in (("kept", res.optima), ("random", res.random_optima)):
        found = theorem_31.optima_ranks({"Gaussian": res}, data, plateau=math.inf, source=source)
        assert found.count == 2
        for row in found.rows:
            L = row[1]
            i = res.depths.index(L)
            np.testing.assert_equal(np.array(row[4:]), np.array(theorem_31._deep_diag(nets[i], X)))   # nan == nan
            other = (res.random_optima if source == "kept" else res.optima)[i]
            differ |= not np.array_equal(np.array(row[4:]), np.array(theorem_31._deep_diag(other, X)), equal_nan=True)
    assert differ
