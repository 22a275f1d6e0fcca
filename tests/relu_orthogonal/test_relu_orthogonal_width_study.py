"""Tests of stagewise.relu_orthogonal.width_study: Figure 6's norm against width and the lazy He runs, small."""
import numpy as np
import pytest

from stagewise.relu_orthogonal import width_study


def test_norm_vs_width_small():
    """Fig. 6 at small widths: sandwich, GD lower bound; He init trains (not yet lazy at m = 16)."""
    w = width_study.norm_vs_width(3, 4, 4, [16], 30.0, widths=2 ** np.arange(4, 7), gd_draws=2)
    assert w.ratio.shape == (3,) and all(w.sandwich_ok) and w.gd_lower_ok
    assert w.he_pred.tolist() == [17 / 3]
    assert w.he_fit.shape == (1,) and w.he_fit[0] < 1.0 and np.all(w.he_lazy_rel >= 0)
    with pytest.raises(ValueError, match="1024"):
        w.lazy_widths()
    d, low, high = width_study.width_decrease(w)
    assert low <= d <= high
    assert np.all(np.isfinite(w.he_norm)) and np.all(w.he_ratio > 0)


def test_he_controls_at_a_lazy_width():
    """Fig. 6 at m = 1024 (thm prop-relu-orthogonal-width): the He runs fit their labels (read off the weights); 1% of
    the steps does not; the trained parameters are within half the lazy displacement of the lazy solution, the
    untrained network (the control) at exactly one; a misaligned label batch is seen by the fit."""
    w = width_study.norm_vs_width(3, 4, 2, [1024], 30.0, widths=2 ** np.arange(4, 6), gd_draws=2)
    assert w.he_fit[0] < 1e-6 < width_study.he_fit_stopped_early(w)
    assert width_study.lazy_distance_row(w) < 0.5
    assert width_study.lazy_distance_row(w, trained=False) == pytest.approx(1.0)
    assert width_study.he_init_z(w) < 4.5 < width_study.he_init_z(w, fan_in_bound=True)
    assert width_study.lazy_distance_identity(w) < 1e-9
    assert w.gd_off_mask.max() < 1e-6 < width_study.he_off_mask_row(w)       # Proposition 1 and its control
    y, W, a = w.he_runs[0]
    res = width_study.he_training(y[::-1].copy(), W, a, width_study.HE_STEPS)
    assert width_study.he_fit_ratio(res, y, W, a) > 1e-3


def test_small_init_gap_closes_as_lambda_shrinks():
    """Theorem 2 on Figure 6's small-init runs (thm-relu-orthogonal-jumps): on the same draws, gradient descent's
    norm gap below Algorithm 1 shrinks when log(1/lambda) is multiplied by four, while its gap to the minimal norm
    (the control) grows."""
    w = width_study.norm_vs_width(0, 1, 2, [64, 256], 30.0, widths=2 ** np.arange(4, 6), gd_draws=3)
    assert np.all(w.gd_gap > 0) and np.all(np.isfinite(w.gd_alg1_ratio))
    smaller = width_study.small_init_gd(w, 120.0)
    assert smaller.log_inv_lam == 120.0 and smaller.ratio.shape == (2,)
    assert width_study.gap_closing(w, smaller) < 0.75 < 1 < width_study.gap_closing(w, smaller, "min")


def test_he_fit_ratio_is_the_final_over_the_initial_loss_per_point():
    """The He runs' fit row reads the final loss over the initial one, both the mean over the n points of
    (y_i - h(x_i))^2 (c = 2), computed here from the weights; with as many draws as points a normalisation by the
    number of draws would agree, so the draws here are fewer than the points (the control)."""
    w = width_study.norm_vs_width(3, 4, 2, [16], 30.0, widths=2 ** np.arange(4, 5), gd_draws=2)
    (y, W0, a0), (Wt, at) = w.he_runs[0], w.he_final[0]
    assert y.shape[0] < y.shape[1]

    def loss(W, a):
        return np.mean((y - np.einsum("qj,qji->qi", a, np.maximum(W, 0.0))) ** 2, axis=1)
    assert w.he_fit[0] == pytest.approx(float(np.max(loss(Wt, at) / loss(W0, a0))), rel=1e-9)
