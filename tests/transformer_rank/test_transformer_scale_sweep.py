"""Tests of stagewise.transformer_rank.scale_sweep: claim (c) of the chapter's observations (the scale
gap, its threshold, the draw-to-draw noise of two draws at one scale and the shuffled-label control) and the sanity
row of the scaled replicas."""
import pytest
import torch

from stagewise.transformer_rank.rank_growth import GROWTH_SE
from stagewise.transformer_rank.scale_sweep import SCALE_TOLERANCE, half_steps, scale_error, scale_gap, shuffled_gap
from transformer_problem import tiny_runs


@pytest.fixture(scope="module")
def runs():
    return tiny_runs()


def test_scale_gap_threshold():
    """Claim (c): a gap counts below minus max(2 s.e. over heads, float32 rounding level of the stable ranks)."""
    small, large = torch.tensor([1.0, 1.1, 1.05, 1.2]), torch.tensor([1.5, 1.4, 1.6, 1.45])
    gap = scale_gap(small, large, 6.0, 64)
    assert gap.gap == pytest.approx(-0.4) and gap.significant and gap.threshold == -max(gap.spread, gap.floor)
    same = scale_gap(large * (1 + 1e-7), large, 6.0, 64)        # untrained: equal up to rounding
    assert not same.significant


def test_scale_gap_counts_the_draw_noise():
    """Claim (c): the threshold contains the draw-to-draw noise of a head mean measured from two draws at one scale
    (2 x RMS of the per-head twin differences / sqrt(heads)); a gap smaller than that is not significant."""
    small, large = torch.tensor([1.0, 1.1, 1.05, 1.2]), torch.tensor([1.2, 1.3, 1.25, 1.4])
    draws = torch.tensor([0.3, -0.3, 0.3, -0.3])
    assert scale_gap(small, large, 6.0, 64).significant                        # the heads alone: a clear gap
    noisy = scale_gap(small, large, 6.0, 64, draws)
    assert noisy.draw == pytest.approx(GROWTH_SE * 0.3 / 2) and not noisy.significant


def test_scale_error(runs):
    """Sanity row: the scaled replica starts at scale x the default replica; ignoring the scale is caught."""
    vit, _ = runs
    assert scale_error(vit) <= SCALE_TOLERANCE
    ignored = scale_error(vit, ignore_scale=True)
    assert ignored == pytest.approx(abs(1 - 0.1) / 0.1, rel=1e-6) and ignored > SCALE_TOLERANCE


def test_shuffled_gap_uses_the_controls(runs):
    """The control of claim (c): the same head-mean gap between the shuffled-label copies of the smallest- and
    largest-scale replicas."""
    vit, _ = runs
    sr = vit.spectra.srank("delta_vo")[-1]
    small, large = vit.shuffled[vit.scale_replicas[0]], vit.shuffled[vit.scale_replicas[-1]]
    assert shuffled_gap(vit, "vo") == pytest.approx(float((sr[small] - sr[large]).double().mean()))


def test_half_steps():
    steps = [0, 1, 2, 3, 4]
    svals = torch.tensor([[0.0, 0.0], [0.6, 0.1], [0.9, 0.2], [1.0, 0.3], [1.0, 0.4]])
    assert half_steps(svals, steps, 2) == [1, 2]
