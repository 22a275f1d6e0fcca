"""Lemma D.4 (lem-diagonal-incremental-d4) on the correlated example: leave and re-enter with flipped sign."""
import numpy as np

from stagewise.diagonal_incremental import correlated


def test_correlated_study_leaves_and_reenters():
    """Algorithm 1 and the exact flow agree: x_3 leaves at stage 3 and re-enters negative; the flow's loss
    never rises (gradient flow); the well-separated stages 1, 3, 4 extrapolate to Algorithm 1's times
    (stage 2 is only 0.025 after stage 1: at these alphas its extrapolation depends on theta_0)."""
    study = correlated.correlated_study(np.array([0.8, -1.1, 0.6]), np.array([0.3, 0.4, -0.2]))
    assert study.leaves_and_reenters
    assert study.beta3_between < 1e-3 and study.j_min == 2
    assert np.diff(study.flow["loss"], axis=0).max() < 1e-12
    np.testing.assert_allclose(study.T, [1 / 0.9, 1.1363636, 5.5555556, 112.2222222], rtol=1e-6)
    np.testing.assert_allclose(study.extrapolated[[0, 2, 3]], study.T[[0, 2, 3]], rtol=0.01)
