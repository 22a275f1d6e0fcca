"""Tests of stagewise.transformer_rank.low_rank: claim (a) of the chapter's observations (obs-transformer-rank-low):
the ratio of a replica and the random-direction reference."""
import pytest
import torch

from stagewise.transformer_rank.low_rank import LOW_RANK_FRACTION, low_rank_ratio, random_change_ratio
from transformer_problem import tiny_runs


@pytest.fixture(scope="module")
def runs():
    return tiny_runs()


def test_random_change_is_not_low_rank(runs):
    """The reference of claim (a): a random change of the learned size has a stable rank like the initialization's."""
    vit, _ = runs
    ratio = random_change_ratio(vit, torch.Generator().manual_seed(0))
    assert ratio > LOW_RANK_FRACTION


def test_low_rank_ratio_of_a_replica(runs):
    """The ratio srank(Delta KQ at the end) / srank(KQ at init) of a replica, head and layer means."""
    vit, _ = runs
    r = vit.adam_default
    sr = vit.spectra.srank("delta_kq")[-1, r].mean() / vit.spectra.srank("init_kq")[r].mean()
    assert low_rank_ratio(vit, r) == pytest.approx(float(sr))
    assert low_rank_ratio(vit, vit.shuffled[r]) != low_rank_ratio(vit, r)
