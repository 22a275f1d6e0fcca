"""Tests of stagewise.relu_orthogonal.norms: Norms of the learned and minimal interpolators (Eq. 15, thm-relu-orthogonal-norms)."""
import numpy as np
import pytest

from stagewise.relu_orthogonal import algorithm, data, norms


def test_min_norm_and_sandwich():
    """Eq. (15) and the sandwich 1 <= ||theta_inf||^2/||theta*||^2 <= sqrt(max(K+, K-)) (thm-relu-orthogonal-norms)."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        y, U, s, M = data.draw_instance(int(rng.integers(1 << 30)), 24, 12, "gaussian", "random")
        lp = algorithm.algorithm1(y, M, s)
        ratio, upper = norms.sandwich(lp)
        assert ratio <= upper * (1 + 1e-12)
        if lp.uncovered.size == 0:
            assert ratio >= 1 - 1e-12
    y = np.array([3.0, -4.0, 4.0])
    assert norms.min_norm_sq(y) == pytest.approx(2 * (5 + 4))
