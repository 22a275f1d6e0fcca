"""Algorithm 1 (alg-diagonal-incremental-alg1), Lemma D.4 (lem-diagonal-incremental-d4) and the degeneracy
checks of Assumption 4.3 (asm-diagonal-incremental-43), on diagonal linear networks."""
import numpy as np
import pytest
import torch

from stagewise.diagonal_incremental import algorithm, networks

f64 = torch.float64
CORR = [[1, .2, .75], [.2, 1, .75], [.75, .75, 1]]


def linear(sigma, beta_star):
    return networks.LinearDiagonal(torch.tensor(sigma, dtype=f64), torch.tensor(beta_star, dtype=f64))


def test_correlated_support_shrink_and_sign_flip():
    """Lemma D.4: a coordinate leaves the support and re-enters with the opposite sign; Assumption 4.4 holds."""
    stages = algorithm.algorithm1(linear(CORR, [1.0, 0.6, -0.3]))
    assert [(s.coordinate, s.sign) for s in stages[1:]] == [(2, 1), (0, 1), (1, 1), (2, -1)]
    assert [s.T for s in stages[1:]] == pytest.approx([1 / 0.9, 1.1363636, 5.5555556, 112.2222222], rel=1e-6)
    assert stages[3].dropped == [2]                       # x3 leaves the support at stage 3 ...
    assert stages[4].beta[2] < 0 < stages[2].beta[2]      # ... and re-enters with flipped sign (Lemma D.4)
    np.testing.assert_allclose(stages[-1].beta, [1.0, 0.6, -0.3], atol=1e-8)
    assert all(s.hessian_min > 0 for s in stages[1:])


def test_bookkeeping_b_reenters_after_two_over_g():
    """Lemma D.4 with eq. (10): a dropped coordinate re-enters after Delta = 2 / |g_i(theta^k)|."""
    stages = algorithm.algorithm1(linear(CORR, [1.0, 0.6, -0.3]))
    g3 = float(networks.LinearDiagonal(torch.tensor(CORR, dtype=f64), torch.tensor([1.0, .6, -.3], dtype=f64))
               .g(torch.from_numpy(stages[3].beta)[None])[0, 2])
    assert stages[4].T - stages[3].T == pytest.approx(2 / abs(g3), rel=1e-8)


def test_tie_is_reported_with_stage():
    """Assumption 4.3 (unique winner of the race): a tie raises DegenerateStageError naming the stage."""
    with pytest.raises(algorithm.DegenerateStageError, match="stage 1: tie"):
        algorithm.algorithm1(linear(np.eye(2), [0.5, -0.5]))
    with pytest.raises(algorithm.DegenerateStageError, match="stage 2: tie"):
        algorithm.algorithm1(linear(np.eye(3), [0.9, 0.4, 0.4]))


def test_nonconvergent_stage_is_reported():
    """Stage (B), eq. (13): a stage that does not reach stationarity raises DegenerateStageError naming it."""
    model = linear(np.eye(2), [0.9, 0.4])
    with pytest.raises(algorithm.DegenerateStageError, match="stage 1: nonlinear stage"):
        algorithm.train_active(model, np.array([1e-8, 0.0]), np.array([0]), t_max=1.0, stage=1)
