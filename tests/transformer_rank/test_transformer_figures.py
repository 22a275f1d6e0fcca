"""The transformer-rank chapter's figures (paper Figs 1, 4-7, 12-15, 20 with their controls, the budget sweep and
the toy head, ours): data taken out of the experiments' results (``figure_data``), drawn by pure render functions
(``figures``, no torch) in any style (figures ``fig-transformer-rank-*``)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from stagewise.core.figures import styles  # noqa: E402
from stagewise.transformer_rank import budget, figure_data, figures  # noqa: E402
from stagewise.transformer_rank.rank_growth import Trend  # noqa: E402
from stagewise.transformer_rank.summaries import summarize_gpt, summarize_vit  # noqa: E402
from stagewise.transformer_rank.teacher import ToyRun  # noqa: E402
from figure_testing import PRESETS, assert_pure_renderers  # noqa: E402
from figure_testing import draw as _draw  # noqa: E402
from transformer_problem import tiny_runs  # noqa: E402


def _tiny_toy(seeds=3, records=6, d=8):
    steps = list(range(0, 10 * records, 10))
    gen = torch.Generator().manual_seed(3)
    svals = lambda: torch.sort(torch.rand(records, seeds, d, generator=gen, dtype=torch.float64), -1,  # noqa: E731
                               descending=True).values
    variants = ("small", "default", "twin")
    return ToyRun(steps, {v: svals() for v in variants}, {v: svals() for v in variants},
                  {v: torch.rand(records, seeds, generator=gen, dtype=torch.float64) for v in variants}, 1.3,
                  {m: {v: torch.ones(seeds, dtype=torch.float64) for v in variants} for m in ("kq", "vo")})


def _budget_points(steps):
    keys = budget.KEYS
    return [budget.BudgetPoint(s, {k: Trend(0.1 * i, 0.05, 1.0, 1.1, 5) for k in keys},
                               {k: Trend(-0.1, 0.05, 1.0, 0.9, 5) for k in keys}) for i, s in enumerate(steps)]


def _all_data():
    vit, gpt = tiny_runs()
    vs = summarize_vit(vit)
    steps = vit.result.steps
    sr = {m: vit.spectra.srank(f"delta_{m}") for m in ("kq", "vo")}
    gs = summarize_gpt(gpt)
    columns = [("ViT, Adam", steps, {m: sr[m][:, vs.adam] for m in sr}, {m: sr[m][:, 5] for m in sr}, "shuffled"),
               ("char-GPT", gpt.result.steps, {"kq": gs.sr_kq, "vo": gs.sr_vo}, {"kq": gs.sr_kq, "vo": gs.sr_vo},
                "shuffled characters")]
    return {"spectra": figure_data.spectra(vit, vs.adam),
            "growth": figure_data.growth(columns),
            "budget": figure_data.budget(_budget_points([2, 4, 8])),
            "scale_svals": figure_data.scale_svals(vit, layer=0),
            "scale_srank": figure_data.scale_srank(vit),
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
    """Panels per layer, run and matrix; one line per drawn checkpoint, singular value and seed."""
    data = _all_data()
    vit, _ = tiny_runs()
    depth = vit.cfg.depth
    fig, _ = _draw(figures.spectra, data["spectra"])
    assert len(fig.axes) == 2 * depth
    assert len(fig.axes[0].lines) == 1 + len(data["spectra"]["steps"])
    assert np.allclose(data["spectra"]["rows"]["kq"]["init"][:, 0], 1.0)
    fig2, _ = _draw(figures.growth, data["growth"])
    assert len(fig2.axes) == 2 * 2 and len(fig2.axes[0].lines) == 2          # the run and its control
    fig3, _ = _draw(figures.scale_svals, data["scale_svals"])
    assert len(fig3.axes) == 2 * len(vit.scale_replicas)
    assert len(fig3.axes[0].lines) == data["scale_svals"]["kq"].shape[-1]
    fig4, _ = _draw(figures.budget, data["budget"])
    assert len(fig4.axes) == len(data["budget"]["keys"])
    fig5, _ = _draw(figures.toy, data["toy"])
    assert len(fig5.axes) == 6 and len(fig5.axes[0].lines) == 8 + 1         # d singular values and the level
    for f in (fig, fig2, fig3, fig4, fig5):
        plt.close(f)


def test_the_render_functions_import_no_torch_and_compute_nothing():
    assert_pure_renderers(figures)
