"""Beyond Theorem 4.1: the full-weight attention head (paper v1, Fig. 2d-f) and its records."""
import numpy as np
import torch

from stagewise.diagonal_incremental import full_head


def test_full_head_teacher_and_records():
    """The teacher has the requested singular values; GD records are consistent; counts and jumps."""
    X, Y, M_kq, M_vo = full_head.full_head_teacher(10, 4, 5, [0.6, 0.3], [1.0, 0.5], seed=0)
    np.testing.assert_allclose(torch.linalg.svdvals(M_kq)[:3].numpy(), [0.6, 0.3, 0.0], atol=1e-12)
    np.testing.assert_allclose(torch.linalg.svdvals(M_vo)[:3].numpy(), [1.0, 0.5, 0.0], atol=1e-12)
    run = full_head.full_head_gd(X, Y, 1e-3, 0.05, 40, torch.Generator().manual_seed(0), record_every=10)
    assert run.tau.shape == (5,) and run.s_kq.shape == (5, 5) and run.loss[-1] <= run.loss[0]
    fake = full_head.FullHeadRun(np.arange(3.0), np.ones(3), np.array([[0.0, 0], [0.7, 0], [0.7, 0.2]]),
                                 np.array([[0.0, 0], [0.0, 0], [1.1, 0.4]]))
    np.testing.assert_array_equal(fake.count(0.05), [0, 1, 4])
    assert fake.max_jump() == 3
    assert abs(fake.sv_err([0.6, 0.3], [1.0, 0.5]) - 0.1) < 1e-12
