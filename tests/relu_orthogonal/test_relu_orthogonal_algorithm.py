"""Tests of stagewise.relu_orthogonal.algorithm: Algorithm 1 and the limit process (alg-relu-orthogonal-alg1, thm-relu-orthogonal-jumps)."""
import math

import numpy as np
import pytest

from stagewise.relu_orthogonal import algorithm, data
from relu_problem import hand_example


def test_algorithm1_hand_computed():
    """Algorithm 1 (alg-relu-orthogonal-alg1) on a hand-computed example: jump times, fitted sets, plateau losses, exponents, and the balanced interpolating saddles of eqs. (12-13) with Eq. (15)'s norm."""
    y, s, M = hand_example()
    lp = algorithm.algorithm1(y, M, s, c=1.0)
    r0, r1 = 5 / 3, math.sqrt(17) / 3
    t1 = 1 / r0
    tau1 = 1 - t1 * r1
    t2 = t1 + tau1 / (1 / 3)
    assert lp.neurons.tolist() == [0, 1]
    np.testing.assert_allclose(lp.times, [t1, t2], rtol=1e-14)
    assert [S.tolist() for S in lp.fitted_sets] == [[0, 1], [2]]
    np.testing.assert_allclose(lp.plateau_losses, [26 / 6, 1 / 6, 0.0], atol=1e-15)
    np.testing.assert_allclose(lp.tau[1], [0.0, tau1], rtol=1e-14)
    assert lp.norm_sq() == pytest.approx(2 * (5 + 1))
    # the fitted neurons interpolate exactly and are balanced (eqs. 12-13)
    out = (lp.a[:, None] * np.maximum(lp.W, 0)).sum(0)
    np.testing.assert_allclose(out, y, rtol=1e-14)
    np.testing.assert_allclose(lp.a ** 2, (lp.W ** 2).sum(1), rtol=1e-14)


def test_loss_constant_rescales_time_and_eta_correction():
    """Algorithm 1, line 2: the loss constant c rescales time by c, and the step-size-corrected rate log(1 + eta r)/eta [derived] slows the jumps."""
    y, s, M = hand_example()
    lp1, lp2 = algorithm.algorithm1(y, M, s, c=1.0), algorithm.algorithm1(y, M, s, c=2.0)
    np.testing.assert_allclose(lp2.times, lp1.times / 2, rtol=1e-14)
    lpe = algorithm.algorithm1(y, M, s, c=1.0, eta=0.1)
    r0 = 5 / 3
    assert lpe.times[0] == pytest.approx(0.1 / math.log1p(0.1 * r0), rel=1e-14)
    assert np.all(lpe.times > lp1.times)   # log(1 + eta r)/eta < r: GD is slower than the flow


def test_exponent_evaluator_piecewise_affine():
    """Theorem 2: the exponents tau_j(t) are piecewise affine (eqs. 10-11) and the limit loss is the staircase L^(k)."""
    y, s, M = hand_example()
    lp = algorithm.algorithm1(y, M, s)
    tau = lp.exponents(np.concatenate([[0.0], lp.times]))
    np.testing.assert_allclose(tau[0], [1, 1])
    np.testing.assert_allclose(tau[1], lp.tau[1], atol=1e-14)
    assert tau[2].max() == pytest.approx(0.0, abs=1e-12)
    assert lp.loss(np.array([0.1, lp.times[0] + 1e-9, 10.0])).tolist() == pytest.approx([26 / 6, 1 / 6, 0.0])


def test_tie_is_reported_not_resolved():
    """Assumption 4(ii): a non-unique argmin in line 8 of Algorithm 1 is reported as a tie, not resolved."""
    y = np.array([1.0, 1.0, 1.0, 1.0])
    s = np.ones(2)
    M = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], bool)   # two neurons with equal ||y_S||
    lp = algorithm.algorithm1(y, M, s)
    assert lp.tie is not None and lp.tie[0] == 1 and sorted(lp.tie[1].tolist()) == [0, 1]
    assert lp.K == 0


def test_uncovered_point_never_fitted():
    """Assumption 4(i) / def-relu-orthogonal-mask: a zero row of the mask is never fitted; the loss stays at the uncovered plateau."""
    y = np.array([1.0, 2.0, 0.5])
    s = np.ones(2)
    M = np.array([[1, 0], [0, 1], [0, 0]], bool)
    lp = algorithm.algorithm1(y, M, s)
    assert lp.uncovered.tolist() == [2]
    assert lp.plateau_losses[-1] == pytest.approx(0.5 ** 2 / 6)
    assert data.coverage_report(M)["uncovered_points"].tolist() == [2]


def test_identical_columns_jump_as_one_group():
    """Algorithm 1 with identical mask columns (Assumption 4(i) fails): the neurons jump as one rank-1 group, interpolate, and keep Eq. (15)'s norm."""
    y = np.array([2.0, 1.0, 0.5])
    s = np.ones(3)
    M = np.array([[1, 1, 0], [1, 1, 1], [0, 0, 1]], bool)   # neurons 0 and 1 share their column
    lp = algorithm.algorithm1(y, M, s)
    assert lp.tie is None and algorithm.merged_groups(lp) == 1
    assert sorted(lp.members[0].tolist()) == [0, 1]
    out = (lp.a[:, None] * np.maximum(lp.W, 0)).sum(0)
    np.testing.assert_allclose(out, y, rtol=1e-14)
    assert np.sum(lp.a ** 2 + (lp.W ** 2).sum(1)) == pytest.approx(lp.norm_sq(), rel=1e-14)
    with pytest.raises(AssertionError):
        assert algorithm.algorithm1(y, M, s, merge_identical=False).tie is None


def test_find_instances_satisfy_assumption4_and_separation():
    """Draw selection with Algorithm 1: Assumption 4 holds and jumps are >= gap apart, before t_max."""
    found = algorithm.find_instances(5, 3, 16, 4, "abs_gaussian", "positive", gap=0.3, t_max=30.0)
    assert len(found) == 3 and [k for k, _ in found] == sorted(k for k, _ in found)
    for k, (y, U, s, M) in found:
        lp = algorithm.algorithm1(y, M, s)
        assert lp.uncovered.size == 0 and lp.tie is None and algorithm.merged_groups(lp) == 0
        assert algorithm.min_gap(lp) >= 0.3 and lp.times[-1] <= 30.0
