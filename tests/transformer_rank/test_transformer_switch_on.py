"""Tests of stagewise.transformer_rank.switch_on: the one-at-a-time statistic of conjecture
conj-transformer-rank-stages (the diagonal-incremental chapter's criterion on the singular values of a change)."""
import math

import numpy as np
import pytest
import torch

from stagewise.transformer_rank.switch_on import per_seed_settled, settled_fraction, switch_on_steps


def _ramp(start, t, top=1.0, width=2.0):
    return top / (1 + np.exp(-(t - start) / width))


def test_one_at_a_time_gives_one_and_together_gives_little():
    t = np.arange(0, 100.0)
    apart = np.stack([_ramp(20, t), _ramp(50, t, 0.5), _ramp(80, t, 0.25)], 1)
    together = np.stack([_ramp(20, t), _ramp(22, t, 0.5), _ramp(24, t, 0.25)], 1)
    assert settled_fraction(apart) > 0.95
    assert settled_fraction(together) < 0.5
    same_record = np.stack([_ramp(20, t), _ramp(20, t, 0.9)], 1)
    assert settled_fraction(same_record) == 0.0                          # two switch on in the same record
    assert math.isnan(settled_fraction(apart[:, :1]))                     # nothing to compare
    assert switch_on_steps(apart, list(range(100))) == sorted(switch_on_steps(apart, list(range(100))))
    assert len(switch_on_steps(apart, list(range(100)))) == 3


def test_per_seed():
    t = np.arange(0, 100.0)
    apart = np.stack([_ramp(20, t), _ramp(50, t, 0.5)], 1)
    together = np.stack([_ramp(20, t), _ramp(21, t, 0.5)], 1)
    s = per_seed_settled(torch.tensor(np.stack([apart, together], 1)))
    assert s.shape == (2,) and s[0] > 0.9 and s[1] < 0.5
    assert float(s[0]) == pytest.approx(settled_fraction(apart))
