"""Tests of stagewise.transformer_rank.teacher: the teacher-student regime where the rank must grow (paper Appendix A,
Figure 2, with full weights) and its across-seed statistics (growth and scale claims of
Assumption asm-transformer-rank-claims)."""
import math

import pytest
import torch
from scipy import stats

from stagewise.transformer_rank.teacher import (ToySettings, growth_lower, head_output, per_seed_trend,
                                                reproduced_fall, run_toy, scale_upper, seed_interval, toy_rows)


@pytest.fixture(scope="module")
def toy():
    return run_toy(ToySettings(seeds=4, rank=3, alpha=0.01, steps=600), torch.Generator().manual_seed(0))


def test_head_output_is_eq_1():
    """Paper eq. (1) without 1/sqrt(d_h): smax(X KQ X^T) X VO, per replica."""
    g = torch.Generator().manual_seed(1)
    x, kq, vo = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((2, 3, 5, 4), (2, 4, 4), (2, 4, 4)))
    out = head_output(x, kq, vo)
    r, n = 1, 2
    direct = torch.softmax(x[r, n] @ kq[r] @ x[r, n].T, -1) @ x[r, n] @ vo[r]
    assert torch.allclose(out[r, n], direct)


def test_seed_interval_is_student_t():
    v = torch.tensor([1.0, 2.0, 4.0])
    iv = seed_interval(v)
    assert iv.mean == pytest.approx(7 / 3)
    assert iv.half_width == pytest.approx(stats.t.ppf(0.975, 2) * float(v.std()) / math.sqrt(3))
    assert math.isinf(seed_interval(torch.tensor([1.0])).half_width)


def test_small_start_learns_the_teacher_and_the_rank_grows(toy):
    """Every seed fits its teacher; the learned change ends at the teacher's stable rank and rises across seeds,
    while the teacher cut to rank one gives no rise (the control of the growth rows)."""
    assert float(toy.loss["small"][-1].max()) < 1e-3
    assert toy.kq["small"][-1].numpy() == pytest.approx(toy.teacher_srank, rel=0.05)
    assert growth_lower(toy, "kq") > 0 and growth_lower(toy, "vo") > 0
    assert growth_lower(toy, "kq", "rank1") < 0 and growth_lower(toy, "vo", "rank1") < 0
    assert per_seed_trend(toy.kq["small"], toy.steps).shape == (4,)


def test_toy_rows_and_controls(toy):
    rows = toy_rows(toy)
    assert [r.key for r in rows] == ["v_toy_grow_kq", "v_toy_grow_vo", "v_toy_scale_kq", "v_toy_scale_vo"]
    for r in rows[:2]:
        assert r.reproduced(r.value) and not r.reproduced(r.control_experiment(*r.control_args))
    assert rows[2].value == pytest.approx(scale_upper(toy, "kq"))
    assert not reproduced_fall(math.nan) and not reproduced_fall(0.0) and reproduced_fall(-0.1)
