"""The measurements the chapter's checks apply to its run and, as controls, to a modified run or theory: each
computes what it claims (closed forms, synthetic records), and the modified run is rejected where it must be."""
import math

import numpy as np
import pytest
import torch

from stagewise.diagonal_incremental import (assumptions, correlated, descent, full_head, plateau_states, staircase,
                                            tracking, transitions)
from stagewise.diagonal_incremental.algorithm import algorithm1
from stagewise.diagonal_incremental.networks import LinearDiagonal

f64 = torch.float64


def _linear(beta_star, sigma=None):
    b = torch.tensor(beta_star, dtype=f64)
    return LinearDiagonal(torch.eye(len(beta_star), dtype=f64) if sigma is None
                          else torch.tensor(sigma, dtype=f64), b)


def _transitions(T, C, alphas):
    """Times T_k + C_k x with x = 1/log(1/alpha): the measured law of the transition times."""
    x = 1.0 / -np.log(np.asarray(alphas))
    times = np.asarray(T)[None] + np.asarray(C)[None] * x[:, None]
    return transitions.TransitionStudy(np.asarray(T, float), x, times, np.zeros((len(T), 3)))


def test_time_error_relative_to_the_prediction():
    ts = _transitions([1.0, 2.0], [0.5, -1.0], [1e-8, 1e-16, 1e-32, 1e-64])
    x_min = 1 / (64 * math.log(10))
    assert transitions.time_error(ts.times[-1], ts.T, ts.T) == pytest.approx(max(0.5, 0.5) * x_min)
    assert transitions.time_error([1.0, np.nan], ts.T, ts.T) != transitions.time_error([1.0, np.nan], ts.T, ts.T)


def test_extrapolation_in_the_right_variable_is_exact_and_the_wrong_exponent_is_not():
    ts = _transitions([1.0, 2.0, 3.0], [0.15, 1.5, -1.2], [1e-8, 1e-16, 1e-32, 1e-64])
    assert transitions.extrapolation_error(ts) < 1e-12
    assert transitions.extrapolation_error(ts, power=2) > 1e-3        # a fit in 1/log^2 cannot represent C x


def test_plateau_count_and_readouts_on_a_trajectory():
    tau = np.linspace(0, 3, 601)
    stair = np.where(tau < 1, 1.0, np.where(tau < 2, 0.5, 0.1))
    levels = [1.0, 0.5, 0.1]
    assert plateau_states.plateaus_match(tau, stair, levels)
    assert not plateau_states.plateaus_match(tau, stair, [1.0, 0.5, 0.3, 0.1])
    assert not plateau_states.plateaus_match(tau, 1.0 - 0.3 * tau, levels)  # a gentle slope: no drop of 25% in 0.05


def _flow_study(beta_path, tau, alphas=(1e-8,)):
    return staircase.FlowStudy(list(alphas), np.ones(2), np.zeros(2), [], tau, {"beta": beta_path[:, None, :]})


def test_teacher_error_at_the_end_and_at_half_time():
    tau = np.linspace(0, 2, 201)
    beta_star = np.array([1.0, -0.5])
    path = beta_star[None] * np.minimum(tau, 1.5)[:, None] / 1.5   # reaches the teacher at tau = 1.5
    fs = _flow_study(path, tau)
    assert staircase.teacher_error(fs, torch.tensor(beta_star)) < 1e-15
    assert staircase.teacher_error(fs, beta_star, fraction=0.5) == pytest.approx(np.linalg.norm(beta_star) / 3.0)


def test_time_miss_against_the_rates_and_against_the_flow():
    """The GD-delay measure: GD's miss against the prediction in units of each stage's predicted delay, over the
    held stages the prediction reaches; against gradient flow's times (the control) it is about one unit; a
    transition GD misses is NaN, never accepted; unsettled stages are left out."""
    tr = tracking.TrackingStudy(1e-4, 0.05, np.array([1.02, 2.03]), np.array([1.0, 2.0]), np.array([1.021, 2.029]))
    assert tracking.time_miss(tr) == pytest.approx(max(0.001 / 0.021, 0.001 / 0.029))
    assert tracking.time_miss(tr, "flow") == pytest.approx(max(0.02 / 0.021, 0.03 / 0.029))
    np.testing.assert_allclose(tr.predicted_delay, [0.021, 0.0145])
    assert tr.tolerance == 0.25
    missed = tracking.TrackingStudy(1e-4, 0.05, np.array([1.02, np.nan]), tr.flow_times, tr.rate_times)
    assert not tracking.time_miss(missed) <= 1.0
    late = tracking.TrackingStudy(1e-4, 0.05, np.array([1.02, np.nan]), np.array([1.0, np.nan]),
                                  np.array([1.021, np.nan]))            # the prediction does not reach stage 2
    assert tracking.time_miss(late) == pytest.approx(0.001 / 0.021)
    held = missed.settled_only([True, True, False])                        # plateau 2 unsettled: stage 2 left out
    assert held.reached.tolist() == [True, False] and tracking.time_miss(held) == pytest.approx(0.001 / 0.021)
    assert tracking.time_miss(tr.settled_only([False, True, True])) == pytest.approx(0.001 / 0.029)


def test_gradient_descent_runs_the_race_at_its_rates():
    """rem-diagonal-incremental-gd-flow on Sigma = I: GD's transitions lag the exact flow's by about eta |g| / 2
    (relative), the lag halves with the step, and the clocks at the rates log(1 +- eta g)/eta predict it to a
    quarter of the smallest predicted delay; the flow's own times (no delay) do not."""
    model = _linear([1.0, -0.5])
    stages = algorithm1(model)
    u0, v0 = np.array([0.8, 0.3]), np.array([-0.2, 0.5])
    alpha, levels = 1e-4, [s.loss for s in stages]
    tau = np.linspace(0, 1.1 * stages[-1].T + 0.3, 800)
    delays = []
    for eta in (0.05, 0.025):
        steps = int(math.ceil(tau[-1] * -math.log(alpha) / eta))
        gd = descent.gradient_descent(model, u0, v0, [alpha], [eta], steps, record_every=2)
        tr = tracking.tracking_study(model, gd, 0, alpha, eta, u0, v0, levels, tau, rtol=1e-9)
        delays.append(tr.measured_delay[0])
        assert tracking.time_miss(tr) <= tr.tolerance < 0.75 < tracking.time_miss(tr, "flow")
        assert tr.predicted_delay[0] == pytest.approx(0.5 * eta * 1.0, rel=0.25)   # g = 1 drives stage 1
    assert 0.35 < delays[1] / delays[0] < 0.65


def test_rate_flow_at_eta_zero_is_gradient_flow():
    model = _linear([1.0, -0.5])
    u0, v0 = np.array([0.8, 0.3]), np.array([-0.2, 0.5])
    tau = np.linspace(0, 3, 61)
    mine = tracking.rate_flow(model, 1e-8, u0, v0, tau, 0.0, rtol=1e-10, atol=1e-12)
    ref = staircase.log_scale_flow(model, [1e-8], u0, v0, tau, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mine["beta"], ref["beta"][:, 0], atol=1e-7)


def test_conservation_controls_rerun_the_study_with_the_same_number_of_steps():
    model = _linear([1.0, 0.6, -0.3], correlated.SIGMA)
    u0, v0 = np.array([0.3, -1.0, 0.5]), np.array([0.1, 0.4, -0.2])
    right = descent.drift_slope_extrapolated(model, u0, v0, [0.04, 0.02, 0.01], 2.0, alpha=0.1)
    wrong = descent.drift_slope_extrapolated(model, u0, v0, [0.04, 0.02, 0.01], 2.0, alpha=0.1, same_steps=True)
    assert abs(right - 1) < 0.05 and abs(wrong - 2) < 0.1
    assert descent.drift_slope_ratio(model, u0, v0, [0.04, 0.02, 0.01], 2.0, alpha=0.1) == pytest.approx(0.5, abs=0.1)


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
    ts.fits = np.array([transitions.inverse_log_fit(1 / ts.x, ts.times[:, k], 2) for k in range(2)])
    assert ts.extrapolation_uncertainty < 1e-12                         # on the law T + C x: nothing to see
    ts.times[0] += 0.01                                                  # the largest alpha off the law
    ts.fits = np.array([transitions.inverse_log_fit(1 / ts.x, ts.times[:, k], 2) for k in range(2)])
    assert ts.extrapolation_uncertainty > 1e-3


def test_memoryless_race_restarts_the_clocks_and_misses_the_later_stages():
    """Theorem 4.1 / Algorithm 1 (eq. 10-12): with Sigma = I the race keeps b^k; a memoryless race (b = 1 at every
    stage) gives T_k = sum of 1/|beta*_j| instead of 1/|beta*_k| (the control of the transition-time check)."""
    model = _linear([1.0, -0.5, 0.25])
    right = np.array([s.T for s in algorithm1(model)[1:]])
    wrong = np.array([s.T for s in algorithm1(model, memoryless=True)[1:]])
    assert np.allclose(right, [1.0, 2.0, 4.0]) and np.allclose(wrong, [1.0, 3.0, 7.0])
    ts = _transitions(right, [0.0, 0.0, 0.0], [1e-8, 1e-64])
    assert transitions.memoryless_time_error(model, ts) == pytest.approx(3.0 / 7.0)


def test_entries_outside_the_support_during_a_transition():
    """Theorem 4.1: supp(theta^{k+1}) minus supp(theta^k) is within {i_k}, read along the whole trajectory."""
    model = _linear([1.0, -0.5, 0.25])
    stages = algorithm1(model)                               # i_0 = 0, i_1 = 1, i_2 = 2
    tau = np.linspace(0, 5, 501)
    beta = np.zeros((501, 3))
    beta[tau > 1, 0], beta[tau > 2, 1], beta[tau > 4, 2] = 1.0, -0.5, 0.25
    mids = np.array([0.5, 1.5, 3.0, 4.5])
    assert plateau_states.entries_outside(tau, beta, mids, stages) == 0.0
    beta[(tau > 1.2) & (tau < 1.4), 2] = 0.01                # coordinate 2 switches on for a while in transition 2
    assert plateau_states.entries_outside(tau, beta, mids, stages) == pytest.approx(0.01)
    assert plateau_states.entries_outside(tau, beta, mids, stages, resolved=[True, False, True, True]) == 0.0


def test_balanced_hessian_is_positive_on_the_support_and_a_saddle_with_the_next_coordinate():
    """Assumption 4.4: the Hessian of u -> Ltilde(s u^2) on supp u^k is D H_S D (D = diag(2 s u)); on
    supp u^k + {i_k} it has -2 |g_{i_k}| along the new coordinate."""
    model = _linear([1.0, -0.5, 0.25])
    stages = algorithm1(model)
    assert assumptions.balanced_hessian_min(model, stages) == pytest.approx(4 * 0.25, rel=1e-7)   # 4 |beta_j|
    assert assumptions.balanced_hessian_min(model, stages, next_coordinate=True) == pytest.approx(-2.0, rel=1e-7)
    assert 2e-9 <= assumptions.balanced_hessian_margin(stages) < 3e-9


def test_stage_b_reruns_agree_on_the_support_and_not_with_noise_off_it():
    """Assumption 4.5: reruns from seeds of several sizes agree; noise outside supp u^k + {i_k} does not."""
    model = _linear([1.0, 0.6, -0.3], correlated.SIGMA)
    stages = algorithm1(model)
    assert assumptions.stage_b_spread(model, stages, seed=0) < 1e-7
    assert assumptions.stage_b_off_support(model, stages, seed=0) > 0.1


def test_lemma_d4_in_the_papers_direction():
    """Lemma D.4: an inactive coordinate with b^k in {0, 2} has just left, with the stated sign of g."""
    model = correlated.correlated_model()
    stages = algorithm1(model)
    assert correlated.lemma_d4_holds(model, stages)
    stages[3].b = stages[3].b.copy()
    stages[3].b[2] = 2.0                                     # b = 2 while g_3(theta^3) < 0: the lemma fails
    assert not correlated.lemma_d4_holds(model, stages)


def test_one_at_a_time_needs_the_earlier_transition_to_be_over():
    """The full head's "one at a time": counts that rise by one are not enough; the singular values already on
    must be past half their final value when the next switches on."""
    s_seq = np.array([[0.0, 0.0], [0.1, 0.0], [0.9, 0.0], [1.0, 0.1], [1.0, 1.0]])
    s_par = np.array([[0.0, 0.0], [0.1, 0.0], [0.2, 0.1], [0.6, 0.5], [1.0, 1.0]])
    seq = full_head.FullHeadRun(np.arange(5.0), np.zeros(5), s_seq, np.zeros((5, 1)))
    par = full_head.FullHeadRun(np.arange(5.0), np.zeros(5), s_par, np.zeros((5, 1)))
    assert full_head.settled_fraction(seq) == pytest.approx(1.0) and full_head.one_at_a_time(seq, 2)
    assert full_head.settled_fraction(par) == pytest.approx(0.2) and not full_head.one_at_a_time(par, 2)
    assert par.max_jump() == 1 and par.never_falls()        # the count clauses alone pass the overlapping run
