"""Tests of stagewise.transformer_rank.figures: the chapter's figures (paper Figs 1, 4-7, 12-15, 20) draw."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from stagewise.transformer_rank import figures  # noqa: E402
from stagewise.transformer_rank.summaries import summarize_vit  # noqa: E402
from transformer_problem import tiny_runs  # noqa: E402


def test_figures_draw():
    """Every figure of the chapter draws from a (tiny) run."""
    vit, gpt = tiny_runs()
    vs = summarize_vit(vit)
    steps = vit.result.steps
    for fig in (figures.fig_spectra(vit, vs.adam), figures.fig_scale_svals(vit, layer=0),
                figures.fig_srank([("Adam", steps, vs.sr_kq[:, vs.adam], vs.sr_vo[:, vs.adam])], vit.cfg.depth,
                                  [[steps[1], steps[2]]]),
                figures.fig_scale_srank(vit), figures.fig_gpt(gpt, [steps[1], steps[2]])):
        assert fig.axes
        plt.close(fig)
