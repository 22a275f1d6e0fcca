"""Mirror-flow experiments (stagewise.linear_riccati.mirror_experiments): Theorem 3.2(a) along the beta-ODE
(thm-linear-riccati-mirror) and the k = 1 flow with Lemma C.8 (thm-linear-riccati-mirror, part (b))."""
import numpy as np
import pytest
import torch

from stagewise.linear_riccati import data, mirror_experiments


def test_mirror_identity_on_non_whitened_data():
    """The ODE fallback is used; GD -> ODE at first order; the corrected identity holds, the printed one does not."""
    p = data.make_regression(3, 5, 2, torch.Generator().manual_seed(5))
    m = mirror_experiments.mirror_identity(p, 0.05, np.linspace(0.0, 4.0, 41), [0.004, 0.002, 0.001])
    assert m.method == "ode" and "not whitened" in m.fallback_msg
    assert 0.9 < m.ode_slope < 1.1 and len(m.errs) == 3
    assert m.mirror_err < 1e-9 and m.paper_err > m.paper_floor > 0.4 and m.sigma_start < 0.5
    assert m.t_start == 1 / (8 * float(torch.linalg.svdvals(p.XtY)[0])) and m.rank == 2
    assert m.sv_ode.shape == (41, 2) and m.gd_finest["sv_beta"].shape == (41, 1, 2)


def test_k1_mirror_flow():
    """k = 1: GD approaches the dual mirror flow at first order; both loss bounds hold."""
    p = data.make_regression(3, 5, 1, torch.Generator().manual_seed(6))
    k1 = mirror_experiments.k1_mirror_flow(p, (1.0, 0.05), (0.004, 0.002), np.linspace(0.0, 5.0, 51))
    assert all(1.6 < r < 2.4 for r in k1.ratios)
    assert max(k1.bound_1t) <= 1 + 1e-8 and max(k1.bound_exp) <= 1 + 1e-8


def test_mirror_controls():
    """GD does not converge to the flipped-sign beta-ODE; on non-whitened data the singular vectors of beta move
    (Theorem C.11 fails there); off-diagonal helper."""
    p = data.make_regression(3, 5, 2, torch.Generator().manual_seed(5))
    m = mirror_experiments.mirror_identity(p, 0.05, np.linspace(0.0, 4.0, 41), [0.004, 0.002, 0.001])
    assert abs(mirror_experiments.gd_ode_order(p, m, 1.0)) < 0.5 and m.offdiag > 1e6
    assert abs(mirror_experiments.gd_ode_order(p, m) - m.ode_slope) < 1e-12      # the same measurement
    assert mirror_experiments.offdiag_units(p, m) == m.offdiag
    M = np.arange(12.0).reshape(4, 3)
    assert mirror_experiments.offdiagonal(M, 2) == 11.0
    assert mirror_experiments.offdiagonal(np.diag([1.0, 2.0]), 2) == 0.0


def test_k1_controls():
    """k = 1 controls: the unwarped flow is not the GD limit (ratio ~1); the gamma-free and gamma-free exponential
    bounds are violated at small gamma."""
    p = data.make_regression(5, 10, 1, torch.Generator().manual_seed(6))
    k1 = mirror_experiments.k1_mirror_flow(p, (1.0, 0.01), (0.004, 0.002), np.linspace(0.0, 20.0, 201))
    assert all(abs(r - 1) < 0.2 for r in mirror_experiments.k1_ratios(p, k1, warp=False))
    assert np.allclose(mirror_experiments.k1_ratios(p, k1, warp=True), k1.ratios, rtol=1e-9)
    assert mirror_experiments.k1_bound_exp_max(p, k1, False) > 1
    assert mirror_experiments.k1_bound_1t_max(p, k1, 1.0) > 1 + 1e-8 >= mirror_experiments.k1_bound_1t_max(p, k1)


def test_printed_potential_mismatch_is_sampled_where_sigma_is_of_size_gamma():
    """Issue 21: with n = 8, d = 12, k = 2 the identity sampled from t = 0.5 saw 6e-4 (sigma already ~40 gamma);
    from t0 = 1/(8 sigma_1(X^T Y)) the printed potential misses by ~0.94, above the derived floor. With k > n
    (beta_* of rank n) the corrected identity still holds on the nonzero singular values."""
    for n, d, k in ((8, 12, 2), (2, 6, 3)):
        p = data.make_regression(n, d, k, torch.Generator().manual_seed(0))
        m = mirror_experiments.mirror_identity(p, 0.01, np.linspace(0.0, 16.0, 161), [])
        assert m.paper_err > m.paper_floor > 0.4 and m.mirror_err < 1e-9 and m.rank == min(n, k)
        assert m.errs == [] and np.isnan(m.ode_slope)


def test_step_that_does_not_divide_the_record_spacing():
    """eta_white = 0.003 does not divide the spacing 0.1 of the ODE times: GD's records fall elsewhere and are
    compared with the flows at their own times (issue 21's atlas: a shape mismatch 163 vs 161 crashed the run)."""
    p = data.make_regression(3, 5, 2, torch.Generator().manual_seed(5))
    m = mirror_experiments.mirror_identity(p, 0.05, np.linspace(0.0, 2.0, 21), [0.003, 0.0015, 0.00075])
    assert 0.9 < m.ode_slope < 1.1
    p1 = data.make_regression(3, 5, 1, torch.Generator().manual_seed(6))
    k1 = mirror_experiments.k1_mirror_flow(p1, (1.0, 0.05), (0.003, 0.0015), np.linspace(0.0, 2.0, 21))
    assert all(1.6 < r < 2.4 for r in k1.ratios)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exponential_bound_with_the_solver_floor(seed):
    """d/n ~ 7: exp(-4 gamma lambda_min t) falls to ~1e-90 at t = 20, far below what the integrated loss can reach;
    against the solver's loss floor the bound holds (before: a 'failure' by a factor 1e133), and the gamma-free
    control still fails."""
    p = data.make_regression(3, 20, 1, torch.Generator().manual_seed(seed))
    k1 = mirror_experiments.k1_mirror_flow(p, (1.0, 0.01), (), np.linspace(0.0, 20.0, 201))
    assert k1.loss_floor > 0 and max(k1.bound_exp) <= 1 + 1e-8 and max(k1.bound_1t) <= 1 + 1e-8
    assert mirror_experiments.k1_bound_exp_max(p, k1, False) > 1 + 1e-8
