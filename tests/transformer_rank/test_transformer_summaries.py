"""Tests of stagewise.transformer_rank.summaries: the observables and verdicts of the claims of
Assumption asm-transformer-rank-claims, and the extraction checks (Proposition prop-transformer-rank-bound)."""
import pytest
import torch

from stagewise.transformer_rank.summaries import (GROWTH_SE, extraction_checks, growth_stats, random_change_ratio,
                                                  summarize_gpt, summarize_vit, verdicts)
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
    assert vs.growth_stats["sgd_kq"].growth == pytest.approx(vs.growth["sgd_kq"])
    assert gs.vo_growth.growth == pytest.approx(gs.vo_final - gs.vo_quarter)
    assert vs.init_scale_gap["kq"] == pytest.approx(0.0, abs=1e-5)   # a scaled copy has the same stable rank
    v = verdicts(vs, gs)
    assert set(v) == {"v_low", "v_grow", "v_grow_vo", "v_sgd", "v_sgd_vo", "v_scale", "v_gpt"}
    assert v["v_gpt"].startswith("reproduced" if gs.vo_growth.significant else "not reproduced at this budget")


def test_growth_needs_more_than_the_head_spread():
    """A rise common to all heads is an increase; a flat or falling curve, or one whose heads disagree, is not."""
    steps = torch.linspace(0, 1, 9)[:, None]
    rise = 1 + steps * torch.tensor([0.10, 0.12, 0.08, 0.11])
    g = growth_stats(rise, 2)
    assert g.growth == pytest.approx(float((rise[-1] - rise[2]).mean())) and g.significant
    assert g.halted == 0.0 and not g.halted > g.spread
    assert not growth_stats(torch.ones(9, 4), 2).significant
    assert not growth_stats(rise.flip(0), 2).significant
    mixed = 1 + steps * torch.tensor([0.5, -0.4, 0.3, -0.3])
    g = growth_stats(mixed, 2)
    assert g.growth > 0 and g.spread == pytest.approx(GROWTH_SE * float((mixed[-1] - mixed[2]).std()) / 2)
    assert not g.significant


def test_random_change_is_not_low_rank(runs):
    """The control of claim (a): a random change of the learned size has a stable rank like the initialization's."""
    vit, _ = runs
    ratio = random_change_ratio(vit, torch.Generator().manual_seed(0))
    assert ratio > 0.5


def test_extraction_checks_on_trained_vit(runs):
    """Eq. (1) and Proposition prop-transformer-rank-bound on the trained weights."""
    vit, _ = runs
    ex = extraction_checks(vit)
    assert ex.error < 1e-4 and ex.rank_tail < 1e-10 and ex.output_error < 1e-4
    assert ex.error_swapped > 1e-2 and ex.output_error_swapped > 1e-2     # the wrong extraction is caught
