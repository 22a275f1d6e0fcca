"""The chapter's figures: data taken out of the experiments' results (``figure_data``), drawn by pure render
functions (``figures``, no torch) in any style (figures ``fig-conservation-laws-*``)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from stagewise.conservation_laws import (drift_coefficient, drift_experiment, figure_data,  # noqa: E402
                                         figures, flow_experiment, layer_growth, problem_set)
from stagewise.core.figures import styles  # noqa: E402
from figure_testing import PRESETS, assert_pure_renderers, draw  # noqa: E402


@pytest.fixture(scope="module")
def data():
    """The three figures' data from a small run of the chapter's experiments."""
    problems = problem_set.build_problems(1, 4, 4, 3, 3, 0.5, torch.Generator().manual_seed(0),
                                          torch.Generator().manual_seed(1))
    flow = flow_experiment.flow_experiment(problems, ["relu"], 0.5, 1e-8)
    descent = drift_experiment.descent_experiment(problems, [0.04, 0.02, 0.01], 0.5, torch.Generator().manual_seed(2))
    coefficient = drift_coefficient.coefficient_experiment(problems, descent, ["relu"], 0.5, 1e-6)
    return {"drift_vs_time": figure_data.drift_vs_time(descent, flow, coefficient, 0.5),
            "drift_vs_eta": figure_data.drift_vs_eta(descent, 0.5),
            "layer_norms": figure_data.layer_norms(layer_growth.layer_growth(descent.trajectories["deep_relu"]))}


def test_three_figures_draw(data):
    """drift-vs-time (one panel per family; the ReLU panel with the prediction eta C(t) per step size),
    drift-vs-eta and layer-norms (one line per layer)."""
    fig, _ = draw(figures.drift_vs_time, data["drift_vs_time"])
    assert len(fig.axes) == 6 and not fig.axes[-1].axison       # five panels and the legend's slot
    relu = data["drift_vs_time"]["panels"]["p2"]
    assert relu["predicted"].shape == relu["change"].shape == (3, len(relu["times"]))
    assert len(fig.axes[2].lines) == 3 + 3 + 1                  # descent, prediction, flow
    fig2, _ = draw(figures.layer_norms, data["layer_norms"], "poster")
    assert len(fig2.axes[0].lines) == 3
    for f in (fig, fig2):
        plt.close(f)


@pytest.mark.parametrize("preset", PRESETS)
def test_every_figure_draws_in_every_preset_with_no_text_too_small_or_too_faint(data, preset):
    for name, values in data.items():
        fig, style = draw(getattr(figures, name), values, preset)
        assert styles.audit(fig, style) == [], (name, preset)
        plt.close(fig)


def test_figures_draw_when_a_family_ran_no_step_size():
    """A family whose every step size breaks "eta lambda_max small" is left out, not a crash."""
    problems = problem_set.build_problems(1, 4, 4, 3, 3, 3.0, torch.Generator().manual_seed(0),
                                          torch.Generator().manual_seed(1))
    flow = flow_experiment.flow_experiment(problems, ["relu"], 0.2, 1e-6)
    descent = drift_experiment.descent_experiment(problems, [0.2, 0.1, 0.05], 0.2, torch.Generator().manual_seed(2))
    assert any(not f.etas for f in descent.families.values())
    for f, _ in (draw(figures.drift_vs_time, figure_data.drift_vs_time(descent, flow)),
                 draw(figures.drift_vs_eta, figure_data.drift_vs_eta(descent, 0.2)),
                 draw(figures.layer_norms, figure_data.layer_norms(None))):
        plt.close(f)


def test_the_render_functions_import_no_torch_and_compute_nothing():
    assert_pure_renderers(figures)
