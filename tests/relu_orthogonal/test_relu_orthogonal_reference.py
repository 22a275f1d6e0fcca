"""Tests of stagewise.relu_orthogonal.reference: The compiled GD against its plain reference loop."""
import numpy as np

from stagewise.relu_orthogonal import data, reference, training


def _state(seed=0, n=10, m=4, log_lam=-3.0, signs="random"):
    y, U, s, M = data.draw_instance(seed, n, m, "gaussian", signs)
    return y, U, s, M, log_lam


def test_numba_matches_numpy_reference():
    """Compiled log-scale GD equals the plain NumPy reference loop (same GD on L_c, eq. 2)."""
    y, U, s, M, ll = _state()
    Ub, bb, lb = training.balanced_state(U, s, ll)
    res = training.gd_numba(y[None], Ub[None], bb[None], lb[None], np.array([0.3]), 1.0, np.array([3000]), rec_every=100)
    Un, bn, ln, losses = reference.gd_reference(y, Ub, bb, lb, 0.3, 1.0, 3000)
    W1, a1 = res.weights()
    np.testing.assert_allclose(W1[0], np.exp(ln)[:, None] * Un, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(a1[0], np.exp(ln) * bn, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(res.loss[0, :30], losses, rtol=1e-9)
