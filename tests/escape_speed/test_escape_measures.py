"""Tests of the measurement functions behind the escape-speed checks and their controls (issue 22): the width-trend
statistics, the closed-form gaps, the escape-time clocks and the bug catalogue."""
import math

import numpy as np
import pytest
import torch

from stagewise.core.checks import catalogue
from stagewise.escape_speed import (closed_forms, deepening, example1_rank_one, example1_widths, explosion, network,
                                    problems, proposition_33, restart_ranks, theorem_31, width_trend)
from stagewise.escape_speed import gradient_descent as gd

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_wilson_interval_known_values():
    lo, hi = width_trend.wilson(0, 16)
    assert lo == 0.0 and 0.19 < hi < 0.20                  # 0/16: [0, 0.194]
    lo, hi = width_trend.wilson(8, 16)
    assert abs(lo - 0.28) < 0.01 and abs(hi - 0.72) < 0.01
    assert width_trend.wilson(0, 0) == (0.0, 1.0)


def test_newcombe_interval_contains_the_effect_and_is_symmetric():
    d, lo, hi = width_trend.newcombe(15, 32, 7, 32)
    assert lo < d < hi and abs(d - 0.25) < 1e-12
    d2, lo2, hi2 = width_trend.newcombe(7, 32, 15, 32)
    assert abs(d2 + d) < 1e-12 and abs(lo2 + hi) < 1e-12 and abs(hi2 + lo) < 1e-12


def test_width_trend_leaves_out_forced_widths_and_rejects_flat_or_falling():
    widths, n = [1, 2, 4, 8, 16, 32], [24] * 6
    # the falling curve that the old robust form passed because the zeros at widths 1 and 2 carried it
    falling = width_trend.width_trend(widths, [0, 0, 22, 7, 2, 1], n)
    assert falling.widths == [4, 8, 16, 32]
    assert falling.slope < 0 and not width_trend.trend_shown(falling.value)
    assert width_trend.grows_with_width(widths, np.array([0, 0, 0.9, 0.3, 0.1, 0.05]))   # the old test passed it
    flat = width_trend.width_trend(widths, [0, 0, 11, 12, 11, 12], n)
    assert not width_trend.trend_shown(flat.value)
    # a saturated step: forced zeros, then flat; the old test passed it, the trend over informative widths does not
    step = width_trend.width_trend(widths, [0, 0, 12, 12, 12, 12], n)
    assert width_trend.grows_with_width(widths, np.array([0, 0, 0.5, 0.5, 0.5, 0.5]))
    assert step.slope == pytest.approx(0.0, abs=1e-12) and not width_trend.trend_shown(step.value)
    growing = width_trend.width_trend(widths, [0, 0, 1, 8, 10, 13], n)
    assert width_trend.trend_shown(growing.value) and growing.lo > 0
    # the interval excludes 0 exactly when the one-sided Cochran-Armitage test rejects at 2.5 %
    assert (growing.lo > 0) == (growing.z > width_trend.Z95)
    assert width_trend.width_trend([1, 2, 4], [0, 0, 3], [24] * 3) is None     # one informative width: no trend
    beyond = width_trend.width_trend(widths, [0, 0, 0, 7, 8, 7], [16] * 6, min_width=8)
    assert beyond.widths == [8, 16, 32] and not width_trend.trend_shown(beyond.value)  # the GD curve: a step, then flat
    none = width_trend.width_trend(widths, [0] * 6, n)
    assert none.value == [0.0, 0.0, 0.0] and not width_trend.trend_shown(none.value)
    assert not width_trend.trend_shown([math.nan, math.nan, math.nan])
    assert "4: 1/24" in width_trend.widths_text(growing) and "per doubling" in width_trend.trend_text(growing)


def test_saturated_step_control_keeps_forced_widths():
    X, G = problems.example1_data()
    value = example1_widths.ascent_trend(X, G, [1, 4, 8], 6, 100, 0.1, 1e-3, gen(1), actual_width=8)
    assert len(value) == 3 and value[1] <= value[0] <= value[2]
    sw = example1_widths.ascent_width_sweep(X, G, [1, 4, 8], 4, 50, 0.1, 1e-3, gen(2), actual_width=8)
    assert sw.runs[4].Ws[0].shape[1] == 8                                    # an informative label no longer sets the width
    assert int((sw.runs[1].Ws[0].abs().sum(dim=2) > 0).sum(dim=1).max()) == 1   # width 1 keeps its own width


def test_rank_one_gaps_and_controls():
    X, G = problems.example1_data()
    assert example1_rank_one.rank_one_gap(X, G) < 1e-12
    assert example1_rank_one.solver_rank_one_gap(X, G, 8, 300, 0.1, 1e-4, gen(3)) > 1e-12   # the check tolerance
    assert example1_rank_one.construction_gap(X, G) < 1e-12 and example1_rank_one.construction_gap(X, G, sign=1.0) > 0.5
    scan = example1_rank_one.rank_one_scan(X, G, 2001)
    assert example1_rank_one.eq6_gap(scan, math.pi / 4) < 1e-12 < example1_rank_one.eq6_gap(scan, math.pi / 2)
    assert closed_forms.shallow_escape_speed(*problems.circle_data(24, "cos3")) < 1e-12
    assert closed_forms.shallow_escape_speed(*problems.circle_data(24, "cos2")) > 0.1


def test_excess_at_width_is_the_width1_excess():
    X, G = problems.example1_data()
    sw = example1_widths.ascent_width_sweep(X, G, [1, 8], 6, 300, 0.1, 1e-4, gen(1))
    assert example1_widths.excess_at_width(sw, 1) == sw.width1_excess <= 1e-12
    assert math.isnan(example1_widths.excess_at_width(sw, 3))


def test_closed_form_gap_rejects_the_one_layer_law():
    X, G = problems.random_problem(5, 20, 3, gen(4))
    lin = closed_forms.linear_study(X, G, (2, 3), 4, 2, 1e-4, gen(5), 1e-7)
    assert closed_forms.closed_form_gap(lin, closed_forms.linear_speed, X, G) < 1e-6
    assert closed_forms.closed_form_gap(lin, closed_forms.one_layer_speed, X, G) > 1e-3


def test_deepening_loss_and_excess_over_shallow():
    g = gen(3)
    X, G = torch.randn(3, 15, generator=g, dtype=torch.float64), torch.randn(2, 15, generator=g, dtype=torch.float64)
    chk = deepening.deepening_check(X, G, [4, 4], 20, 2, g)
    assert deepening.max_speed_loss(chk.nets, X, G, 2) <= 1e-12
    assert deepening.max_speed_loss(chk.nets, X, G, 2, choose="worst") > 1e-3
    X1, G1 = problems.example1_data()
    res = deepening.escape_by_depth(X1, G1, [2, 3], 6, 6, 300, 0.1, 1e-4, gen(6))
    s2 = closed_forms.shallow_escape_speed(X1, G1)
    assert deepening.excess_over_shallow(res, 2, s2, 1.0) <= 1e-9
    assert math.isnan(deepening.excess_over_shallow(res, 5, s2, 1.0))
    assert deepening.worst_speed(res, 3) == res.speeds[1]
    assert deepening.shallow_shortfall(X1, G1, s2, 6, 6, 300, 0.1, 0.1, gen(7)) > 1e-3   # no decay: a step short


def test_law_error_and_escape_clocks():
    X, Y = problems.interior_teacher(20, 5, gen(8))
    flow = explosion.aligned_flow(X, Y, (2, 3), 3, 0.05, 0.2, 10, gen(9))
    assert explosion.law_error(flow.curves, explosion.ode_scale) < 1e-7
    assert explosion.law_error(flow.curves, explosion.paper_scale) > 1e-2
    law = gd.escape_time_law(X, Y, [0.04, 0.02], 4, 4, 0.02, gen(10), depths=(2, 3))
    assert abs(gd.escape_slope(law, 3) - law.slopes[3]) < 1e-12
    assert gd.escape_slope(law, 3, clock="steps") > -0.5                    # steps grow only like log(1/alpha)
    assert abs(gd.log_law_ratio(law, 1.0, rate=2.0) - 2 * gd.log_law_ratio(law, 1.0)) < 1e-12


def test_basin_speed_is_decided_before_training():
    """The L = 2 gate of the log law: the escape the initial neurons lie in the basin of, from the initialization
    alone. It reaches s*(2) from wide initializations, never exceeds it, and with one neuron per network depends on
    where that neuron starts (some start in the basin of a slower local maximum)."""
    X, Y = problems.interior_teacher(20, 5, gen(12))
    G = -Y
    s2 = float(network.speed(closed_forms.single_neuron_escape(X, G, 2, 1, gen(13))[0], X, G)[0])
    wide = network.init_sphere(X.shape[0], [16], 1, 8, gen(14))
    assert abs(gd.basin_speed(wide, X, G) / s2 - 1) < 1e-3
    narrow = network.init_sphere(X.shape[0], [1], 1, 32, gen(15))
    per_net = [gd.basin_speed([W[i:i + 1] for W in narrow], X, G, steps=500) for i in range(8)]
    assert max(per_net) <= s2 * (1 + 1e-9)
    assert any(b < 0.99 * s2 for b in per_net)                              # a slower basin exists at width 1


def test_prop33_position_and_ratio():
    rows = proposition_33.prop33_study((0.03,), (3,), 6, 4, 300, 0.1, 1e-4, gen(11))
    assert proposition_33.prop33_position(rows) <= 1.0 + 1e-12
    position = proposition_33.prop33_position(rows)
    assert proposition_33.prop33_position(rows, noise_power=2.0) == pytest.approx(position / 0.03)
    assert proposition_33.prop33_ratio(rows, 0.03) == pytest.approx(rows[0].net)       # the network, not the input
    assert proposition_33.prop33_ratio(rows, 0.03, trained=False) == pytest.approx(rows[0].net_untrained)


def test_bug_catalogue_is_valid():
    from stagewise.escape_speed import bugs
    assert len(bugs.BUGS) >= catalogue.MIN_BUGS and sum(b.ci for b in bugs.BUGS) == 1
    assert len({b.category for b in bugs.BUGS}) >= 6
    for b in bugs.BUGS:
        assert b.category in catalogue.CATEGORIES and len(b.doc) >= 40
    X, G = bugs.circle_with_endpoint(8)
    assert torch.allclose(X[:, 0], X[:, -1])                                # first and last points coincide


def test_restart_ranks_nontrivial_optima_and_short_control():
    """Theorem 3.1 on random restarts: Example 1's restarts that reach 1/2 have a rank-two first layer and rank-one
    deep layers; the control (a restart stopped >= 1e-2 short) is measured on the same scale; one layer too early the
    representation row sees the ReLU the optimum uses."""
    data = {"Example 1": problems.example1_data()}
    st = restart_ranks.restart_ranks(data, ["Example 1"], [3, 4], 8, 32, 1500, 0.1, 1e-4, gen(3),
                                     known={"Example 1": 0.5})
    rows = st.nontrivial()
    assert rows and all(r[6] > 0.4 for r in rows)                           # first layer rank two: not a chain
    assert restart_ranks.nontrivial_rank(st, "W") <= 1e-2
    if any(r[1] >= 4 for r in rows):
        assert restart_ranks.nontrivial_rank(st, "Z") <= 1e-2 < restart_ranks.nontrivial_rank(st, "Z", 2)
    c = st.short_restart()
    if c is not None:
        assert c[2] <= c[3] * (1 - 1e-2) and c[0] == "Example 1"
        assert math.isfinite(restart_ranks.short_restart_rank(st, "W"))
    assert "Example 1: L=3" in restart_ranks.restart_table(st)


def test_neuron_critical_points_are_consistent():
    X, Y = problems.interior_teacher(20, 5, gen(21))
    pts = closed_forms.neuron_critical_points(X, -Y, gen(22), samples=4000)
    s2 = float(network.speed(closed_forms.single_neuron_escape(X, -Y, 2, 1, gen(23))[0], X, -Y)[0])
    assert pts and abs(pts[0][0] / s2 - 1) < 1e-6                           # the fastest is the optimum
    for s, w, a in pts:                                                     # each a KKT point: w = c_A / |c_A|
        act = (w @ X > 0).to(X.dtype)
        c = -a * (X @ (-Y[0] * act))
        assert torch.allclose(c / c.norm(), w, atol=1e-12) and s > 0
    chain, s_other = closed_forms.other_escape_chain(X, -Y, 3, 4, gen(22), samples=4000)
    assert (chain is None) == (len(pts) < 2)


def test_large_init_control_is_not_low_rank():
    from stagewise.escape_speed import digits
    X, Y = digits.image_data("digits", 200, gen(31))
    r = digits.large_init_ratio(X, Y, 4, 16, 0.9 * math.log(10), 500, 0.01, 1.0, gen(32))
    assert 0.3 < r <= 1.0


def test_width_growth_rejects_a_single_step_and_accepts_growth():
    """Conjecture 1 as the chapter tests it: a trend over the informative widths *and* within the two sides of the
    largest rise. A step from zero to a plateau (the synthetic [0, 0, 0, 8, 8, 8]; gradient descent's [0, 7, 8, 7] of
    16 at widths 4-32) passes the first test and fails the second; growth past the step passes both."""
    widths, n = [1, 2, 4, 8, 16, 32], [24] * 6
    step = width_trend.width_growth(widths, [0, 0, 0, 8, 8, 8], n)
    assert step.overall.lo > 0 and step.split == 8 and not width_trend.growth_shown(step.value)
    gd_step = width_trend.width_growth(widths, [0, 0, 0, 7, 8, 7], [16] * 6)
    assert not width_trend.growth_shown(gd_step.value)
    late_step = width_trend.width_growth(widths, [0, 0, 1, 1, 12, 12], n)          # a step between 8 and 16
    assert late_step.split == 16 and not width_trend.growth_shown(late_step.value)
    growing = width_trend.width_growth(widths, [0, 0, 1, 5, 10, 16], n)
    assert width_trend.growth_shown(growing.value) and len(growing.value) == 6
    assert width_trend.width_growth([1, 2, 4, 8], [0, 0, 1, 3], [24] * 4) is None    # two informative widths
    assert not width_trend.growth_shown([math.nan] * 6)
    assert "within the two sides" in width_trend.growth_text(growing)
    assert width_trend.counts_text([1, 4], [0, 3], [24, 24]) == "1: 0/24, 4: 3/24"


def test_step_control_and_reach_threshold():
    """The step-shaped control builds every width from the second informative one on at the largest width; a restart
    reaches the rank-two speed within the relative margin of 1/2, and 'beyond rank one' is the paper's criterion."""
    X, G = problems.example1_data()
    assert example1_widths.step_width([1, 2, 4, 8, 16, 32]) == 8
    sw = example1_widths.ascent_width_sweep(X, G, [1, 4, 8, 16], 3, 50, 0.1, 1e-3, gen(2), actual_width=16,
                                            step_from=8)
    assert sw.runs[8].Ws[0].shape[1] == 16
    assert int((sw.runs[4].Ws[0].abs().sum(dim=2) > 0).sum(dim=1).max()) == 4     # width 4 keeps its own width
    assert sw.reach == pytest.approx(0.5 * (1 - 1e-3)) and sw.threshold > example1_rank_one.RANK_ONE_SPEED
    assert all(r <= b for r, b in zip(sw.successes, sw.beyond_rank_one))
    value = width_trend.growth_value(sw)
    assert len(value) == 6


def test_deepened_layers_are_rank_one_and_the_identity_control_is_not():
    """Proposition 3.2's last clause: from a depth-3 network, every layer the construction builds is rank one; full
    identity layers (every neuron kept) are not."""
    X, G = problems.example1_data()
    W = network.init_sphere(2, [6, 6], 1, 5, gen(41))
    assert theorem_31.deepened_rank(W, X, G, k=2) <= 1e-12
    assert theorem_31.deepened_rank(W, X, G, k=2, construction="identity") > 0.5


def test_slope_band_is_widened_by_the_finite_alpha_bias():
    """The escape-time slope band: -(L-2) -+ 0.15, widened on the steep side by the ODE's bias; nan above u1."""
    lo, hi = gd.slope_band([0.04, 0.02, 0.01], 3, 0.5)
    bias = gd.finite_alpha_bias([0.04, 0.02, 0.01], 3, 0.5)
    assert hi == pytest.approx(-0.85) and lo == pytest.approx(-1.15 - bias)
    assert all(math.isnan(v) for v in gd.slope_band([1.0, 0.5], 3, 0.5))


def test_best_known_speeds_are_monotone_in_depth():
    """The best speed known at depth L covers the continuation, the random restarts and every shallower depth."""
    X, G = problems.example1_data()
    data = {"Example 1": (X, G)}
    st = deepening.depth_study(data, [2, 3, 4], 4, 4, 100, 0.1, 1e-3, gen(5))
    rr = restart_ranks.restart_ranks(data, ["Example 1"], [2, 3, 4], 4, 4, 100, 0.1, 1e-3, gen(6),
                                     continuation=st.results)
    depths, known = restart_ranks.best_known(rr, st.results, "Example 1")
    assert depths == [2, 3, 4] and all(b >= a for a, b in zip(known, known[1:]))
    assert all(k >= s for k, s in zip(known, st.results["Example 1"].speeds))
    assert all(b.best >= float(b.speeds.max()) for b in rr.batches)


def test_the_restarts_shallow_speed_is_the_depth_two_speed():
    """Each restart batch's ``shallow`` is the continuation's speed at depth 2 (the rank-one escape a restart at or
    below it took), not at another depth (the control: the depth-3 speed, which differs here)."""
    X, G = problems.example1_data()
    data = {"Example 1": (X, G)}
    st = deepening.depth_study(data, [2, 3], 4, 4, 100, 0.1, 1e-3, gen(5))
    r = st.results["Example 1"]
    rr = restart_ranks.restart_ranks(data, ["Example 1"], [2, 3], 4, 2, 50, 0.1, 1e-3, gen(6), continuation=st.results)
    assert rr.batches and all(b.shallow == r.speeds[r.depths.index(2)] for b in rr.batches)
    assert r.speeds[r.depths.index(3)] != r.speeds[r.depths.index(2)]
