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
    assert sc.bound.shape == (7, 3) and np.all(sc.split_bound >= sc.bound * (1 - 1e-12))


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
    with pytest.raises(ValueError, match="1024"):
        w.lazy_widths()
    d, low, high = implicit_bias.width_decrease(w)
    assert low <= d <= high
    assert np.all(np.isfinite(w.he_norm)) and np.all(w.he_ratio > 0)


def test_he_controls_at_a_lazy_width():
    """Fig. 6 at m = 1024 (thm prop-relu-orthogonal-width): the He runs fit their labels (read off the weights); 1% of
    the steps does not; the trained parameters are within half the lazy displacement of the lazy solution, the
    untrained network (the control) at exactly one; a misaligned label batch is seen by the fit."""
    w = implicit_bias.norm_vs_width(3, 4, 2, [1024], 30.0, widths=2 ** np.arange(4, 6), gd_draws=2)
    assert w.he_fit[0] < 1e-6 < implicit_bias.he_fit_stopped_early(w)
    assert implicit_bias.lazy_distance_row(w) < 0.5
    assert implicit_bias.lazy_distance_row(w, trained=False) == pytest.approx(1.0)
    y, W, a = w.he_runs[0]
    res = implicit_bias.he_training(y[::-1].copy(), W, a, implicit_bias.HE_STEPS)
    assert implicit_bias.he_fit_ratio(res, y, W, a) > 1e-3


def test_theorem3_growth_separates_sqrt_n_from_sqrt_n_log_n():
    """Thm thm-relu-orthogonal-sqrtn with bounded labels: the growth exponent in ln n at the top of [2^12, 2^14] is
    below 1/4, the equal-split interpolator's (norm ~ sqrt(n ln n)) above it; the ratio to the optimum lies in
    [1, 1 + sqrt 2] and the control's does not; the window's name is built from the parameter."""
    assert implicit_bias.fit_window_name(14) == "n in [2^12, 2^14]"
    sc = implicit_bias.norm_vs_n(3, 14, 10, "bounded")
    assert implicit_bias.bound_growth(sc) < implicit_bias.GROWTH_TOL < implicit_bias.split_growth(sc)
    assert 1 <= sc.ratio.max() <= implicit_bias.HALVING_LIMIT < implicit_bias.max_split_ratio(sc)


def test_growth_in_log_n_exact_on_powers_of_ln_n():
    """The growth exponent of (ln n)^p is p, with zero spread when the draws agree."""
    ns = 2 ** np.arange(10, 15)
    vals = np.repeat((np.log(ns) ** 0.5)[:, None], 3, axis=1)
    e, se = implicit_bias.growth_in_log_n(ns, vals)
    assert e == pytest.approx(0.5, rel=1e-12) and se == pytest.approx(0.0, abs=1e-12)


def test_gap_closing_and_its_control():
    """Fig. 5's GD/Algorithm 1 gap closes as lambda -> 0 (same draws, log(1/lambda) x 4); the gap to the minimal norm
    does not."""
    gd = implicit_bias.norm_vs_n_gd(5, 7, 30.0)
    assert implicit_bias.gap_closing(gd) < 0.75 < implicit_bias.gap_closing(gd, "min")
