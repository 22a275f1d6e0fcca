"""Tests of stagewise.relu_orthogonal.figures: every figure of the chapter builds from small results."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from stagewise.relu_orthogonal import coverage, figures, implicit_bias, staircase, sweep  # noqa: E402


def test_all_figures_build():
    """Figures 1, 3, 4 (staircase, log-norms, snapshots), the sweep, coverage, Figures 5 and 6."""
    pred = staircase.predict_figure1(2, 16, 4, 1.0, 0.2, 60.0)
    fr = staircase.train_figure1(pred)
    sw = sweep.run_sweep(sweep.sweep_draws(4, 1, 40.0), [25.0, 50.0, 100.0], 0.2)
    figs = [figures.staircase(fr), figures.lognorms(fr), figures.snapshots(fr, np.random.default_rng(0)),
            figures.sweep(sw, sweep.measure_sweep(sw)),
            figures.coverage(coverage.coverage_study(np.random.default_rng(0), 100, ns=(16,), ms=np.arange(4, 12, 4),
                                                     log2n=np.arange(4, 8))),
            figures.norm_vs_n(implicit_bias.norm_vs_n(0, 10, 2), implicit_bias.norm_vs_n_gd(0, 4, 30.0, draws=1)),
            figures.norm_vs_width(implicit_bias.norm_vs_width(0, 1, 2, [16], 30.0, widths=2 ** np.arange(4, 6),
                                                              gd_draws=1))]
    for fig in figs:
        assert isinstance(fig, plt.Figure) and fig.axes
        plt.close(fig)
