"""Tests of stagewise.transformer_rank.rank_growth: claim (b) of the chapter's observations on a
stable-rank curve (the end of the early transient, the growth from it and its head spread, the trend over all
checkpoints and its criterion)."""
import math

import pytest
import torch

from stagewise.transformer_rank.rank_growth import (GROWTH_SE, growth_stats, reproduced_rise, transient_end, trend,
                                                    trend_lower)

STEPS = [0, 1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]


def test_transient_end_is_the_trough_after_the_early_peak():
    """The reference of claim (b): highest checkpoint of the first half, then the lowest after it in that half."""
    curve = torch.tensor([math.nan, 1.4, 1.35, 1.3, 1.2, 1.1, 1.05, 1.06, 1.07, 1.08, 1.09, 1.1])
    ref = transient_end(curve, STEPS)
    assert (ref.step, ref.peak_step, ref.window_step, ref.still_falling) == (24, 1, 32, False)
    assert ref.fall == pytest.approx(0.35)
    # a transient that outlasts the window (the shapes32 case of issue 21): the rule says so
    falling = torch.tensor([math.nan, 1.4, 1.38, 1.36, 1.34, 1.3, 1.25, 1.2, 1.15, 1.2, 1.25, 1.3])
    ref = transient_end(falling, STEPS)
    assert ref.step == 32 and ref.still_falling and "still falling" in ref.describe()
    # a jump before the fall (Delta W_V W_O^T): the peak is the top of the jump, not the first checkpoint
    jump = torch.tensor([math.nan, 1.6, 1.4, 1.9, 2.3, 2.1, 2.0, 2.05, 2.1, 2.2, 2.25, 2.3])
    assert (transient_end(jump, STEPS).peak_step, transient_end(jump, STEPS).step) == (8, 24)


def test_transient_end_without_any_change():
    """Weights that never changed (a learning rate below float32 resolution): no crash, the row says why."""
    g = growth_stats(torch.full((len(STEPS), 4), math.nan), STEPS)
    assert not g.significant and "did not change" in g.reason()


def test_transient_end_ignores_rounding_level_perturbations():
    """Zero tests scaled to the problem: ties and near-ties perturbed at 1e-15 give the same reference."""
    flat = torch.full((len(STEPS),), 1.25, dtype=torch.float64)
    flat[0] = math.nan
    tied = torch.tensor([math.nan, 1.4, 1.3, 1.2, 1.2, 1.2, 1.3, 1.3, 1.35, 1.4, 1.45, 1.5], dtype=torch.float64)
    for curve in (flat, tied):
        base = transient_end(curve, STEPS, heads=8)
        for seed in range(20):
            noise = 1e-15 * torch.randn(len(STEPS), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
            again = transient_end(curve + noise, STEPS, heads=8)
            assert (again.index, again.peak_step, again.still_falling) == (base.index, base.peak_step,
                                                                         base.still_falling)
    assert transient_end(flat, STEPS).step == 1                   # all equal: the earliest checkpoint
    assert transient_end(tied, STEPS).step == 4                   # the earliest of the tied troughs


def test_growth_from_the_trough_and_its_head_spread():
    """The prose's growth from the trough of the transient and its head-to-head spread."""
    steps = list(range(9))
    t = torch.linspace(0, 1, 9)[:, None]
    rise = 1 + t * torch.tensor([0.10, 0.12, 0.08, 0.11])
    g = growth_stats(rise, steps)
    assert g.reference.step == 4 and "highest at the end" in g.reference.describe()   # rising: half of training
    assert g.growth == pytest.approx(float((rise[-1] - rise[4]).mean())) and g.significant
    mixed = 1 + t * torch.tensor([0.5, -0.4, 0.3, -0.3])
    g = growth_stats(mixed, steps)
    ref = g.reference.index
    assert g.spread == pytest.approx(GROWTH_SE * float((mixed[-1] - mixed[ref]).std()) / 2)
    single = growth_stats(rise[:, :1], steps)                    # one head: no noise estimate
    assert single.spread == math.inf and not single.significant and "single head" in single.reason()


def test_trend_over_all_checkpoints():
    """Claim (b): a rise over all checkpoints after step 0 passes; a flat, falling, or trough-then-late-rise curve
    (the case of the issue: a rise measured from the trough while the curve falls overall) does not."""
    steps = [0, 1, 2, 4, 8, 16, 32, 48, 64, 80, 96]
    t = torch.tensor(steps, dtype=torch.float64)
    wiggle = 1e-3 * torch.tensor([0, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1], dtype=torch.float64)
    rise = 1 + 0.005 * t + wiggle
    tr = trend(rise, steps)
    assert tr.points == 10 and tr.effect == pytest.approx(0.005 * 95, rel=0.01) and tr.lower > 0
    assert reproduced_rise(trend_lower(rise, steps))
    assert not reproduced_rise(trend_lower(torch.full((11,), 1.2, dtype=torch.float64) + wiggle, steps))
    assert not reproduced_rise(trend_lower(2 - 0.005 * t + wiggle, steps))
    dip = torch.tensor([math.nan, 1.5, 1.44, 1.37, 1.3, 1.2, 1.07, 1.09, 1.11, 1.12, 1.13], dtype=torch.float64)
    assert growth_stats(dip[:, None].repeat(1, 4) + 1e-3 * torch.randn(11, 4, dtype=torch.float64,
                        generator=torch.Generator().manual_seed(0)), steps).growth > 0     # from the trough: a rise
    assert not reproduced_rise(trend_lower(dip, steps))                                   # over training: a fall
    assert math.isnan(trend(torch.tensor([math.nan, 1.0, 1.1]), [0, 1, 2]).effect)      # too few points
    assert not reproduced_rise(math.nan)
