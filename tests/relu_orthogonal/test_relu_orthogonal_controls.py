"""Tests of the functions behind the chapter's controls: the frozen (independent-neuron) prediction, the order
ambiguity of the sweep, the sign-blind coverage, coverage from actual weights, the lazy-training norm, ties."""
import numpy as np
import pytest

from relu_problem import hand_example
from stagewise.core.run.parameters import ParameterError
from stagewise.relu_orthogonal import algorithm, assumption4, coverage, parameters, sweep, width_study


def test_frozen_prediction_keeps_whole_activation_sets():
    """Control of Theorem 2's order and sets: neurons fit their whole A_j in the order of 1/r_j(0); Algorithm 1
    removes the points fitted earlier, so the two differ on the hand example."""
    y, s, M = hand_example()
    lp = algorithm.algorithm1(y, M, s)
    order, sets = algorithm.frozen_prediction(lp, M)
    assert list(order) == [0, 1]
    assert [S.tolist() for S in sets] == [[0, 1], [1, 2]]
    gd_sets = {0: np.array([0, 1]), 1: np.array([2])}
    assert algorithm.order_and_sets_match([0, 1], gd_sets, lp.neurons, lp.fitted_sets)
    assert not algorithm.order_and_sets_match([0, 1], gd_sets, order, sets)


def test_frozen_rates_and_jump_times_depart_only_after_the_first_jump():
    """Control of the Figure 1 jump-time and exponent rows: every neuron keeps its initial rate. On the hand example
    the first jump is predicted right; neuron 1 loses point 1 to neuron 0, so its rate drops and the frozen
    hypothesis makes it jump too early and its exponent fall too fast after t_1."""
    y, s, M = hand_example()
    lp = algorithm.algorithm1(y, M, s)
    times = algorithm.frozen_jump_times(lp).times
    assert np.isclose(times[0], lp.times[0], rtol=1e-12)
    assert times[1] < lp.times[1] - 0.1 * lp.times[0]
    frozen = algorithm.frozen_rates(lp)
    t_before, t_after = 0.5 * lp.times[:1], 0.5 * lp.times[:1] + 0.5 * lp.times[1:]
    assert np.allclose(frozen.exponents(t_before), lp.exponents(t_before), rtol=1e-12, atol=1e-12)
    assert frozen.exponents(t_after)[0, 1] < lp.exponents(t_after)[0, 1] - 0.01
    assert list(frozen.neurons) == list(lp.neurons) and np.array_equal(frozen.times, lp.times)


def test_memoryless_staircase_is_a_whole_wrong_theory():
    """Control of Theorem 2's plateau rows (thm-relu-orthogonal-jumps): neurons never slowed by others' jumps. On the
    hand example neuron 1 jumps at 1/r_1(0), too early, fitting what neuron 0 left; the staircase it predicts has the
    same plateau values but another clock, and agrees with Algorithm 1 before the first jump."""
    y, s, M = hand_example()
    lp = algorithm.algorithm1(y, M, s)
    mem = algorithm.memoryless_staircase(lp, M)
    assert mem.neurons.tolist() == lp.neurons.tolist() == [0, 1]
    assert mem.times[0] == pytest.approx(lp.times[0]) and mem.times[1] == pytest.approx(1 / lp.rates[0, 1])
    assert mem.times[1] < lp.times[1] - 0.1 * lp.times[0]
    assert np.allclose(mem.plateau_losses, lp.plateau_losses)
    assert mem.tau.shape == mem.rates.shape == mem.active.shape == (3, 2)
    assert np.allclose(mem.exponents(0.5 * lp.times[:1]), lp.exponents(0.5 * lp.times[:1]))
    assert [S.tolist() for S in mem.fitted_sets] == [S.tolist() for S in lp.fitted_sets]


def test_selection_tally_accounts_for_every_draw():
    """The sweep's draws (thm-relu-orthogonal-jumps): every draw tried is kept or rejected by exactly one rule, and
    the kept ones are the draws ``sweep_draws`` returns."""
    draws = sweep.sweep_draws(4, 2, 40.0, resolve_at=400.0, eta=0.2)
    tried = draws[-1][0] + 1
    tally = sweep.selection_tally(4, tried, 40.0, resolve_at=400.0, eta=0.2)
    assert sum(tally.values()) == tried and tally["kept"] == 2
    assert set(tally) == set(sweep.SELECTION_RULES) | {"kept"}


def test_ambiguous_order_and_offset_tolerance():
    """Two jumps may swap at a given lambda only when closer than tol/(L r) each; larger L resolves them."""
    y, s, M = hand_example()
    lp = algorithm.algorithm1(y, M, s)
    assert sweep.offset_tolerance(32) == pytest.approx(0.5 * np.log(32) + 1)
    gap = lp.times[1] - lp.times[0]
    r = lp.rates[np.arange(2), lp.neurons]
    L_edge = 3.0 * (1 / r[0] + 1 / r[1]) / gap
    assert sweep.ambiguous_order(lp, 0.5 * L_edge, 3.0) and not sweep.ambiguous_order(lp, 2 * L_edge, 3.0)


def test_sign_blind_coverage_overestimates():
    """The control of the coverage checks, (1 - 2^-m)^n, exceeds the exact (sign-aware) probability."""
    for m in (4, 8, 16):
        assert coverage.coverage_signs_ignored(m, 32) > coverage.coverage_exact(m, 16, 16)


def test_mask_monte_carlo_matches_exact_and_bounds():
    """Coverage from actual Gaussian weights matches the exact formula; Assumption 4(i) is rarer than coverage."""
    rng = np.random.default_rng(3)
    y = np.array([1.0, -2.0, 0.5, 1.5, -0.3, 0.7, -1.1, 2.0])
    rows, full = coverage.mask_monte_carlo(y, 8, 4000, rng)
    p = coverage.coverage_exact(8, 5, 3)
    assert abs(rows - p) < 4.5 * np.sqrt(p * (1 - p) / 4000)
    assert full <= rows
    study = coverage.weights_study(np.random.default_rng(0), 2000, grid=((8, 6), (12, 20)))
    assert study.z_exact < 4.5 and study.z_full < 4.5 and coverage.weights_z_rows_only(study) > 4.5
    assert coverage.weights_z_signs_ignored(study) > 4.5


def test_lazy_norm_keeps_an_interpolating_init():
    """If the init already fits y, the lazy prediction is the init's own squared norm; otherwise it moves."""
    rng = np.random.default_rng(0)
    W, a = rng.uniform(-1, 1, (40, 6)), rng.uniform(-1, 1, 40)
    h0 = a @ np.maximum(W, 0)
    assert width_study.lazy_norm_sq(W, a, h0) == pytest.approx(np.sum(W ** 2) + np.sum(a ** 2), rel=1e-12)
    assert width_study.lazy_norm_sq(W, a, h0 + 1.0) != pytest.approx(np.sum(W ** 2) + np.sum(a ** 2), rel=1e-3)


def test_ties_only_for_discrete_labels():
    """Assumption 4(ii): Rademacher draws tie with positive probability, continuous labels never."""
    t = assumption4.tie_experiment(0, draws=40)
    assert t.ties_rademacher > 0 and t.ties_continuous == 0 and t.lp.tie is not None
    assert "Rademacher" in t.report()


def test_validator_requires_a_lazy_width():
    """A missing width >= 256 is an input error (exit 2), not a vacuous pass of the He check."""
    base = {"sweep_log_inv_lambdas": [25, 50, 100], "bal_etas": [0.2, 0.1, 0.05]}
    parameters.check_parameters({**base, "width_gd_widths": [16, 1024]})
    with pytest.raises(ParameterError, match="width_gd_widths"):
        parameters.check_parameters({**base, "width_gd_widths": [16, 256]})


def test_iff_and_its_controls_on_a_small_cover_experiment():
    """Def def-relu-orthogonal-mask with random output signs: the interpolation-iff-covered row holds and fails
    against coverage by any active neuron; uncovered points meet wrong-signed active neurons, and the uncovered
    plateau is met, while the signs-ignored plateau is not (distance 1)."""
    cover = assumption4.interpolation_iff_covered(12, 12)
    assert assumption4.interpolates_iff_covered(cover)
    assert not assumption4.interpolates_iff_covered(cover, signs_ignored=True)
    assert cover.plateau_rel and assumption4.uncovered_plateau_error(cover) < 1e-6
    assert assumption4.wrong_sign_met(cover) > 0
    assert assumption4.plateau_error_signs_ignored(cover) > 0.5


def test_tie_count_recomputes_both_label_kinds():
    t = assumption4.tie_experiment(0, draws=40)
    assert assumption4.tie_count(t, "continuous") == t.ties_continuous == 0
    assert assumption4.tie_count(t, "rademacher") == t.ties_rademacher > 0
