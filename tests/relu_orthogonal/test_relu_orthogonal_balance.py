"""Tests of stagewise.relu_orthogonal.balance: Proposition 1 (prop-relu-orthogonal-balance) under GD."""
from stagewise.relu_orthogonal import balance


def test_drift_is_first_order_in_eta_and_signs_never_flip():
    """Proposition 1 + the one-step identity: the largest relative imbalance scales like eta; no sign flips."""
    bal = balance.balancedness_drift(3, [0.1, 0.2, 0.05], n=16, m=4, log_inv_lam=15.0)
    assert bal.etas.tolist() == [0.2, 0.1, 0.05]
    assert 0.85 <= bal.slope <= 1.15
    assert bal.sign_flips == 0 and bal.drift.shape == (3,)


def test_controls_rerun_the_draw_broken():
    """The same few steps for every eta give slope about 2; an unbalanced, wrong-signed start flips signs."""
    bal = balance.balancedness_drift(3, [0.1, 0.2, 0.05], n=16, m=4, log_inv_lam=15.0)
    assert 1.8 <= balance.same_steps_slope(bal) <= 2.2
    assert balance.unbalanced_flips(bal) > 0


def test_drift_is_measured_from_the_initial_imbalance():
    """An unnormalised start (||w_j|| about sqrt(n) lam, a_j = s_j lam) drifts by order one at every step size, so
    the drift no longer scales with eta."""
    import numpy as np
    from stagewise.relu_orthogonal.training import gd_numba
    bal = balance.balancedness_drift(3, [0.1, 0.2, 0.05], n=16, m=4, log_inv_lam=15.0)
    E = len(bal.etas)
    res = gd_numba(np.tile(bal.y, (E, 1)), np.repeat(4 * bal.U[None], E, 0), np.tile(bal.s, (E, 1)),
                   np.full((E, 4), -15.0), bal.etas, 1.0, bal.steps, rec_every=1000, track_balance=True)
    drift = res.imbalance_max.max(axis=1)
    assert np.all(drift > 0.5)
