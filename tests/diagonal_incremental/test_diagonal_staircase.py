"""Theorem 4.1 (thm-diagonal-incremental-main) measured by the staircase studies, on Sigma = I where
Algorithm 1 has the closed form T_k = 1/|beta*|_(k)."""
import numpy as np
import pytest
import torch

from stagewise.diagonal_incremental import (closed_forms, log_scale, networks, plateau_states, relaxation, staircase,
                                            transitions)

BETA_STAR = [0.9, -0.5, 0.3]


@pytest.fixture(scope="module")
def studies():
    model = networks.LinearDiagonal(torch.eye(3, dtype=torch.float64), torch.tensor(BETA_STAR, dtype=torch.float64))
    fs = staircase.flow_study(model, [1e-16, 1e-32, 1e-64], np.array([1.0, 0.7, -1.2]), np.array([0.3, -0.2, 0.5]),
                              rtol=1e-9, n_tau=801)
    return model, fs, transitions.transition_study(model, fs)


def test_flow_study_and_transition_times(studies):
    """Stage times of Algorithm 1 and their extrapolation from the exact flow (Theorem 4.1)."""
    model, fs, ts = studies
    T, _, _ = closed_forms.closed_form_orthogonal(np.array(BETA_STAR))
    np.testing.assert_allclose(fs.T, T, rtol=1e-10)
    assert fs.K == 3 and fs.j_min == 2 and fs.tau_end == pytest.approx(1.1 * T[-1] + 0.3)
    assert ts.complete and ts.times.shape == (3, 3)
    assert ts.rel_err_extrap.max() < 2e-3 and ts.rel_err_raw.max() < 0.05
    np.testing.assert_allclose(ts.C_k, (ts.times[2] - T) * np.log(1e64))
    assert fs.first_active() == 0                       # the largest |beta*_i| switches on first


def test_plateau_and_log_scale_studies(studies):
    """Theorem 4.1 on the plateaus (losses, weights, ranks) and the bookkeeping b^k of eq. (12)."""
    model, fs, ts = studies
    ps = plateau_states.plateau_study(fs, d=2)
    assert ps.n_plateaus == 4 and ps.staircase
    assert ps.loss_err < 1e-6 and ps.beta_err < 1e-6
    ls = log_scale.log_scale_study(fs)
    assert ls.b_err < 0.05 and ls.b_err_const == pytest.approx(ls.b_err * np.log(1e64))


def test_relaxation_rates_and_resolved_plateaus(studies):
    """Sigma = I: on plateau k the balanced flow relaxes at r_k = 2 min_{j in S_k} |beta*_j|; a plateau whose
    midpoint is fewer than log(1/tol) e-foldings past its transition is left out of the plateau checks."""
    model, fs, ts = studies
    rates = relaxation.relaxation_rates(model, fs.stages)
    np.testing.assert_allclose(rates[1:], [1.8, 1.0, 0.6], rtol=1e-8)
    assert np.isinf(rates[0])
    n = relaxation.relaxation_numbers(rates, [0.0, 1.0, 2.0, 3.0], [0.5, 1.5, 2.5, 3.5], 1e-10)
    np.testing.assert_allclose(n[1:], 0.5 * np.log(1e10) * rates[1:])
    ps = plateau_states.plateau_study(fs, 2, rates, ts.times[fs.j_min], tol=1e-4)
    assert ps.resolved.all() and ps.staircase and ps.beta_err < 1e-4
    strict = plateau_states.plateau_study(fs, 2, rates, ts.times[fs.j_min], tol=1e-300)   # nothing settles that far
    assert strict.unresolved == [1, 2, 3] and strict.resolved[0]


def test_the_initial_offset_is_the_log_of_the_normalised_sum(studies):
    """The log-scale study's initial offset (the b(0) row's quantity, eq. (12)) is max_i |log(u_i(0) + v_i(0))| of
    the normalised initialization, in units of 1/log(1/alpha); a power u^v in place of the sum (the control) gives
    another number."""
    from stagewise.diagonal_incremental.flow import normalize_init
    model, fs, ts = studies
    un, vn = normalize_init(fs.u0, fs.v0)
    ls = log_scale.log_scale_study(fs)
    assert ls.b0_offset_const == pytest.approx(float(np.abs(np.log(un + vn)).max()), rel=1e-12)
    assert abs(ls.b0_offset_const - float(np.abs(np.log(un ** vn)).max())) > 1e-3
