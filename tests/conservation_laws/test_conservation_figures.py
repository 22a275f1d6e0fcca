"""The chapter's figures: data taken out of the experiments' results (``figure_data``), drawn by pure render
functions (``figures``, no torch) in any style (figures ``fig-conservation-laws-*``)."""
import ast
import inspect

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from stagewise.conservation_laws import experiments, figure_data, figures  # noqa: E402
from stagewise.core import sidecar, styles  # noqa: E402


def _draw(render, data, preset="book"):
    style = styles.resolve(preset)
    arrays, values = sidecar.split(data)           # what a sidecar keeps: the figure must draw from that alone
    with style.context():
        return style.finish(render(sidecar._unflatten({**arrays, **values}), style))


def test_three_figures_draw():
    """drift-vs-time (one panel per family), drift-vs-eta and layer-norms (one line per layer)."""
    problems = experiments.build_problems(1, 4, 4, 3, 3, 0.5, torch.Generator().manual_seed(0),
                                          torch.Generator().manual_seed(1))
    flow = experiments.flow_experiment(problems, ["relu"], 0.5, 1e-8)
    descent = experiments.descent_experiment(problems, [0.04, 0.02, 0.01], 0.5, torch.Generator().manual_seed(2))
    fig = _draw(figures.drift_vs_time, figure_data.drift_vs_time(descent, flow))
    assert len(fig.axes) == 5
    fig2 = _draw(figures.drift_vs_eta, figure_data.drift_vs_eta(descent, 0.5), "talk-16x9-dark")
    growth = figure_data.layer_norms(experiments.layer_growth(descent.trajectories["deep_relu"]))
    fig3 = _draw(figures.layer_norms, growth, "poster")
    assert len(fig3.axes[0].lines) == 3
    for f in (fig, fig2, fig3):
        plt.close(f)


def test_figures_draw_when_a_family_ran_no_step_size():
    """A family whose every step size breaks "eta lambda_max small" is left out, not a crash."""
    problems = experiments.build_problems(1, 4, 4, 3, 3, 3.0, torch.Generator().manual_seed(0),
                                          torch.Generator().manual_seed(1))
    flow = experiments.flow_experiment(problems, ["relu"], 0.2, 1e-6)
    descent = experiments.descent_experiment(problems, [0.2, 0.1, 0.05], 0.2, torch.Generator().manual_seed(2))
    assert any(not f.etas for f in descent.families.values())
    for f in (_draw(figures.drift_vs_time, figure_data.drift_vs_time(descent, flow)),
              _draw(figures.drift_vs_eta, figure_data.drift_vs_eta(descent, 0.2)),
              _draw(figures.layer_norms, figure_data.layer_norms(None))):
        plt.close(f)


def test_the_render_functions_import_no_torch_and_compute_nothing():
    tree = ast.parse(inspect.getsource(figures))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names} | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m and ("torch" in m or m.startswith("stagewise"))}, imported
