"""The chapter's figures: data taken out of the experiments' results (``figure_data``), drawn by pure render
functions (``figures``, no torch) in any style (figures ``fig-relu-orthogonal-*``)."""
import inspect

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from stagewise.core.figures import styles  # noqa: E402
from stagewise.relu_orthogonal import (coverage, figure_data, figures, gd_norms, norm_scaling, staircase,  # noqa: E402
                                       sweep, width_study)
from figure_testing import PRESETS, assert_pure_renderers  # noqa: E402
from figure_testing import draw as _draw  # noqa: E402


@pytest.fixture(scope="module")
def small_data():
    """Every figure's data from small runs of the chapter's experiments."""
    fr = staircase.train_figure1(staircase.predict_figure1(2, 16, 4, 1.0, 0.2, 60.0))
    sw = sweep.run_sweep(sweep.sweep_draws(4, 1, 40.0), [25.0, 50.0, 100.0], 0.2)
    cov = coverage.coverage_study(np.random.default_rng(0), 100, ns=(16, 64), ms=np.arange(4, 12, 4),
                                  log2n=np.arange(4, 8))
    return {
        "staircase": figure_data.staircase(fr), "lognorms": figure_data.lognorms(fr),
        "snapshots": figure_data.snapshots(fr, np.random.default_rng(0)),
        "sweep": figure_data.sweep(sw, sweep.measure_sweep(sw)), "coverage": figure_data.coverage(cov),
        "norm_vs_n": figure_data.norm_vs_n(norm_scaling.norm_vs_n(0, 10, 2),
                                           gd_norms.norm_vs_n_gd(0, 4, 30.0, draws=1)),
        "norm_vs_width": figure_data.norm_vs_width(width_study.norm_vs_width(
            0, 1, 2, [16], 30.0, widths=2 ** np.arange(4, 6), gd_draws=1)),
    }


@pytest.mark.parametrize("preset", PRESETS)
def test_all_figures_draw_from_their_sidecar_data_in_every_preset(small_data, preset):
    """Figures 1, 3, 4 (staircase, log-norms, snapshots), the sweep, coverage, Figures 5 and 6: drawn from what a
    sidecar keeps, legible (talk and poster text sizes) and visible (dark contrast)."""
    for name, data in small_data.items():
        fig, style = _draw(getattr(figures, name), data, preset)
        assert fig.axes, name
        assert styles.audit(fig, style) == [], name
        plt.close(fig)


def test_snapshots_draw_the_random_plane_in_the_data_not_in_the_renderer(small_data):
    """The projection plane is drawn once, in figure_data: two renderings of one sidecar are the same figure."""
    data = small_data["snapshots"]
    assert data["angle"].shape == data["radius"].shape == data["predicted_angle"].shape == (6, 4)
    first, _ = _draw(figures.snapshots, data)
    second, _ = _draw(figures.snapshots, data)
    for a, b in zip(first.axes, second.axes):
        for la, lb in zip(a.lines, b.lines):
            np.testing.assert_array_equal(la.get_xydata(), lb.get_xydata())
    plt.close(first)
    plt.close(second)


def test_staircase_data_crops_at_the_first_jump_and_counts_fitted_points(small_data):
    data = small_data["staircase"]
    assert data["xlim"][0] < data["jump_epochs"][0] <= data["xlim"][1]
    assert data["fitted"].shape == (len(data["neurons"]), len(data["epochs"]))
    assert np.all(np.diff(data["fitted"], axis=1) >= 0)            # a neuron's fitted points only accumulate


def test_the_render_functions_import_no_torch_and_compute_nothing():
    assert_pure_renderers(figures)
    assert "rng" not in inspect.getsource(figures.snapshots)
