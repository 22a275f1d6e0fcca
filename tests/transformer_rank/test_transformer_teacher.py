"""Tests of stagewise.transformer_rank.teacher: the teacher-student head where the rank must grow (ours, full
weights) and its across-seed statistics: the one-at-a-time rows of conjecture conj-transformer-rank-stages (control:
the default scale 1) and the scale rows of observation obs-transformer-rank-scale (control: two draws at scale 1)."""
import math

import pytest
import torch
from scipy import stats

from stagewise.transformer_rank.teacher import (SPREAD, ToySettings, head_output, reproduced_fall,
                                                reproduced_stages, run_toy, scale_upper, seed_interval,
                                                settled_lower, teacher_matrices, toy_rows)


@pytest.fixture(scope="module")
def toy():
    return run_toy(ToySettings(seeds=4, rank=3, alpha=0.01, steps=1000), torch.Generator().manual_seed(0))


def test_head_output_is_eq_1():
    """Paper eq. (1) without 1/sqrt(d_h): smax(X KQ X^T) X VO, per replica."""
    g = torch.Generator().manual_seed(1)
    x, kq, vo = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((2, 3, 5, 4), (2, 4, 4), (2, 4, 4)))
    out = head_output(x, kq, vo)
    r, n = 1, 2
    direct = torch.softmax(x[r, n] @ kq[r] @ x[r, n].T, -1) @ x[r, n] @ vo[r]
    assert torch.allclose(out[r, n], direct)


def test_teacher_has_the_stated_spectrum():
    m = teacher_matrices(torch.Generator().manual_seed(0), 2, 8, 3)
    s = torch.linalg.svdvals(m)
    assert s[:, :3].flatten().tolist() == pytest.approx([1.0, SPREAD ** 0.5, SPREAD] * 2)
    assert float(s[:, 3:].max()) < 1e-12


def test_seed_interval_is_student_t():
    v = torch.tensor([1.0, 2.0, 4.0])
    iv = seed_interval(v)
    assert iv.mean == pytest.approx(7 / 3)
    assert iv.half_width == pytest.approx(stats.t.ppf(0.975, 2) * float(v.std()) / math.sqrt(3))
    assert math.isinf(seed_interval(torch.tensor([1.0])).half_width)


def test_small_start_learns_the_teacher_one_direction_at_a_time(toy):
    """Every seed fits its teacher; the values' directions switch on one at a time from the small start and
    together from scale 1 (the control); from scale 1 the change is close to the teacher minus the initial product."""
    assert float(toy.loss["small"][-1].max()) < 1e-3
    assert toy.srank("vo", "small")[-1].numpy() == pytest.approx(toy.teacher_srank, rel=0.05)
    assert reproduced_stages(settled_lower(toy, "vo")) and not reproduced_stages(settled_lower(toy, "vo", "default"))
    final = toy.srank("vo", "default")[-1]
    assert final.numpy() == pytest.approx(toy.target_srank["vo"]["default"].numpy(), rel=0.1)


def test_toy_rows_and_controls(toy):
    rows = toy_rows(toy)
    assert [r.key for r in rows] == ["v_toy_stages_kq", "v_toy_stages_vo", "v_toy_scale_kq", "v_toy_scale_vo"]
    vo = rows[1]
    assert vo.reproduced(vo.value) and not vo.reproduced(vo.control_experiment(*vo.control_args))
    assert rows[2].value == pytest.approx(scale_upper(toy, "kq"))
    assert not reproduced_fall(math.nan) and not reproduced_fall(0.0) and reproduced_fall(-0.1)
    assert not reproduced_stages(math.nan) and reproduced_stages(0.5) and not reproduced_stages(0.49)


def test_the_learned_changes_start_at_zero():
    """Delta(W_K W_Q^T) and Delta(W_V W_O^T) are measured from the initial products W_K W_Q^T and W_V W_O^T: at step 0
    every singular value of both changes is 0 for every variant and seed (a reference that is not the initial
    product, such as W_V W_O without its transpose, gives a change at step 0: the control), and it is not 0 later."""
    run = run_toy(ToySettings(seeds=2, rank=2, alpha=0.01, steps=10, record_every=5), torch.Generator().manual_seed(1))
    assert run.steps[0] == 0
    for svals in (run.svals_kq, run.svals_vo):
        for variant, s in svals.items():
            assert float(s[0].abs().max()) == 0.0 and float(s[-1].max()) > 0.0, variant
    w = torch.randn(3, 8, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    assert float(torch.linalg.svdvals(w[0] @ w[1].transpose(-1, -2) - w[0] @ w[1]).max()) > 0.0
