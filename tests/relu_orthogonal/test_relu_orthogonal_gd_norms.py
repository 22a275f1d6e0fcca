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


def test_off_mask_shares_stay_under_their_ceiling_at_a_large_lambda():
    """Proposition 1's row at log(1/lambda) = 10 (prop-relu-orthogonal-balance): on Figure 6's small-init runs of a
    draw where a point is fitted before a wrong-signed component reaches 0, the share carried off the mask is far
    above a fixed 1e-6 (the control: a tolerance that ignores lambda fails a correct trainer) and below the ceiling
    of what those components keep of their start; at log(1/lambda) = 30 the same draws keep less than 1e-6."""
    from stagewise.core.run.device import stream_seed
    from stagewise.relu_orthogonal import width_study
    from stagewise.relu_orthogonal.norms import off_mask_ceiling, off_mask_share
    seed = stream_seed(5, "norm-vs-width")
    for log_inv_lam, large in ((10.0, True), (30.0, False)):
        batch, _, rg, _ = width_study.small_init_runs(seed, 32, 1024, log_inv_lam, 3)
        W, a = rg.weights()
        init_norm = np.exp(-gd_norms._log_init_norm(log_inv_lam, 1024))
        share = [off_mask_share(W[q], a[q], b[0], b[3]) for q, b in enumerate(batch)]
        ceiling = [off_mask_ceiling(b[1], init_norm, a[q], b[0], b[3]) for q, b in enumerate(batch)]
        assert all(s <= c for s, c in zip(share, ceiling))
        assert (max(share) > 1e-6) is large
