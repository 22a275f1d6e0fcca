"""The gamma sweep (stagewise.linear_riccati.sweep): Theorem 3.1 (thm-linear-riccati-main), Corollary 3.1
(thm-linear-riccati-cor) and the closed-form optimum V* (thm-linear-riccati-varopt), at eta and eta/2."""
import math

import torch

from stagewise.linear_riccati import data, sweep


def test_gamma_sweep_converges_with_first_and_second_order_errors():
    """beta -> X^+ Y at zero loss; Corollary 3.1 error first order in eta, objective gap second order."""
    gen = torch.Generator().manual_seed(3)
    probs = [data.make_regression(3, 5, 2, gen) for _ in range(2)]
    res = sweep.gamma_sweep(probs, [0.01, 0.3, 3.0], 0.02, 150.0)
    assert res.coarse.beta_err.shape == (6,) and res.coarse.sv_W1.shape == (6, 5)
    assert res.beta_err_max < 1e-8 and res.loss_max < 1e-14
    assert 1.6 < res.cor_ratio < 2.4 and 1.6 < res.drift_ratio < 2.4 and 3.0 < res.gap_ratio < 5.0
    assert res.obj_gap_min_both > -1e-12


def test_variational_certificate():
    """L-BFGS agrees with V*; no gammas gives NaN."""
    p = data.make_regression(3, 5, 2, torch.Generator().manual_seed(4))
    assert sweep.variational_certificate(p, [0.5], seed=123) < 1e-7
    assert math.isnan(sweep.variational_certificate(p, [], seed=0))


def test_horizon_from_data_and_controls():
    """Theorem 3.1: the horizon predicted from the data brings GD within the target of beta_*; every control of the
    sweep (beta_gt, last saddle, untrained objective, Corollary 3.1 at gamma/2) is far off."""
    gen = torch.Generator().manual_seed(5)
    probs = [data.make_regression(3, 5, 2, gen)]
    hz = sweep.horizon_from_data(probs, [0.01, 1.0], target=1e-10)
    assert 0 < hz.rate <= sweep.final_rate(probs[0], 1.0) and hz.t_learn > 0 and hz.T > hz.t_learn
    res = sweep.gamma_sweep(probs, [0.01, 1.0], 0.02, hz.T)
    assert res.beta_err_max < 1e-8
    assert res.coarse.beta_gt_err.min() > 1e-2 and res.coarse.saddle_loss.min() > 1e-6
    assert res.coarse.obj_gap_init.min() < 0 and res.coarse.cor_err_control.max() > 0.1


def test_final_rate_vanishes_without_full_row_rank():
    """A repeated sample (X not of full row rank) gives rate 0, so the horizon is infinite (assumption fails)."""
    p = data.make_regression(3, 5, 1, torch.Generator().manual_seed(6))
    X = p.X.clone()
    X[2] = X[1]
    q = data.Problem(X, X @ p.beta_gt, torch.linalg.pinv(X) @ (X @ p.beta_gt), p.beta_gt)
    assert sweep.final_rate(q, 0.1) < 1e-12
    assert math.isinf(sweep.horizon_from_data([q], [0.1]).T)


def test_variational_gaps_control():
    """The L-BFGS minimum does not match V* at the label-generating beta_gt."""
    p = data.make_regression(3, 5, 2, torch.Generator().manual_seed(4))
    gap, control = sweep.variational_gaps(p, [0.5], seed=123)
    assert gap < 1e-7 < 1e-3 < control
