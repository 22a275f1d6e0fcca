"""Tests of stagewise.transformer_rank.summaries: the observables and verdicts of the claims of
Assumption asm-transformer-rank-claims, and the extraction checks (Proposition prop-transformer-rank-bound)."""
import pytest

from stagewise.transformer_rank.summaries import extraction_checks, summarize_gpt, summarize_vit, verdicts
from transformer_problem import tiny_runs


@pytest.fixture(scope="module")
def runs():
    return tiny_runs()


def test_summaries_match_the_spectra(runs):
    """Head/layer means of the stable ranks at the quarter and the end; ratio and scale gaps of claims (a), (c)."""
    vit, gpt = runs
    vs, gs = summarize_vit(vit), summarize_gpt(gpt)
    sr = vit.spectra.srank("delta_kq")
    assert vs.final["adam_kq"] == pytest.approx(float(sr[-1, vit.adam_default].mean()))
    assert vs.growth["sgd_kq"] == pytest.approx(float(sr[-1, vit.sgd].mean() - sr[vs.quarter, vit.sgd].mean()))
    assert vs.low_rank_ratio == pytest.approx(vs.final["adam_kq"] / vs.init_kq)
    assert vs.scale_gap["vo"] == pytest.approx(vs.small_final["vo"] - vs.large_final["vo"])
    assert (vs.small, vs.large) == (0, 1)
    assert gs.vo_drop == pytest.approx(gs.vo_quarter - gs.vo_final)
    v = verdicts(vs, gs)
    assert set(v) == {"v_low", "v_grow", "v_sgd_vo", "v_scale", "v_gpt"}
    assert v["v_gpt"] == ("reproduced" if gs.vo_final > gs.vo_quarter else "not reproduced")


def test_extraction_checks_on_trained_vit(runs):
    """Eq. (1) and Proposition prop-transformer-rank-bound on the trained weights."""
    vit, _ = runs
    ex = extraction_checks(vit)
    assert ex.error < 1e-4 and ex.rank_tail < 1e-10
