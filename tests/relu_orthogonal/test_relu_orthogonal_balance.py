"""Tests of stagewise.relu_orthogonal.balance: Proposition 1 (prop-relu-orthogonal-balance) under GD."""
from stagewise.relu_orthogonal import balance


def test_drift_is_first_order_in_eta_and_signs_never_flip():
    """Proposition 1 + the one-step identity: the largest relative imbalance scales like eta; no sign flips."""
    bal = balance.balancedness_drift(3, [0.1, 0.2, 0.05], n=16, m=4, log_inv_lam=15.0)
    assert bal.etas.tolist() == [0.2, 0.1, 0.05]
    assert 0.85 <= bal.slope <= 1.15
    assert bal.sign_flips == 0 and bal.drift.shape == (3,)
