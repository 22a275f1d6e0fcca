"""The chapter's figures: data taken out of the experiments' results (``figure_data``), drawn by pure render
functions (``figures``, no torch) in any style (figures ``fig-escape-speed-*``)."""
import inspect

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from stagewise.core.figures import styles  # noqa: E402
from stagewise.escape_speed import deepening, digits, example1_rank_one, example1_widths, explosion  # noqa: E402
from stagewise.escape_speed import figure_data, figures, problems, restart_ranks  # noqa: E402
from stagewise.escape_speed import gradient_descent as gd  # noqa: E402
from figure_testing import PRESETS, assert_pure_renderers, draw  # noqa: E402

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.fixture(scope="module")
def all_data():
    """Figures "rank-one", "success", "gd-success", "depth", "explosion", "escape-time" and "digits"
    (Propositions "Example 1", 3.2, 2.2; paper Figs 1-6), from small results."""
    X, G = problems.example1_data()
    sweep = example1_widths.ascent_width_sweep(X, G, [1, 2, 4], 3, 50, 0.1, 1e-3, gen(1))
    gds = example1_widths.gd_success(X, G, [1, 2, 4], 3, 1e-3, 0.02, gen(2))
    data = {"Example 1": (X, G), "cos 3θ (24)": problems.circle_data(24, "cos3")}
    st = deepening.depth_study(data, [2, 3], 4, 4, 50, 0.1, 1e-3, gen(3))
    rr = restart_ranks.restart_ranks(data, ["Example 1"], [2, 3], 4, 3, 50, 0.1, 1e-3, gen(8), continuation=st.results)
    Xt, Yt = problems.interior_teacher(20, 5, gen(4))
    law = gd.EscapeTimeLaw({2: np.array([1e-2, 1e-3]), 3: np.array([0.04, 0.02]), 4: np.array([0.04, 0.02])},
                           {2: [1.0, 2.0], 3: [10.0, 20.0], 4: [100.0, 400.0]}, {2: 0.4, 3: -1.0, 4: -2.0})
    Xm, Ym = digits.image_data("digits", 60, gen(6))
    runs = {L: digits.train_digits(Xm, Ym, L, 6, 0.01, 20, 0.02, 1.0, 10, gen(7)) for L in (3, 2)}
    esc = {L: digits.escapes(r, (2.2, 1.5)) for L, r in runs.items()}
    return {
        "rank_one": figure_data.rank_one(example1_rank_one.rank_one_scan(X, G, 801)),
        "success": figure_data.success(sweep, gds),
        "gd_success": figure_data.gd_success(sweep, gds, np.random.default_rng(0)),
        "depth": figure_data.depth(st, [2, 3], X, rr),
        "explosion": figure_data.explosion(explosion.aligned_flow(Xt, Yt, (2, 3), 3, 0.05, 0.2, 4, gen(5))),
        "escape_time": figure_data.escape_time(law),
        "digits": figure_data.digits(runs, esc),
    }


@pytest.mark.parametrize("preset", PRESETS)
def test_every_figure_draws_from_its_sidecar_in_every_preset(all_data, preset):
    """Each figure draws from what its sidecar keeps, with no text too small or too faint for the preset."""
    for name, data in all_data.items():
        fig, style = draw(getattr(figures, name), data, preset)
        assert styles.audit(fig, style) == [], name
        plt.close(fig)


def test_figure_shapes(all_data):
    """One trace per restart, one dot series per width, two datasets, a 2 x 4 digits grid, one curve triple per depth."""
    fig, _ = draw(figures.success, all_data["success"])
    assert len(fig.axes[0].lines) == 3 * 3 + 2                 # 3 widths x 3 restarts, the sqrt(2)-1 and 1/2 lines
    fig2, _ = draw(figures.gd_success, all_data["gd_success"])
    assert len(fig2.axes[1].lines) == 3 + 3                   # one series per initialization, three references
    fig3, _ = draw(figures.depth, all_data["depth"])
    assert len(fig3.axes[0].lines) == 2 * 2
    fig4, _ = draw(figures.digits, all_data["digits"])
    assert len([ax for ax in fig4.axes]) == 8
    fig5, _ = draw(figures.explosion, all_data["explosion"])
    assert len(fig5.axes[0].lines) == 3 * 2
    for f in (fig, fig2, fig3, fig4, fig5):
        plt.close(f)


def test_digits_figure_without_an_escape():
    """A run that never escapes names it in the spectrum panels instead of failing."""
    Xm, Ym = digits.image_data("digits", 60, gen(6))
    runs = {2: digits.train_digits(Xm, Ym, 2, 6, 0.01, 5, 0.02, 1.0, 2, gen(7))}
    data = figure_data.digits(runs, {2: [None, None]})
    for preset in PRESETS:
        fig, style = draw(figures.digits, data, preset)
        assert styles.audit(fig, style) == []
        plt.close(fig)


def test_the_jitter_is_drawn_with_the_data_not_in_the_drawing(all_data):
    """gd-success: the same data draw the same dots (the random jitter lives in figure_data), and the jitter is one
    factor per initialization within 2^{+-0.15} of the width."""
    data = all_data["gd_success"]
    factors = data["x"] / data["gd_widths"][:, None]
    assert np.allclose(factors, factors[0]) and np.all(np.abs(np.log2(factors)) <= 0.15)
    a, _ = draw(figures.gd_success, data)
    b, _ = draw(figures.gd_success, data)
    assert all(np.array_equal(la.get_xdata(), lb.get_xdata()) for la, lb in zip(a.axes[1].lines, b.axes[1].lines))
    assert "rng" not in inspect.signature(figures.gd_success).parameters
    plt.close(a)
    plt.close(b)


def test_the_render_functions_import_no_torch_and_compute_nothing():
    assert_pure_renderers(figures)
    for name in ("rank_one", "success", "gd_success", "depth", "explosion", "escape_time", "digits"):
        assert list(inspect.signature(getattr(figures, name)).parameters) == ["data", "style"], name
