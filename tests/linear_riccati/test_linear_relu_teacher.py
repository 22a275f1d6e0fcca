"""The ReLU teacher-student of the paper's Figs. 2 and 5 (stagewise.linear_riccati.relu_teacher; no statement)."""
import numpy as np
import pytest

from stagewise.linear_riccati import relu_teacher
from stagewise.numerics.flows import DivergenceError


def test_teacher_student_shapes_streams_and_ratios():
    """Records shaped (records, data sets, scales, ...); one seed gives the same run; data sets differ."""
    a = relu_teacher.teacher_student(10, 5, 20, [1e-4, 1.0], seed=2**62 + 5, n_seeds=2, eta=0.05, steps=600,
                                     record_every=100)
    b = relu_teacher.teacher_student(10, 5, 20, [1e-4, 1.0], seed=2**62 + 5, n_seeds=2, eta=0.05, steps=600,
                                     record_every=100)
    assert a.loss.shape == (7, 2, 2) and a.sv.shape == (7, 2, 2, 5) and np.allclose(a.t, np.arange(7) * 5.0)
    assert np.array_equal(a.loss, b.loss) and not np.allclose(a.loss[0, 0], a.loss[0, 1])
    ranks = relu_teacher.rank_ratios(a)
    assert ranks.small.shape == (2,) and ranks.median_small == float(np.median(ranks.small))
    assert ranks.median_small_untrained == float(np.median(a.sv[0, :, 0, 2] / a.sv[0, :, 0, 0]))
    assert relu_teacher.median_ratio_small_over_large(a) == ranks.median_small / ranks.median_large
    assert relu_teacher.median_ratio_small_over_large(a, 0) == ranks.median_small_untrained / ranks.median_large


def test_divergence_names_eta():
    """Divergence stops with the shared DivergenceError naming the step size."""
    with pytest.raises(DivergenceError, match="parameter eta=50.0"):
        relu_teacher.teacher_student(10, 5, 20, [1.0], seed=0, n_seeds=1, eta=50.0, steps=2000, record_every=10)
