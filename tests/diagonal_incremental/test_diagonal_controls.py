"""The measurements the chapter's checks apply to its run and, as controls, to a modified run or theory: each
computes what it claims (closed forms, synthetic records), and the modified run is rejected where it must be."""
import math

import numpy as np
import pytest
import torch

from stagewise.diagonal_incremental import assumptions, correlated, descent, full_head, staircase
from stagewise.diagonal_incremental.algorithm import algorithm1
from stagewise.diagonal_incremental.networks import LinearDiagonal

f64 = torch.float64


def _linear(beta_star, sigma=None):
    b = torch.tensor(beta_star, dtype=f64)
    return LinearDiagonal(torch.eye(len(beta_star), dtype=f64) if sigma is None
                          else torch.tensor(sigma, dtype=f64), b)


def test_frozen_race_is_one_over_g0_sorted_and_inf_beyond_the_nonzero_gradients():
    model = _linear([1.0, -0.5, 0.0])                       # g(0) = beta* for Sigma = I
    assert np.allclose(staircase.frozen_race_times(model, 2), [1.0, 2.0])
    assert np.isinf(staircase.frozen_race_times(model, 3)[2])


def _transitions(T, C, alphas):
    """Times T_k + C_k x with x = 1/log(1/alpha): the measured law of the transition times."""
    x = 1.0 / -np.log(np.asarray(alphas))
    times = np.asarray(T)[None] + np.asarray(C)[None] * x[:, None]
    return staircase.TransitionStudy(np.asarray(T, float), x, times, np.zeros((len(T), 3)))


def test_time_errors_on_the_right_and_the_wrong_time_axis():
    ts = _transitions([1.0, 2.0], [0.5, -1.0], [1e-8, 1e-16, 1e-32, 1e-64])
    x_min = 1 / (64 * math.log(10))
    assert staircase.time_error(ts.times[-1], ts.T, ts.T) == pytest.approx(max(0.5, 0.5) * x_min)
    # read on the axis t / log(1/alpha^2): every time halved, an error of about 1/2 (the control)
    assert staircase.rescaled_time_error(ts, 0.5) == pytest.approx(0.5 + 0.25 * x_min, rel=1e-12)
    assert staircase.time_error([1.0, np.nan], ts.T, ts.T) != staircase.time_error([1.0, np.nan], ts.T, ts.T)


def test_extrapolation_in_the_right_variable_is_exact_and_the_wrong_exponent_is_not():
    ts = _transitions([1.0, 2.0, 3.0], [0.15, 1.5, -1.2], [1e-8, 1e-16, 1e-32, 1e-64])
    assert staircase.extrapolation_error(ts) < 1e-12
    assert staircase.extrapolation_error(ts, power=2) > 1e-3        # a fit in 1/log^2 cannot represent C x


def test_plateau_count_and_readouts_on_a_trajectory():
    tau = np.linspace(0, 3, 601)
    stair = np.where(tau < 1, 1.0, np.where(tau < 2, 0.5, 0.1))
    assert staircase.plateaus_match(tau, stair, 2) and not staircase.plateaus_match(tau, stair, 3)
    assert not staircase.plateaus_match(tau, 1.0 - 0.3 * tau, 2)    # a gentle slope: no drop of 20% in 0.05


def _flow_study(beta_path, tau, alphas=(1e-8,)):
    return staircase.FlowStudy(list(alphas), np.ones(2), np.zeros(2), [], tau, {"beta": beta_path[:, None, :]})


def test_teacher_error_at_the_end_and_at_half_time():
    tau = np.linspace(0, 2, 201)
    beta_star = np.array([1.0, -0.5])
    path = beta_star[None] * np.minimum(tau, 1.5)[:, None] / 1.5   # reaches the teacher at tau = 1.5
    fs = _flow_study(path, tau)
    assert staircase.teacher_error(fs, torch.tensor(beta_star)) < 1e-15
    assert staircase.teacher_error(fs, beta_star, fraction=0.5) == pytest.approx(np.linalg.norm(beta_star) / 3.0)


def test_tracking_gap_of_records_and_on_the_wrong_time_axis():
    tau = np.linspace(0, 3, 301)
    loss = np.where(tau < 1.01, 1.0, np.where(tau < 2.02, 0.5, 0.0))    # GD crosses at 1.01 and 2.02
    tr = descent.TrackingStudy(1e-4, 0.05, tau, loss, np.array([1.0, 0.5, 0.0]), np.array([1.0, 2.0]), 1.0)
    assert descent.tracking_gap(tr) == pytest.approx(0.01, abs=0.006)   # one record of 0.01 either way
    assert descent.tracking_gap(tr, rescale=0.5) > 0.45
    assert tr.tolerance == pytest.approx(0.05)
    short = descent.TrackingStudy(1e-4, 0.05, tau[:150], loss[:150], tr.levels, tr.flow_times, 1.0)
    assert not descent.tracking_gap(short) <= 1.0                      # a missed transition is NaN, never accepted


def test_gradient_descent_tracks_the_flow_to_first_order_in_eta():
    """rem-diagonal-incremental-gd-flow on Sigma = I: GD's transitions lag the exact flow's by about
    eta |g| / 2 (relative) and the lag halves with the step; the bound eta g_max holds."""
    model = _linear([1.0, -0.5])
    stages = algorithm1(model)
    u0, v0 = np.array([0.8, 0.3]), np.array([-0.2, 0.5])
    alpha, levels = 1e-4, [s.loss for s in stages]
    tau = np.linspace(0, 1.1 * stages[-1].T + 0.3, 800)
    g_max = float(assumptions.off_support_gradient(model, stages).max())
    gaps = []
    for eta in (0.05, 0.025):
        steps = int(math.ceil(tau[-1] * -math.log(alpha) / eta))
        gd = descent.gradient_descent(model, u0, v0, [alpha], [eta], steps, record_every=2)
        tr = descent.tracking_study(model, gd, 0, alpha, eta, u0, v0, levels, tau, g_max, rtol=1e-9)
        gaps.append(descent.tracking_gap(tr))
        assert gaps[-1] <= tr.tolerance
        assert descent.tracking_gap(tr, rescale=0.5) > 5 * tr.tolerance
    assert 0.35 < gaps[1] / gaps[0] < 0.65


def test_conservation_controls_rerun_the_study_with_the_same_number_of_steps():
    model = _linear([1.0, 0.6, -0.3], correlated.SIGMA)
    u0, v0 = np.array([0.3, -1.0, 0.5]), np.array([0.1, 0.4, -0.2])
    right = descent.drift_slope_extrapolated(model, u0, v0, [0.04, 0.02, 0.01], 2.0, alpha=0.1)
    wrong = descent.drift_slope_extrapolated(model, u0, v0, [0.04, 0.02, 0.01], 2.0, alpha=0.1, same_steps=True)
    assert abs(right - 1) < 0.05 and abs(wrong - 2) < 0.1
    assert descent.drift_slope_ratio(model, u0, v0, [0.04, 0.02, 0.01], 2.0, alpha=0.1) == pytest.approx(0.5, abs=0.1)


def test_saddle_eigenvalue_is_minus_the_largest_inactive_gradient():
    model = _linear([1.0, -0.5, 0.25])
    stages = algorithm1(model)                              # Sigma = I: beta^k = beta* on the support
    assert abs(assumptions.saddle_eigenvalue(model, stages) - (-1.0)) < 1e-9   # at beta = 0: max |g| = 1


def test_lemma_d4_sequence_in_the_correlated_example_and_not_for_sigma_identity():
    assert correlated.algorithm_reenters(correlated.correlated_model())
    assert not correlated.algorithm_reenters(correlated.uncorrelated_model())
    assert not correlated.leaves_and_reenters_flipped(correlated.uncorrelated_stages())


def test_full_head_truncation_and_monotone_count():
    s = np.array([[0.0, 0.0], [0.1, 0.0], [0.1, 0.1], [0.1, 0.0]])
    r = full_head.FullHeadRun(np.arange(4.0), np.zeros(4), s, np.zeros((4, 1)))
    assert r.count().tolist() == [0, 1, 2, 1] and not r.never_falls()
    half = r.truncated(0.5)
    assert len(half.tau) == 3 and half.never_falls() and half.max_jump() == 1
    assert full_head.one_at_a_time(half, 2) and not full_head.one_at_a_time(r, 2)
    assert not full_head.one_at_a_time(half, 3)                         # must end at the teacher's count
    assert full_head.final_sv_error(half, [0.1, 0.1], [0.0]) == pytest.approx(0.0, abs=1e-15)
    assert r.sv_err([0.1, 0.1], [0.0], record=0) == pytest.approx(0.1)


def test_extrapolation_uncertainty_sees_a_largest_alpha_off_the_asymptotic_law():
    ts = _transitions([1.0, 2.0], [0.5, -1.0], [1e-8, 1e-16, 1e-32])
    ts.fits = np.array([staircase.inverse_log_fit(1 / ts.x, ts.times[:, k], 2) for k in range(2)])
    assert ts.extrapolation_uncertainty < 1e-12                         # on the law T + C x: nothing to see
    ts.times[0] += 0.01                                                  # the largest alpha off the law
    ts.fits = np.array([staircase.inverse_log_fit(1 / ts.x, ts.times[:, k], 2) for k in range(2)])
    assert ts.extrapolation_uncertainty > 1e-3
