"""Tests of stagewise.transformer_rank.summaries: the observables of the empirical claims of
the chapter's observations on the ViT and char-GPT runs (final and reference stable ranks, growths,
trends, the low-rank ratio and the scale gaps)."""
import pytest

from stagewise.transformer_rank.scale_sweep import twin_gap
from stagewise.transformer_rank.summaries import summarize_gpt, summarize_vit
from transformer_problem import tiny_runs


@pytest.fixture(scope="module")
def runs():
    return tiny_runs()


def test_summaries_match_the_spectra(runs):
    """Head/layer means of the stable ranks at the end of the transient and the end; ratio and gaps of (a), (c)."""
    vit, gpt = runs
    vs, gs = summarize_vit(vit), summarize_gpt(gpt)
    sr = vit.spectra.srank("delta_kq")
    assert vs.final["adam_kq"] == pytest.approx(float(sr[-1, vit.adam_default].mean()))
    ref = vs.growth_stats["sgd_kq"].reference.index
    assert vs.growth["sgd_kq"] == pytest.approx(float(sr[-1, vit.sgd].mean() - sr[ref, vit.sgd].mean()))
    assert vs.low_rank_ratio == pytest.approx(vs.final["adam_kq"] / vs.init_kq)
    assert vs.scale_gap["vo"].gap == pytest.approx(vs.small_final["vo"] - vs.large_final["vo"])
    assert (vs.small, vs.large, vs.twin) == (0, 1, 2)
    assert gs.vo_growth.growth == pytest.approx(gs.vo_final - gs.vo_reference)
    assert vs.trends["adam_kq"].end == pytest.approx(float(sr[-1, vit.adam_default].mean()))
    assert vs.twin_gap["kq"].gap == pytest.approx(twin_gap(vit, "kq"))
