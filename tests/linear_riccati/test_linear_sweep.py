"""The gamma sweep (stagewise.linear_riccati.gamma_sweep, with its measurements in gd_limit, corollary_31,
objective_31, training_horizon and variational_certificate): Theorem 3.1 (thm-linear-riccati-main), Corollary 3.1
(thm-linear-riccati-cor) and the closed-form optimum V* (thm-linear-riccati-varopt), at eta and eta/2."""
import math

import numpy as np
import pytest
import torch

from stagewise.linear_riccati import (corollary_31, data, gamma_sweep, gd_limit, implicit_bias, objective_31,
                                      training_horizon, variational_certificate)
from stagewise.numerics.roundoff import roundoff


def test_gamma_sweep_converges_with_first_and_second_order_errors():
    """beta -> X^+ Y at zero loss; Corollary 3.1 error first order in eta, objective gap second order."""
    gen = torch.Generator().manual_seed(3)
    probs = [data.make_regression(3, 5, 2, gen) for _ in range(2)]
    res = gamma_sweep.gamma_sweep(probs, [0.01, 0.3, 3.0], 0.02, 150.0)
    assert res.coarse.beta_err.shape == (6,) and res.coarse.sv_W1.shape == (6, 5)
    assert res.beta_err_max < 1e-8 and res.loss_max < 1e-14
    assert 1.6 < res.cor_ratio < 2.4 and 1.6 < res.drift_ratio < 2.4 and 3.0 < res.gap_ratio < 5.0
    assert res.obj_gap_min_both > -1e-12


def test_variational_certificate():
    """L-BFGS agrees with V*; no gammas gives NaN."""
    p = data.make_regression(3, 5, 2, torch.Generator().manual_seed(4))
    assert variational_certificate.variational_certificate(p, [0.5], seed=123) < 1e-7
    assert math.isnan(variational_certificate.variational_certificate(p, [], seed=0))


def test_horizon_from_data_and_controls():
    """Theorem 3.1: the horizon predicted from the data brings GD within the target of beta_*; every control of the
    sweep (the same measurement with beta_gt, half the horizon, Corollary 3.1 / the objective at gamma/2, V* without
    its bottom terms, the invariant against gamma I) is far off."""
    gen = torch.Generator().manual_seed(5)
    probs = [data.make_regression(3, 5, 2, gen)]
    hz = training_horizon.horizon_from_data(probs, [0.01, 1.0], target=1e-10)
    assert 0 < hz.rate <= training_horizon.final_rate(probs[0], 1.0) and hz.t_learn > 0 and hz.T > hz.t_learn
    assert hz.rank == 3 and hz.sharpness_each.shape == (2,) and hz.sharpness == hz.sharpness_each.max()
    res = gamma_sweep.gamma_sweep(probs, [0.01, 1.0], 0.02, hz.T)
    assert res.beta_err_max < 1e-8
    assert gd_limit.beta_error(res) < 1e-8 < 1e-2 < gd_limit.beta_error(res, "beta_gt")
    assert gd_limit.loss_at(res) < 1e-20 < gd_limit.loss_at(res, 0.1)
    assert objective_31.min_objective_gap(res) > -1e-12 > objective_31.min_objective_gap(res, "beta_gt")
    # Corollary 3.1 (per singular value) and the objective gap against what the measured drift explains (derived)
    assert corollary_31.cor_vs_drift_max(res) <= 1.0 < corollary_31.cor_vs_drift_max(res, 0.5)
    assert objective_31.gap_vs_drift_max(res) <= 2.0 < objective_31.gap_vs_drift_max(res, terms=2)
    # each eta-ratio's own control: an error that does not shrink with eta gives a ratio near 1
    for control in (corollary_31.cor_error_ratio(res, 0.5), gd_limit.drift_ratio(res, 1.0),
                    objective_31.gap_ratio(res, 0.5)):
        assert abs(control - 1) < 0.2


def test_per_value_bound_sees_the_bottom_branch():
    """At small gamma the per-direction tolerance on the bottom branch sqrt(2 gamma) is well below sqrt(2 gamma)
    (the global ||D||_F / (2 sqrt(2 gamma)) is not), and a bottom branch moved to sqrt(gamma) fails."""
    gen = torch.Generator().manual_seed(5)
    probs = [data.make_regression(3, 5, 2, gen)]
    res = gamma_sweep.gamma_sweep(probs, [1e-4], 0.02, 150.0)
    assert corollary_31.bottom_tolerance(res) < 0.5
    run = res.coarse
    formula = implicit_bias.corollary_spectrum(res.sigma_star[0], 1e-4, 5)
    formula[2:] = np.sqrt(1e-4)
    ratio = implicit_bias.drift_bounds(run.Z1[0], run.inv[0], 1e-4, formula, run.drift_floor[0])
    assert ratio[2:].max() > 1.0 and ratio[:2].max() <= 1.0


def test_sweep_ratios_only_over_first_order_runs():
    """The eta -> eta/2 medians use only the runs marked first order; none marked gives NaN."""
    gen = torch.Generator().manual_seed(3)
    probs = [data.make_regression(3, 5, 2, gen)]
    res = gamma_sweep.gamma_sweep(probs, [0.01, 3.0], 0.02, 60.0, first_order=[True, False])
    assert 1.6 < res.cor_ratio < 2.4 and 3.0 < res.gap_ratio < 5.0
    only = gamma_sweep.gamma_sweep(probs, [0.01], 0.02, 60.0, first_order=[True])      # the first-order run alone
    both = gamma_sweep.gamma_sweep(probs, [0.01, 3.0], 0.02, 60.0, first_order=[True, True])
    assert abs(res.cor_ratio - only.cor_ratio) <= 1e-9 * abs(only.cor_ratio)
    assert abs(both.cor_ratio - only.cor_ratio) > 1e-3 * abs(only.cor_ratio)   # control: the mark matters
    none = gamma_sweep.gamma_sweep(probs, [0.01], 0.02, 10.0, first_order=[False])
    assert math.isnan(none.cor_ratio) and math.isnan(none.drift_ratio)


def test_rank_deficient_beta_star():
    """n < k: beta_* has rank n < k; the sweep and its measurements handle the zero singular values."""
    probs = [data.make_regression(2, 6, 3, torch.Generator().manual_seed(2))]
    res = gamma_sweep.gamma_sweep(probs, [0.01], 0.02, 60.0)
    assert res.sigma_star.shape == (1, 3) and np.isfinite(corollary_31.cor_vs_drift_max(res))


def _repeated_sample(seed: int = 6):
    """A problem whose X repeats a sample (row-rank deficient), with its beta_* and labels."""
    p = data.make_regression(3, 5, 1, torch.Generator().manual_seed(seed))
    X = p.X.clone()
    X[2] = X[1]
    return p, X


def _problem(X, p):
    return data.Problem(X, X @ p.beta_gt, p.beta_star, p.beta_gt)


def test_final_rate_vanishes_without_full_row_rank():
    """A repeated sample (X not of full row rank) gives rate 0 up to rounding, so the horizon is infinite (assumption
    fails). Compared with the rounding of the operator, never with 0 exactly (5.3e-17 on one CPU, 0 on another)."""
    p, X = _repeated_sample()
    q = data.Problem(X, X @ p.beta_gt, torch.linalg.pinv(X) @ (X @ p.beta_gt), p.beta_gt)
    lo, hi, positive = training_horizon.limit_spectrum(q, 0.1)
    assert not positive and abs(lo) <= roundoff(hi, 3)
    assert training_horizon.final_rate(q, 0.1) <= roundoff(hi, 3)
    hz = training_horizon.horizon_from_data([q], [0.1])
    assert math.isinf(hz.T) and hz.rank == 2 and hz.sharpness == pytest.approx(hi)


@pytest.mark.parametrize("seed", range(8))
def test_zero_tests_agree_under_rounding_level_perturbations(seed):
    """Every zero test of the sweep (row rank of X, positive final rate, finite horizon) gives the same answer for a
    rank-deficient X and for that X perturbed at 1e-15 (relative) in random directions, and for a full-rank X and
    its perturbations: the decisions do not depend on rounding, hence not on the BLAS kernel."""
    gen = np.random.default_rng(seed)
    p, X_def = _repeated_sample()
    X_full = p.X.clone()
    for X, rank in ((X_def, 2), (X_full, 3)):
        answers = set()
        for _ in range(4):
            E = torch.as_tensor(gen.standard_normal(tuple(X.shape)))
            Xp = X + 1e-15 * float(torch.linalg.norm(X, 2)) * E / float(torch.linalg.norm(E, 2))
            q = _problem(Xp, p)
            hz = training_horizon.horizon_from_data([q], [1e-4, 0.1, 10.0])
            answers.add((training_horizon.row_rank(q), hz.rank, math.isinf(hz.T),
                         training_horizon.final_rate(q, 0.1) > 0.0, training_horizon.limit_spectrum(q, 0.1)[2]))
        full = rank == 3
        assert answers == {(rank, rank, not full, full, full)}


def test_variational_gaps_control():
    """The L-BFGS minimum does not match V* at the label-generating beta_gt."""
    p = data.make_regression(3, 5, 2, torch.Generator().manual_seed(4))
    minima = variational_certificate.variational_minima(p, [0.5], seed=123)
    assert (variational_certificate.variational_gap(minima, p, [0.5]) < 1e-7 < 1e-3
            < variational_certificate.variational_gap(minima, p, [0.5], "beta_gt"))



def test_per_value_bound_when_values_trade_places():
    """At large gamma an active value can sort below the bottom branch sqrt(2 gamma) (the atlas run n = 2, d = 8,
    k = 4, seed 6 at gamma = 10): the sorted comparison adds the gap to the value it traded places with and passes;
    moving one bottom value by more than twice the largest bound fails."""
    from stagewise.core.run import device as devices
    gen = torch.Generator().manual_seed(devices.stream_seed(6, "fig1a"))
    probs = [data.make_regression(2, 8, 4, gen)]
    hz = training_horizon.horizon_from_data(probs, [10.0], target=1e-10)
    res = gamma_sweep.gamma_sweep(probs, [10.0], 0.01, max(20.0, hz.T))
    run = res.coarse
    formula = implicit_bias.corollary_spectrum(res.sigma_star[0], 10.0, 8)
    assert run.sv_W1[0, -1] < formula[-1]                      # an active value sorted below sqrt(2 gamma)
    assert corollary_31.cor_vs_drift_max(res) <= 1.0
    moved = formula.copy()
    moved[3] *= 1.1                                           # by more than twice the largest bound
    assert implicit_bias.drift_bounds(run.Z1[0], run.inv[0], 10.0, moved, run.drift_floor[0]).max() > 1.0


def test_per_gamma_relative_tolerances_see_the_small_end():
    """Corollary 3.1 (thm-linear-riccati-cor) and Theorem 3.1(iii) (thm-linear-riccati-varopt) per gamma, relative:
    the GD limit at eta/2 is within twice the first-order change (a third of the second-order change for the
    objective) at every gamma, and the limit of I_{gamma/2} is rejected at every gamma, the smallest included,
    where an absolute tolerance could not see it."""
    gen = torch.Generator().manual_seed(5)
    probs = [data.make_regression(3, 5, 2, gen)]
    gammas = [1e-4, 1e-2, 1.0]
    hz = training_horizon.horizon_from_data(probs, gammas, target=1e-10)
    res = gamma_sweep.gamma_sweep(probs, gammas, 0.02, hz.T)
    assert corollary_31.cor_relative_extreme(res) <= 1.0 < corollary_31.cor_relative_extreme(res, 0.5, "min")
    assert objective_31.gap_relative_extreme(res) <= 1.0 < objective_31.gap_relative_extreme(res, 0.5, "min")
    assert corollary_31.bottom_relative(res) < 1e-2 and corollary_31.cor_relative_tolerance(res) < 0.29
    # the limit of I_{gamma/2} in the gamma objective: tiny at gamma = 1e-4, zero for gamma itself
    assert abs(objective_31.limit_gap(res.sigma_star[0], 1e-4, 5, 1.0)) < 1e-14
    assert 0 < objective_31.limit_gap(res.sigma_star[0], 1e-4, 5, 0.5) < 1e-3
    # outside the first-order regime a run is left out (NaN), not judged
    masked = gamma_sweep.gamma_sweep(probs, gammas, 0.02, hz.T, first_order=[True, True, False])
    assert np.isnan(corollary_31.cor_relative(masked)[2]) and np.isnan(objective_31.gap_relative(masked)[2])


def test_short_horizon_control_of_the_gap_ratio():
    """The objective-gap ratio's control: the same sweep stopped at T/16 measures unfinished training (ratio near
    1), while the full horizon gives the second-order 4."""
    gen = torch.Generator().manual_seed(5)
    probs = [data.make_regression(3, 5, 2, gen)]
    gammas = [1e-3, 1e-1]
    hz = training_horizon.horizon_from_data(probs, gammas, target=1e-10)
    assert 3.0 < gamma_sweep.gamma_sweep(probs, gammas, 0.02, hz.T).gap_ratio < 5.0
    assert abs(gamma_sweep.short_horizon_ratio(probs, gammas, 0.02, hz.T, None, "gap") - 1) < 0.2


def test_sweep_keeps_only_the_stable_pairs():
    """GD stability is a hypothesis per (data set, gamma): the sweep runs only the pairs marked stable (``keep``),
    batch elements and first-order marks restricted alike, and each remembers its data set."""
    gen = torch.Generator().manual_seed(3)
    probs = [data.make_regression(3, 5, 2, gen) for _ in range(2)]
    keep = np.array([True, True, False, True, False, True])
    res = gamma_sweep.gamma_sweep(probs, [0.01, 0.3, 3.0], 0.02, 60.0, first_order=[True] * 6, keep=keep)
    assert res.coarse.beta_err.shape == (4,) and list(res.G) == [0.01, 0.3, 0.01, 3.0]
    assert list(res.data_set) == [0, 0, 1, 1] and res.sel.shape == (4,)
    full = gamma_sweep.gamma_sweep(probs, [0.01, 0.3, 3.0], 0.02, 60.0)
    np.testing.assert_allclose(res.coarse.beta_err, full.coarse.beta_err[keep], rtol=0, atol=1e-14)


def test_near_controls_of_the_loss_and_gap_rows():
    """Thm 3.1 (thm-linear-riccati-main) and Prop. varopt: the loss one record before it first meets a tolerance is
    above it (the nearest miss on the time axis); the objective at eta against the drift at eta/2 is about four
    times the row's value (the drift is first order, the excess second order), above the tolerance 2 where the
    bound is tight (large gamma)."""
    gen = torch.Generator().manual_seed(5)
    probs = [data.make_regression(3, 5, 2, gen)]
    hz = training_horizon.horizon_from_data(probs, [0.01, 10.0], target=1e-10)
    res = gamma_sweep.gamma_sweep(probs, [0.01, 10.0], 0.02, hz.T)
    tol = 1e-16
    near = gd_limit.loss_before_tolerance(res, tol)
    assert res.loss_max <= tol < near and 0 < gd_limit.tolerance_time(res, tol) < 1
    assert gd_limit.loss_at(res, gd_limit.tolerance_time(res, tol)) <= tol
    row, mixed = objective_31.gap_vs_drift_max(res), objective_31.gap_vs_drift_steps_mixed(res)
    assert row <= 2.0 < mixed and 3.0 < mixed / row < 6.0
    assert corollary_31.global_bound_bottom(res) > 0


def test_the_global_bound_is_the_frobenius_drift_over_four_gamma():
    """global_bound_bottom: the global drift bound ||D||_F / (2 sqrt(2 gamma)) over the bottom branch sqrt(2 gamma),
    that is ||D||_F / (4 gamma), at the smallest gamma, the larger of both steps. Computed here on a planted drift D
    (control: a far larger drift at a larger gamma is left out)."""
    from types import SimpleNamespace
    d, G = 3, np.array([1e-4, 1e-4, 0.5])
    rng = np.random.default_rng(0)
    drifts = [rng.normal(size=(len(G), d, d)) * s for s in (1e-6, 3e-6)]        # coarse, fine
    drifts[1][2] *= 1e6                                                         # gamma = 0.5: not the bottom
    runs = [SimpleNamespace(inv=np.stack([2 * g * np.eye(d) + D for g, D in zip(G, drift)])) for drift in drifts]
    sweep = SimpleNamespace(coarse=runs[0], fine=runs[1], G=G, d=d)
    expected = max(np.linalg.norm(drifts[1][b]) for b in (0, 1)) / (4 * G[0])
    assert corollary_31.global_bound_bottom(sweep) == pytest.approx(expected, rel=1e-9)
    assert np.linalg.norm(drifts[1][2]) / (4 * G[2]) > 100 * expected


def test_the_sweeps_corollary_error_is_the_distance_to_the_formula():
    """Each run's Corollary 3.1 error (the value the chapter quotes) is the largest distance of the final singular
    values of W1 from the formula sqrt(gamma + sqrt(gamma^2 + sigma_i^2)), sqrt(2 gamma) below
    (thm-linear-riccati-cor), computed here from the run's own spectrum; small at the limit, and the product of the
    two (a control that is not a distance) is not."""
    gen = torch.Generator().manual_seed(3)
    probs = [data.make_regression(3, 5, 2, gen)]
    res = gamma_sweep.gamma_sweep(probs, [0.01, 1.0], 0.02, 150.0)
    for run in (res.coarse, res.fine):
        formula = np.stack([implicit_bias.corollary_spectrum(res.sigma_star[i], res.G[i], 5)
                            for i in range(len(res.G))])
        np.testing.assert_allclose(run.cor_err, np.abs(run.sv_W1 - formula).max(1), rtol=1e-12, atol=0)
        assert run.cor_err.max() < 0.05 < np.abs(run.sv_W1 * formula).max()


def test_the_learning_time_scales_with_the_data():
    """The horizon's saddle-to-saddle bound t_learn = ln(sigma_1/gamma) / (2 lambda_min(X X^T) sigma_r) (derived):
    data scaled by c (and beta_* by 1/c, the same labels) multiply lambda_min by c^2 and divide sigma_* by c, so at
    a gamma below every sigma_* t_learn is t_learn(c = 1) ln(sigma_1/(c gamma)) / (c ln(sigma_1/gamma)); a growth
    rate that is not quadratic in the smallest singular value of X (the control) would scale otherwise."""
    gen = torch.Generator().manual_seed(5)
    p = data.make_regression(3, 5, 2, gen)
    gamma = 1e-6
    base = training_horizon.horizon_from_data([p], [gamma]).t_learn
    s1 = float(torch.linalg.svdvals(p.beta_star)[0])
    for c in (0.5, 2.0):
        scaled = data.Problem(X=c * p.X, Y=p.Y, beta_star=p.beta_star / c, beta_gt=p.beta_gt / c)
        t = training_horizon.horizon_from_data([scaled], [gamma]).t_learn
        assert t == pytest.approx(base * math.log(s1 / (c * gamma)) / (c * math.log(s1 / gamma)), rel=1e-9)
