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
