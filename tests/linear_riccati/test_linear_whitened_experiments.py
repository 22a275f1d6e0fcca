"""Whitened-data experiments (stagewise.linear_riccati.whitened_experiments): Theorem C.12
(thm-linear-riccati-closed), exact half-times (thm-linear-riccati-halftime) and the jump process
(thm-linear-riccati-jump)."""
import copy

import numpy as np
import pytest
import torch

from stagewise.linear_riccati import data, whitened_experiments


@pytest.fixture(scope="module")
def white():
    sig = np.array([2.0, 1.0])
    pw, U, V = data.make_whitened(3, sig, torch.Generator().manual_seed(7))
    return whitened_experiments.gd_vs_closed_form(pw, U, V, sig, [1.0, 0.01], [0.02, 0.01, 0.005])


def test_gd_vs_closed_form(white):
    """GD approaches the closed form at first order; the per-mode invariant law is exact; bottom direction fixed."""
    assert white.err.shape == (3, 2) and np.all(np.abs(white.slopes - 1) < 0.1)
    assert all(r.law_err < 10 and r.bottom_drift < 10 for r in white.runs)
    assert np.abs(white.t_rich - white.t_exact).max() < 0.05 * 0.02
    assert np.all(white.err_const < 0.75) and white.rich_const < 0.01 < white.rich_const_control
    assert whitened_experiments.richardson_error(white) == white.rich_const
    assert whitened_experiments.richardson_error(white, False) == white.rich_const_control
    assert white.sharpness == 2 * np.sqrt(2.0 ** 2 + 1.0 ** 2)


@pytest.mark.parametrize("sigma_max", [3.0, 8.0, 20.0])
def test_error_constant_scales_with_sigma_max(sigma_max):
    """The GD error grows like eta sigma_max^2 (1 + ln 1/gamma) (issue 21: 4.3 and 7.8 against a fixed limit of 2 at
    sigma_max 6 and 8 with the old normalization); with the derived scale the constant stays below 0.75 while the
    control (closed form at gamma/2) stays above it."""
    sig = np.array([sigma_max, 1.0])
    eta = 0.02 / sigma_max                            # eta lambda_max ~ 0.04 * sqrt(1 + 1/sigma_max^2), first order
    pw, U, V = data.make_whitened(3, sig, torch.Generator().manual_seed(1))
    w = whitened_experiments.gd_vs_closed_form(pw, U, V, sig, [1.0, 1e-4, 1e-8], [eta, eta / 2, eta / 4])
    assert w.err_const.max() < 0.75 < w.err_const_control.max()
    assert np.all(np.abs(w.slopes - 1) < 0.1)


def test_closed_form_accuracy_and_jump_rates(white):
    """Stable form = ODE = literal (C.33); half-times = ODE roots; jump-time errors decay like 1/ln(1/gamma)."""
    acc = whitened_experiments.closed_form_accuracy(white.sigma_star, white.gammas, white.horizon)
    assert acc.cf_vs_ode < 1e-8 and acc.cf_vs_paper < 1e-9 and acc.halftime_ode_err < 1e-5
    assert acc.cf_vs_paper_units < 64
    assert np.isnan(whitened_experiments.closed_form_accuracy(white.sigma_star, [1e-6], 5.0).cf_vs_paper_units)
    jumps = whitened_experiments.jump_rates(white.sigma_star, [2, 4, 8, 16, 32], white)
    assert jumps.order_ok and jumps.rescaled.shape == (5, 2)
    assert all(-1.05 < r < -0.95 for r in jumps.rates) and jumps.scaled_err < 1e-3


def test_jump_fit_skips_modes_near_one_half(white):
    """sigma near 1/2: the 1/ln(1/gamma) term vanishes, no power qualifies, the exponent is NaN (a 'not run' row);
    the other mode still fits to -1."""
    jumps = whitened_experiments.jump_rates(np.array([2.0, 0.501]), [4, 8], white)
    assert -1.05 < jumps.rates[0] < -0.95 and np.isnan(jumps.rates[1])
    exact = whitened_experiments.jump_rates(np.array([2.0, 0.5]), [2, 4, 8, 16, 32], white)
    assert np.isnan(exact.rates[1])                  # ln(2 sigma) = 0: no 1/ln(1/gamma) term at all


def test_static_singular_vectors_and_controls(white):
    """Theorem C.11: U^T beta V stays diagonal to rounding along GD; against 2 gamma (the flow's constant) the GD
    invariant misses by far more than rounding; the closed form at gamma/2 is not GD's limit."""
    assert all(r.offdiag < 10 for r in white.runs)
    assert min(r.law_control for r in white.runs) > 1e3
    assert whitened_experiments.law_error(white, "flow") > 1e3 > 10 > whitened_experiments.law_error(white)
    assert white.err_const_control.max() > 10 and np.all(np.abs(white.slopes_control) < 0.5)
    assert np.allclose(whitened_experiments.error_constant(white, 0.5), white.err_const_control)
    assert np.allclose(whitened_experiments.fitted_orders(white), white.slopes)
    assert whitened_experiments.fitted_order_extreme(white, "max", 0.5) < 0.5


def test_closed_form_and_jump_controls(white):
    """Controls: half-time closed form, small-gamma half-time approximation, unrescaled time, no O(gamma) term,
    a non-isotropic start for the learning order; the O(gamma) remainder itself holds at every power."""
    acc = whitened_experiments.closed_form_accuracy(white.sigma_star, white.gammas, white.horizon)
    assert acc.cf_vs_ode_control > 0.1 and acc.halftime_approx_err > 1e-3
    jumps = whitened_experiments.jump_rates(white.sigma_star, [2, 4, 8, 16, 32], white)
    assert jumps.remainder_err <= 1.0 < 1e3 < jumps.remainder_control
    assert all(0.9 < r < 1.1 for r in jumps.rates_unrescaled)
    assert whitened_experiments.learning_order(white, [2, 4, 8, 16, 32])


def test_learning_order_control_is_a_run():
    """The control of the learning order: GD from a start that gives the small mode a head start learns it first
    (the crossings, measured as for the claim, do not increase); from I_gamma they do."""
    sig = np.array([3.0, 1.0])
    pw, U, V = data.make_whitened(3, sig, torch.Generator().manual_seed(2))
    cross = whitened_experiments.crossings_unequal_init(pw, U, V, sig, [1e-8], 0.004)
    assert np.all(np.isfinite(cross)) and cross[0, 1] < cross[0, 0]
    assert not whitened_experiments.learning_order_unequal_init(pw, U, V, sig, [1e-8], 0.004)


def test_early_phase_error_is_relative_and_sees_a_time_shift(white):
    """In the exponential phase GD's relative error is at most about eta s (1 + s t) (derived); the closed form at
    gamma/2 and a time axis shifted by one step are far off."""
    assert whitened_experiments.early_phase_error(white) < 1.5
    assert whitened_experiments.early_phase_error(white, 0.5) > 100
    shifted = copy.deepcopy(white)              # the fixture is shared: shift a copy
    for r in shifted.runs:
        r.modes = np.concatenate([r.modes[1:], r.modes[-1:]], axis=0)
    assert whitened_experiments.early_phase_error(shifted) > 100


def test_remainder_tested_powers():
    """Derived rate of thm-linear-riccati-jump: the O(gamma) term of the half-time remainder is above the check's
    allowance at p = 2, 4, 8 and below the rounding of t_1/2 at p = 16, 32 (sigma_* = 3, 2, 1)."""
    assert whitened_experiments.remainder_tested_powers([3.0, 2.0, 1.0], [2, 4, 8, 16, 32]) == [2, 4, 8]
