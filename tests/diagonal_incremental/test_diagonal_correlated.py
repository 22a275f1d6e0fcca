"""Lemma D.4 (lem-diagonal-incremental-d4) on the correlated example: leave and re-enter with flipped sign."""
import numpy as np

from stagewise.diagonal_incremental import correlated


def test_correlated_study_leaves_and_reenters():
    """Algorithm 1 and the exact flow agree: x_3 leaves at stage 3 and re-enters negative; the flow's loss
    never rises (gradient flow); the well-separated stages 3, 4 extrapolate to Algorithm 1's times (stages 1 and 2
    are only 0.025 apart: at these alphas their drops merge), the fit in 1/log^2(1/alpha) does not."""
    u0, v0 = np.array([0.8, -1.1, 0.6]), np.array([0.3, 0.4, -0.2])
    study = correlated.correlated_study(u0, v0)
    assert study.leaves_and_reenters and study.flow_reenters()
    assert study.beta3_between < 1e-3 and study.j_min == 2
    assert np.diff(study.flow["loss"], axis=0).max() < 1e-12
    np.testing.assert_allclose(study.T, [1 / 0.9, 1.1363636, 5.5555556, 112.2222222], rtol=1e-6)
    assert study.resolved.tolist() == [False, False, True, True] and abs(study.closest_gap - 0.0252525) < 1e-6
    assert correlated.extrapolation_error(study) < study.tolerance == 1e-3
    assert correlated.extrapolation_error(study, power=2) > 1e-3
    assert not correlated.flow_reenters(u0, v0, 1e-16)           # not yet small: x_3 has not left after T_3
