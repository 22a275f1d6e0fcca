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


def test_off_mask_share_counts_only_neurons_outside_the_mask():
    """Proposition 1 on a trained network (prop-relu-orthogonal-balance): the share of each label carried by neurons
    that are not in its mask column (wrong sign or inactive at init)."""
    y = np.array([2.0, -1.0])
    W = np.array([[1.0, 0.5], [0.0, 1.0]])                # neuron 0 active on both points, neuron 1 on point 1
    a = np.array([2.0, -1.0])
    M = np.array([[True, False], [False, True]])          # point 0: neuron 0; point 1: neuron 1
    assert norms.off_mask_share(W, a, y, M) == 1.0              # neuron 0 carries 2 * 0.5 = 1 of |y_1| = 1
    assert norms.off_mask_share(W, a, y, np.array([[True, False], [True, True]])) == 0.0


def test_off_mask_ceiling_is_what_the_components_off_the_mask_keep_of_their_start():
    """Proposition 1's allowance on a trained network (prop-relu-orthogonal-balance): a component off its point's
    mask ends in [0, w_ji(0)], so the share it carries is at most |a_j(T)| relu(w_ji(0)) / |y_i|; a component that
    starts non-positive allows nothing. The ceiling scales with the initial norm (lambda / sqrt(m))."""
    y = np.array([2.0, -1.0])
    U0 = np.array([[0.6, 0.8], [-0.6, 0.8]])               # unit directions: neuron 1 starts non-positive on point 0
    a = np.array([2.0, -1.0])
    M = np.array([[True, False], [False, True]])          # point 0: neuron 0; point 1: neuron 1
    # point 0: neuron 1 off the mask, its component non-positive: nothing; point 1: neuron 0, 2 * 0.8 * 0.1 / 1
    assert norms.off_mask_ceiling(U0, 0.1, a, y, M) == pytest.approx(0.16)
    assert norms.off_mask_ceiling(U0, 1e-3, a, y, M) == pytest.approx(1.6e-3)
    assert norms.off_mask_ceiling(U0, 0.1, a, y, np.ones((2, 2), bool)) == 0.0
