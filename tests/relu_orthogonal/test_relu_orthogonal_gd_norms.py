"""Tests of stagewise.relu_orthogonal.gd_norms: Figure 5's gradient descent runs, their fit and their gap to
Algorithm 1, small."""
import numpy as np
import pytest

from stagewise.relu_orthogonal import gd_norms


def test_norm_vs_n_gd_small():
    """Gradient descent reaches an interpolator whose norm is at least the minimal one (Eq. 15's lower bound)."""
    gd = gd_norms.norm_vs_n_gd(2, 5, 30.0, draws=2)
    assert gd.rows.shape == (4, 6) and gd.interpolating.any() and gd.lower_ok
    assert np.all(gd.over_alg1 > 0.5) and np.all(gd.over_alg1 < 1.5)


def test_unlearned_runs_reads_the_weights_against_the_labels():
    """Fig. 5's learned-labels row: covered runs with their whole budget learn their own labels (count 0); held
    against the next draw's labels (a misaligned batch) they do not; a run's outputs replaced by zeros (initial
    weights reported as final) does not either."""
    gd = gd_norms.norm_vs_n_gd(2, 5, 30.0, draws=2)
    assert gd.testable.any()
    assert gd_norms.unlearned_runs(gd) == 0
    assert gd_norms.unlearned_runs(gd, 1) == int(gd.testable.sum())
    r = int(np.flatnonzero(gd.testable)[0])
    gd.outputs[r] = np.zeros_like(gd.outputs[r])
    assert gd_norms.unlearned_runs(gd) == 1


def test_interpolation_threshold_gd_between_stop_and_one_point():
    """The threshold lies between the stopping loss and the plateau of the smallest label, floored at 10 GD_TOL."""
    y = np.array([1.0, -0.5, 2.0, 0.1])
    thr = gd_norms.interpolation_threshold_gd(y)
    assert gd_norms.GD_TOL < thr < 0.1 ** 2 / 8
    assert gd_norms.interpolation_threshold_gd(np.array([1.0, 1e-9])) == 10 * gd_norms.GD_TOL


def test_gap_closing_and_its_control():
    """Fig. 5's GD/Algorithm 1 gap closes as lambda -> 0 (same draws, log(1/lambda) x 4); the gap to the minimal norm
    does not."""
    gd = gd_norms.norm_vs_n_gd(5, 7, 30.0)
    assert gd_norms.gap_closing(gd) < 0.75 < gd_norms.gap_closing(gd, "min")


def test_gap_of_the_study_is_the_gap_of_a_new_run():
    """gap_closing's denominator, read off the study's own runs, equals the same runs trained again (gap_at), for
    both references; a run with a lower step cap records the cap, and its capped runs are the ones Algorithm 1 asks
    more steps of."""
    gd = gd_norms.norm_vs_n_gd(3, 6, 30.0, draws=2)
    for reference in ("alg1", "min"):
        assert gd_norms.gap_of(gd, 64, reference) == pytest.approx(gd_norms.gap_at(3, 64, 30.0, 2, reference), rel=1e-12)
    short = gd_norms.norm_vs_n_gd(3, 6, 30.0, draws=2, max_steps=2000)
    assert short.max_steps == 2000 and short.capped.sum() > gd.capped.sum()
