"""The Riccati closed form (stagewise.linear_riccati.riccati): Theorem C.12 (thm-linear-riccati-closed) and the
exact half-learning time (thm-linear-riccati-halftime)."""
import numpy as np
import pytest

from stagewise.linear_riccati import riccati


@pytest.mark.parametrize("gamma", [1.0, 1e-2, 1e-4])
def test_closed_form_matches_ode_and_paper(gamma):
    """Stable form = scalar ODE = paper's literal (C.33) = 2 gamma sigma_alpha / (1 - sigma_alpha^2)."""
    t = np.linspace(0, 8, 161)
    for s in (3.0, 1.0):
        cf = riccati.sigma_beta(s, gamma, t)
        assert np.abs(cf - riccati.sigma_beta_ode(s, gamma, t)).max() < 1e-8
        assert np.abs(cf - riccati.sigma_beta_paper(s, gamma, t)).max() < 1e-9
        a = riccati.sigma_alpha(s, gamma, t)
        assert np.allclose(cf, 2 * gamma * a / (1 - a ** 2), rtol=1e-8, atol=1e-12)


def test_closed_form_limits_and_stability():
    """Theorem C.12: sigma_beta(0) = 0, sigma_beta(inf) = s, finite and increasing even at gamma = 1e-300."""
    assert riccati.sigma_beta(2.0, 1e-3, 0.0) == 0.0
    assert abs(riccati.sigma_beta(2.0, 1e-3, 50.0) - 2.0) < 1e-12
    v = riccati.sigma_beta(1.0, 1e-300, np.linspace(0, 1000, 50))
    assert np.all(np.isfinite(v)) and np.all(np.diff(v) >= 0)


@pytest.mark.parametrize("gamma", [1.0, 1e-2, 1e-8])
def test_half_time_exact(gamma):
    """Proposition thm-linear-riccati-halftime: sigma_beta(t_1/2) = s/2 exactly; largest s learned first."""
    s = np.array([3.0, 2.0, 1.0])
    t = riccati.half_time(s, gamma)
    assert np.allclose(riccati.sigma_beta(s, gamma, t), s / 2, rtol=1e-12)
    assert np.all(np.diff(t) > 0)                     # largest first
