"""The finite-alpha correction (finite_alpha.py) against the closed form for Sigma = I
(closed_forms.orthogonal_transition_times): why shifting b^0 alone can make the prediction worse."""
import numpy as np
import pytest
import torch

from stagewise.diagonal_incremental import closed_forms, finite_alpha, networks, staircase, transitions

f64 = torch.float64
BETA_STAR = np.array([0.9, -0.5, 0.3])


@pytest.fixture(scope="module")
def orthogonal():
    """Sigma = I, mixed signs, and an initialization direction with u0 != v0 (normalised: u > |v|)."""
    model = networks.LinearDiagonal(torch.eye(3, dtype=f64), torch.tensor(BETA_STAR, dtype=f64))
    u0, v0 = np.array([1.3, 0.4, -0.9]), np.array([-0.6, 1.1, 0.2])
    alphas = [1e-8, 1e-16]
    fs = staircase.flow_study(model, alphas, u0, v0, rtol=1e-10, n_tau=3000)
    return model, u0, v0, alphas, fs, transitions.measured_times(model, fs)


def test_closed_form_matches_the_exact_flow(orthogonal):
    """tau_k(alpha) of the exact flow equals the closed form up to O(alpha^2) (here: solver accuracy)."""
    model, u0, v0, alphas, fs, times = orthogonal
    for j, alpha in enumerate(alphas):
        tau, _, _ = closed_forms.orthogonal_transition_times(BETA_STAR, u0, v0, alpha)
        np.testing.assert_allclose(times[j], tau, atol=1e-6)


def test_full_correction_predicts_exactly_the_init_term(orthogonal):
    """Algorithm 1 with b^0 and b_hi shifted gives 1/|beta*_k| + init_term: all of the theta_0 dependence."""
    model, u0, v0, alphas, fs, times = orthogonal
    for alpha in alphas:
        _, init_term, _ = closed_forms.orthogonal_transition_times(BETA_STAR, u0, v0, alpha)
        full = finite_alpha.predicted_times(model, u0, v0, alpha, "full")
        np.testing.assert_allclose(full, 1 / np.array([0.9, 0.5, 0.3]) + init_term, rtol=1e-9)


def test_b0_only_misses_the_negative_coordinates(orthogonal):
    """Shifting b^0 alone is right for beta* > 0 and off by x log(u0^2 - v0^2) / |beta*| for beta* < 0."""
    model, u0, v0, alphas, fs, times = orthogonal
    alpha = alphas[0]
    x = 1 / np.log(1 / alpha)
    full = finite_alpha.predicted_times(model, u0, v0, alpha, "full")
    b0 = finite_alpha.predicted_times(model, u0, v0, alpha, "b0")
    np.testing.assert_allclose(b0[[0, 2]], full[[0, 2]], rtol=1e-12)       # coordinates 0 and 2: beta* > 0
    un, vn = 1.1, 0.4                                                        # coordinate 1 after normalize_init
    assert b0[1] - full[1] == pytest.approx(x * np.log(un ** 2 - vn ** 2) / 0.5, rel=1e-9)


def test_study_spread_vanishes_only_for_the_full_correction(orthogonal):
    """The residual after the full correction does not depend on theta_0; the other two do."""
    model, u0, v0, alphas, fs, times = orthogonal
    fa = finite_alpha.finite_alpha_study(model, fs, times, np.array([0.7, 1.6, 1.2]),
                                         np.array([0.1, -0.3, 0.5]), rtol=1e-10)
    assert fa.alpha == 1e-8 and fa.misses["full"].shape == (2, 3)
    assert fa.spread("full") < 1e-5
    assert fa.spread("b0") > 0.01 and fa.spread("none") > 0.01
    _, _, detector = closed_forms.orthogonal_transition_times(BETA_STAR, u0, v0, 1e-8)
    np.testing.assert_allclose(fa.misses["full"][0], detector, atol=1e-6)


def test_unknown_correction_is_refused(orthogonal):
    model, u0, v0, *_ = orthogonal
    with pytest.raises(ValueError, match="correction must be"):
        finite_alpha.predicted_times(model, u0, v0, 1e-8, "half")


def test_the_studys_x_is_the_variable_of_the_thresholds_expansion():
    """The finite-alpha row's tolerance is x^2 in the variable in which the thresholds b^0, b_hi are expanded to
    first order (b^0 = 1 - x log(u0 + v0)): the study's x must be that one. Read back from the thresholds
    themselves, at several alphas (control: twice the variable, which would quadruple the tolerance, differs)."""
    from stagewise.diagonal_incremental.flow import normalize_init
    rng = np.random.default_rng(3)
    u0, v0 = rng.uniform(0.5, 1.5, 6), rng.uniform(-0.4, 0.4, 6)
    un, vn = normalize_init(u0, v0)
    for alpha in (1e-4, 1e-16, 1e-64):
        b0, _ = finite_alpha.log_scale_thresholds(u0, v0, alpha)
        read_back = (1.0 - b0) / np.log(un + vn)
        x = finite_alpha.FiniteAlphaStudy(alpha, {}).x
        assert np.allclose(read_back, x, rtol=1e-12), alpha
        assert not np.allclose(read_back, 2 * x, rtol=1e-3)
