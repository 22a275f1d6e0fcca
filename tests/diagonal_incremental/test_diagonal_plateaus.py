"""Observables of the staircase of Theorem 4.1 (thm-diagonal-incremental-main)."""
import numpy as np
import pytest

from stagewise.diagonal_incremental import plateaus


def test_richardson_recovers_limit():
    """Theorem 4.1's limit T_k from tau_k(alpha) = T + C_1/log(1/alpha) + C_2/log^2(1/alpha), exactly."""
    alphas = np.array([1e-8, 1e-16, 1e-32])
    L = -np.log(alphas)
    assert plateaus.richardson(alphas, 2.0 + 3.0 / L - 4.0 / L ** 2) == pytest.approx(2.0, abs=1e-12)
