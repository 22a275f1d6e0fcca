"""Tests of stagewise.transformer_rank.low_rank: the control of claim (a) of Assumption asm-transformer-rank-claims."""
import pytest
import torch

from stagewise.transformer_rank.low_rank import LOW_RANK_FRACTION, random_change_ratio
from transformer_problem import tiny_runs


@pytest.fixture(scope="module")
def runs():
    return tiny_runs()


def test_random_change_is_not_low_rank(runs):
    """The control of claim (a): a random change of the learned size has a stable rank like the initialization's."""
    vit, _ = runs
    ratio = random_change_ratio(vit, torch.Generator().manual_seed(0))
    assert ratio > LOW_RANK_FRACTION
