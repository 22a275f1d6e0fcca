"""Tests of stagewise.relu_orthogonal.implicit_bias: Eq. (15), its sandwich and Theorem 3's experiments, small."""
import numpy as np
import pytest

from stagewise.relu_orthogonal import implicit_bias


def test_norm_vs_n_small():
    """Eq. (15) sandwich holds in every draw; ratio to the optimum between 1 and 1 + sqrt(2)."""
    sc = implicit_bias.norm_vs_n(1, 10, 3)
    assert sc.ns.tolist() == [16, 32, 64, 128, 256, 512, 1024] and all(sc.sandwich_ok)
    assert np.all((sc.ratio >= 1) & (sc.ratio <= 1 + np.sqrt(2)))
    assert 0.3 < sc.slope_alg < 0.8 and sc.slope_opt == pytest.approx(0.5, abs=0.1)


def test_norm_vs_n_gd_small():
    """Gradient descent reaches an interpolator whose norm is at least the minimal one (Eq. 15's lower bound)."""
    gd = implicit_bias.norm_vs_n_gd(2, 5, 30.0, draws=2)
    assert gd.rows.shape == (4, 6) and gd.interpolating.any() and gd.lower_ok
    assert np.all(gd.over_alg1 > 0.5) and np.all(gd.over_alg1 < 1.5)


def test_unlearned_runs_reads_the_weights_against_the_labels():
    """Fig. 5's learned-labels row: covered runs with their whole budget learn their own labels (count 0); held
    against the next draw's labels (a misaligned batch) they do not; a run's outputs replaced by zeros (initial
    weights reported as final) does not either."""
    gd = implicit_bias.norm_vs_n_gd(2, 5, 30.0, draws=2)
    assert gd.testable.any()
    assert implicit_bias.unlearned_runs(gd) == 0
    assert implicit_bias.unlearned_runs(gd, 1) == int(gd.testable.sum())
    r = int(np.flatnonzero(gd.testable)[0])
    gd.outputs[r] = np.zeros_like(gd.outputs[r])
    assert implicit_bias.unlearned_runs(gd) == 1


def test_interpolation_threshold_gd_between_stop_and_one_point():
    """The threshold lies between the stopping loss and the plateau of the smallest label, floored at 10 GD_TOL."""
    y = np.array([1.0, -0.5, 2.0, 0.1])
    thr = implicit_bias.interpolation_threshold_gd(y)
    assert implicit_bias.GD_TOL < thr < 0.1 ** 2 / 8
    assert implicit_bias.interpolation_threshold_gd(np.array([1.0, 1e-9])) == 10 * implicit_bias.GD_TOL


def test_norm_vs_width_small():
    """Fig. 6 at small widths: sandwich, GD lower bound; He init trains (not yet lazy at m = 16)."""
    w = implicit_bias.norm_vs_width(3, 4, 4, [16], 30.0, widths=2 ** np.arange(4, 7), gd_draws=2)
    assert w.ratio.shape == (3,) and all(w.sandwich_ok) and w.gd_lower_ok
    assert w.he_pred.tolist() == [17 / 3]
    assert w.he_fit.shape == (1,) and w.he_fit[0] < 1.0 and np.all(w.he_lazy_rel >= 0)
    with pytest.raises(ValueError, match="256"):
        w.lazy_widths()
    d, low, high = implicit_bias.width_decrease(w)
    assert low <= d <= high
    assert np.all(np.isfinite(w.he_norm)) and np.all(w.he_ratio > 0)


def test_he_controls_at_a_lazy_width():
    """Fig. 6 at m = 256: the He runs fit their labels (read off the weights); 1% of the steps does not; the
    small-init norm is far from the lazy prediction; a misaligned label batch is seen by the fit."""
    w = implicit_bias.norm_vs_width(3, 4, 2, [256], 30.0, widths=2 ** np.arange(4, 6), gd_draws=2)
    assert w.he_fit[0] < 1e-6 < implicit_bias.he_fit_stopped_early(w)
    assert w.he_lazy_rel[0] < 0.5 < implicit_bias.rich_vs_lazy(w)
    y, W, a = w.he_runs[0]
    res = implicit_bias.he_training(y[::-1].copy(), W, a, implicit_bias.HE_STEPS)
    assert implicit_bias.he_fit_ratio(res, y, W, a) > 1e-3


def test_slope_window_named_from_parameters_and_band_from_noise():
    """Theorem 3's slope: the row's name is built from norm_log2n_max, a window of fewer than 3 points is refused,
    and the band is the note's [0.45, 0.62] widened by the Student-t multiple of the slope's standard error."""
    assert implicit_bias.fit_window_name(12) == "n in [2^8, 2^12]"
    assert implicit_bias.fit_window_name(14) == "n in [2^8, 2^14]"
    with pytest.raises(ValueError, match="log2n_max"):
        implicit_bias.norm_vs_n(1, 9, 3)
    few, many = implicit_bias.norm_vs_n(3, 10, 4), implicit_bias.norm_vs_n(3, 12, 20)
    assert few.slope_dof == 9 and many.slope_dof == 5 * 19
    assert 0 < many.slope_se < few.slope_se
    lo_few, hi_few = implicit_bias.slope_band(few)
    lo_many, hi_many = implicit_bias.slope_band(many)
    assert lo_few < lo_many < 0.45 and 0.62 < hi_many < hi_few
    assert not lo_many <= many.slope_point <= hi_many            # the control (one neuron per point) is rejected
