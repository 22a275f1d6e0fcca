"""The transformer-rank chapter's figures (paper Figs 1, 2, 4-7, 12-15, 20): data taken out of the experiments'
results (``figure_data``), drawn by pure render functions (``figures``, no torch) in any style (figures
``fig-transformer-rank-*``)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from stagewise.core.figures import styles  # noqa: E402
from stagewise.transformer_rank import figure_data, figures  # noqa: E402
from stagewise.transformer_rank.summaries import summarize_vit  # noqa: E402
from stagewise.transformer_rank.teacher import ToyRun  # noqa: E402
from figure_testing import PRESETS, assert_pure_renderers  # noqa: E402
from figure_testing import draw as _draw  # noqa: E402
from transformer_problem import tiny_runs  # noqa: E402


def _tiny_toy(seeds=3, checkpoints=6):
    steps = list(range(0, 10 * checkpoints, 10))
    gen = torch.Generator().manual_seed(3)
    curve = lambda: 1 + torch.rand(checkpoints, seeds, generator=gen, dtype=torch.float64)  # noqa: E731
    variants = ("small", "default", "twin", "rank1")
    return ToyRun(steps, {v: curve() for v in variants}, {v: curve() for v in variants},
                  {v: curve() for v in variants}, 2.4)


def _all_data():
    vit, gpt = tiny_runs()
    vs = summarize_vit(vit)
    steps = vit.result.steps
    runs = [("Adam", steps, vs.sr_kq[:, vs.adam], vs.sr_vo[:, vs.adam]),
            ("SGD", steps, vs.sr_kq[:, vs.sgd], vs.sr_vo[:, vs.sgd])]
    return {"spectra": figure_data.spectra(vit, vs.adam),
            "srank": figure_data.srank(runs, [[steps[1], steps[2]], [steps[2], steps[1]]]),
            "scale_svals": figure_data.scale_svals(vit, layer=0),
            "scale_srank": figure_data.scale_srank(vit),
            "gpt": figure_data.gpt(gpt, [steps[1], steps[2]]),
            "toy": figure_data.toy(_tiny_toy())}


@pytest.mark.parametrize("preset", PRESETS)
def test_every_figure_draws_from_its_sidecar_in_every_preset(preset):
    """Every figure of the chapter draws from the split of its data (what a sidecar keeps) in the book, a dark
    talk and a poster preset, with no text under the preset's minimum and no dim text on the dark one."""
    for name, data in _all_data().items():
        fig, style = _draw(getattr(figures, name), data, preset)
        assert fig.axes, name
        assert styles.audit(fig, style) == [], name
        plt.close(fig)


def test_figure_shapes():
    """Panels per layer (and run), one line per drawn checkpoint, singular value and seed."""
    data = _all_data()
    vit, gpt = tiny_runs()
    depth = vit.cfg.depth
    fig, _ = _draw(figures.spectra, data["spectra"])
    assert len(fig.axes) == 2 * depth
    assert len(fig.axes[0].lines) == 1 + len(data["spectra"]["steps"])
    assert np.allclose(data["spectra"]["rows"]["kq"]["init"][:, 0], 1.0)
    fig2, _ = _draw(figures.srank, data["srank"])
    assert len(fig2.axes) == 2 * depth
    fig3, _ = _draw(figures.scale_svals, data["scale_svals"])
    assert len(fig3.axes) == 2 * len(vit.scale_replicas)
    assert len(fig3.axes[0].lines) == data["scale_svals"]["kq"].shape[-1]
    fig4, _ = _draw(figures.gpt, data["gpt"])
    assert len(fig4.axes) == gpt.cfg.depth + 1
    fig5, _ = _draw(figures.toy, data["toy"])
    assert len(fig5.axes[0].lines) == 3 * 3 + 1          # three variants of three seeds, and the teacher
    for f in (fig, fig2, fig3, fig4, fig5):
        plt.close(f)


def test_figures_draw_without_references():
    """No transient ends given: no dotted lines and no legend entry for them."""
    vit, gpt = tiny_runs()
    vs = summarize_vit(vit)
    runs = [("Adam", vit.result.steps, vs.sr_kq[:, vs.adam], vs.sr_vo[:, vs.adam])]
    for fig, _ in (_draw(figures.srank, figure_data.srank(runs)), _draw(figures.gpt, figure_data.gpt(gpt))):
        assert "end of transient" not in [t.get_text() for t in fig.legends[0].get_texts()]
        plt.close(fig)


def test_the_render_functions_import_no_torch_and_compute_nothing():
    assert_pure_renderers(figures)
