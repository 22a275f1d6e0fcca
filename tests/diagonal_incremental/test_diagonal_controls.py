"""The controls of the chapter's checks: each wrong hypothesis computes what it claims, in closed form."""
import numpy as np
import pytest
import torch

from stagewise.diagonal_incremental import assumptions, correlated, full_head, staircase
from stagewise.diagonal_incremental.algorithm import algorithm1
from stagewise.diagonal_incremental.networks import LinearDiagonal


def _linear(beta_star, sigma=None):
    b = torch.tensor(beta_star, dtype=torch.float64)
    return LinearDiagonal(torch.eye(len(beta_star), dtype=torch.float64) if sigma is None
                          else torch.tensor(sigma, dtype=torch.float64), b)


def test_frozen_race_is_one_over_g0_sorted_and_inf_beyond_the_nonzero_gradients():
    model = _linear([1.0, -0.5, 0.0])                       # g(0) = beta* for Sigma = I
    assert np.allclose(staircase.frozen_race_times(model, 2), [1.0, 2.0])
    assert np.isinf(staircase.frozen_race_times(model, 3)[2])


def test_saddle_eigenvalue_is_minus_the_largest_inactive_gradient():
    model = _linear([1.0, -0.5, 0.25])
    stages = algorithm1(model)                              # Sigma = I: beta^k = beta* on the support
    assert abs(assumptions.saddle_eigenvalue(model, stages) - (-1.0)) < 1e-9   # at beta = 0: max |g| = 1


def test_lemma_d4_sequence_in_the_correlated_example_and_not_for_sigma_identity():
    assert correlated.leaves_and_reenters_flipped(algorithm1(correlated.correlated_model()))
    assert not correlated.leaves_and_reenters_flipped(correlated.uncorrelated_stages())


def test_full_head_truncation_and_monotone_count():
    s = np.array([[0.0, 0.0], [0.1, 0.0], [0.1, 0.1], [0.1, 0.0]])
    r = full_head.FullHeadRun(np.arange(4.0), np.zeros(4), s, np.zeros((4, 1)))
    assert r.count().tolist() == [0, 1, 2, 1] and not r.never_falls()
    half = r.truncated(0.5)
    assert len(half.tau) == 3 and half.never_falls() and half.max_jump() == 1
    assert r.sv_err([0.1, 0.1], [0.0], record=2) == pytest.approx(0.0, abs=1e-15)
    assert r.sv_err([0.1, 0.1], [0.0], record=0) == pytest.approx(0.1)
