"""The chapter's table of Algorithm 1's stages (alg-diagonal-incremental-alg1) and its eight figures: data taken
out of the studies (``figure_data``), drawn by pure render functions (``figures``, no torch) in any style
(figures ``fig-diagonal-incremental-*``)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from stagewise.core.figures import styles  # noqa: E402
from stagewise.diagonal_incremental import (algorithm, correlated, descent, figure_data, figures,  # noqa: E402
                                            full_head, log_scale, networks, perturbations, plateau_states,
                                            staircase, tables, transitions)
from figure_testing import PRESETS, assert_pure_renderers, draw  # noqa: E402

D = 2                                       # coordinates 0, 1 key-query, 2, 3 value-output


def _draw(render, data, preset="book"):
    fig, style = draw(render, data, preset)
    assert styles.audit(fig, style) == [], (render.__name__, preset)
    return fig


@pytest.fixture(scope="module")
def data():
    """Every figure's data from small studies: Sigma = I with four coordinates (closed-form stages)."""
    model = networks.LinearDiagonal(torch.eye(4, dtype=torch.float64),
                                    torch.tensor([0.9, 0.0, -0.5, 0.3], dtype=torch.float64))
    u0, v0 = np.array([1.0, 0.7, -1.2, 0.4]), np.array([0.3, -0.2, 0.5, -0.6])
    fs = staircase.flow_study(model, [1e-16, 1e-32, 1e-64], u0, v0, rtol=1e-8, n_tau=401)
    ts = transitions.transition_study(model, fs)
    ps = plateau_states.plateau_study(fs, D)
    gd = descent.gradient_descent(model, u0, v0, [1e-2, 1e-4], 0.1, 600, record_every=5)
    cs = descent.ConservationStudy([0.1, 0.05, 0.025], [1e-2, 5.2e-3, 2.6e-3], 0.1, np.array([0.94, 0.97]))
    corr = correlated.correlated_study(np.array([0.8, -1.1, 0.6]), np.array([0.3, 0.4, -0.2]))
    t = np.linspace(0, 20, 41)
    pert = perturbations.PerturbationStudy(t, np.stack([np.exp(-t), 0.1 * np.exp(-0.5 * t)]), [20, 30])
    newc = perturbations.PerturbationStudy(t, np.stack([np.exp(-t)]), [25])
    X, Y, _, _ = full_head.full_head_teacher(10, 4, 5, [0.6, 0.3], [1.0, 0.5], seed=0)
    fh = full_head.full_head_gd(X, Y, 1e-3, 0.05, 40, torch.Generator().manual_seed(0), record_every=10)
    return {"loss": figure_data.loss(fs, gd, [1e-2, 1e-4]), "entries": figure_data.entries(fs, ps, D),
            "times": figure_data.times(ts),
            "logscale": figure_data.logscale(fs, log_scale.log_scale_study(fs), D),
            "conservation": figure_data.conservation(cs), "reenter": figure_data.reenter(corr),
            "perturb": figure_data.perturb(pert, newc), "fullhead": figure_data.fullhead(fh)}


def test_stage_table():
    """One table row per stage with KQ/VO coordinate names."""
    m = networks.LinearDiagonal(torch.eye(4, dtype=torch.float64),
                                torch.tensor([0.9, 0.0, -0.5, 0.3], dtype=torch.float64))
    lines = tables.stage_table(algorithm.algorithm1(m), d=2).data.splitlines()
    assert len(lines) == 2 + 3 and "| 1 | 1.1111 | KQ 0 | + |" in lines[2] and "VO 0" in lines[3]


@pytest.mark.parametrize("preset", PRESETS)
def test_eight_figures_draw_from_their_sidecar_data(data, preset):
    """Every figure draws from what its sidecar keeps, in the book, on a dark slide and on a poster, with no
    text under the preset's minimum size and none below 4.5:1 contrast on the dark background."""
    for name, values in data.items():
        plt.close(_draw(getattr(figures, name), values, preset))


def test_figures_show_what_the_studies_hold(data):
    """The curves drawn are the studies' numbers: one line per alpha and the staircase in the loss figure, one
    line per entry, three betas, one curve per perturbed plateau, the top singular values."""
    fig = _draw(figures.loss, data["loss"])
    assert len(fig.axes[0].lines) == 2 + 3 + 1
    assert data["loss"]["descent"]["a0"]["tau"].max() <= data["loss"]["tau_end"]
    plt.close(fig)
    fig = _draw(figures.entries, data["entries"])
    assert len(fig.axes) == 4 and len(fig.axes[0].lines) == D + 3     # entries and three dashed T_k
    assert len(fig.axes[2].lines) == 3 + 2                          # three T_k, the rank and Algorithm 1's
    assert data["entries"]["ranks"].shape[1] == 2 and data["entries"]["ranks_alg"].shape == (4, 2)
    plt.close(fig)
    assert data["times"]["fit"].shape == (50, 3)
    np.testing.assert_allclose(data["times"]["fit"][0], data["times"]["T"], atol=0.05)   # the fits reach T_k
    assert data["reenter"]["beta"].shape[1] == 3
    np.testing.assert_array_equal(data["perturb"]["plateau"]["stop_t"], [10.0, 15.0])
    np.testing.assert_array_equal(data["perturb"]["stage_b"]["stop_t"], [12.5])
    assert data["fullhead"]["s_kq"].shape[1] == 4
    np.testing.assert_allclose(data["conservation"]["reference"], [1e-2, 5e-3, 2.5e-3])


def test_perturb_figure_without_plateaus():
    """No plateau to perturb (a one-stage instance): an empty figure, not a crash or a warning."""
    t = np.linspace(0, 1, 3)
    none = perturbations.PerturbationStudy(t, np.zeros((0, 3)), [])
    empty = figure_data.perturb(none, none)
    plt.close(_draw(figures.perturb, empty, "talk-16x9-dark"))


def test_the_render_functions_import_no_torch_and_compute_nothing():
    assert_pure_renderers(figures)
