"""The chapter's figures draw from the experiments' results (figures ``fig-conservation-laws-*``)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from stagewise.conservation_laws import experiments, figures  # noqa: E402


def test_three_figures_draw():
    """drift-vs-time (one panel per family), drift-vs-eta and layer-norms (one line per layer)."""
    problems = experiments.build_problems(1, 4, 4, 3, 3, 0.5, torch.Generator().manual_seed(0),
                                          torch.Generator().manual_seed(1))
    flow = experiments.flow_experiment(problems, ["relu"], 0.5, 1e-8)
    descent = experiments.descent_experiment(problems, [0.04, 0.02, 0.01], 0.5, torch.Generator().manual_seed(2))
    fig = figures.drift_vs_time(descent, flow)
    assert len(fig.axes) == 5
    fig2 = figures.drift_vs_eta(descent, 0.5)
    fig3 = figures.layer_norms(experiments.layer_growth(descent.trajectories["deep_relu"]))
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
    for f in (figures.drift_vs_time(descent, flow), figures.drift_vs_eta(descent, 0.2), figures.layer_norms(None)):
        plt.close(f)
