"""Algorithm 1 (alg-diagonal-incremental-alg1) against its closed form for Sigma = I (note Sec. 2.8)."""
import numpy as np
import pytest
import torch

from stagewise.diagonal_incremental import algorithm, closed_forms, networks

f64 = torch.float64


def test_orthogonal_closed_form():
    """Algorithm 1 for Sigma = I: T_k = 1/|beta*|_(k), plateau losses, theta^k and b^k in {0, 2}."""
    bs = [0.9, -0.5, 0.3, 0.0, -0.15]
    stages = algorithm.algorithm1(networks.LinearDiagonal(torch.eye(5, dtype=f64), torch.tensor(bs, dtype=f64)))
    T, order, losses = closed_forms.closed_form_orthogonal(np.array(bs))
    assert [s.T for s in stages[1:]] == pytest.approx(T, rel=1e-12)
    assert [s.coordinate for s in stages[1:]] == order
    assert [s.sign for s in stages[1:]] == [int(np.sign(bs[i])) for i in order]
    assert [s.loss for s in stages] == pytest.approx(losses, abs=1e-12)
    assert T == pytest.approx([1 / 0.9, 2.0, 1 / 0.3, 1 / 0.15])
    # theta^k is beta* restricted to the top-k entries; b bookkeeping ends in {0, 2} on the support
    np.testing.assert_allclose(stages[2].beta, [0.9, -0.5, 0, 0, 0], atol=1e-10)
    assert set(stages[-1].b[stages[-1].support]) <= {0.0, 2.0}
