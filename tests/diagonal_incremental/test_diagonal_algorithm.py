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
    """Assumption 4.3 (unique winner of the race): a tie stops Algorithm 1 with a Breakdown naming the stage;
    the stages before it are returned."""
    stages = algorithm.algorithm1(linear(np.eye(2), [0.5, -0.5]))
    assert len(stages) == 1 and stages.breakdown.stage == 1
    assert stages.breakdown.hypothesis == "Assumption 4.3 (unique winner of the race)"
    assert "tie" in stages.breakdown.measured and stages.breakdown.T == pytest.approx(2.0)
    stages = algorithm.algorithm1(linear(np.eye(3), [0.9, 0.4, 0.4]))
    assert len(stages) == 2 and stages.breakdown.stage == 2 and "stage 2: coordinates" in stages.breakdown.measured


def test_nonconvergent_stage_is_reported():
    """Stage (B), eq. (13): a stage that does not reach stationarity returns a failure naming it."""
    model = linear(np.eye(2), [0.9, 0.4])
    res = algorithm.train_active(model, np.array([1e-8, 0.0]), np.array([0]), t_max=1.0, stage=1)
    assert res.failure.startswith("stage 1: stage (B) did not reach a stationary point")


def test_coordinate_leaving_with_zero_gradient_is_assumption_43_not_45():
    """Issue 21: a spurious coordinate left at the teacher (g -> 0) decays like 1/t. Stage (B) finds the
    boundary stationary point, measures the decay exponent (1) and g there (0 within its resolution), and
    Algorithm 1 names the last clause of Assumption 4.3, keeping stages 1-4."""
    from stagewise.diagonal_incremental import attention
    model, _ = attention.make_teacher_problem(100, 6, 10, 3, 1, 1)
    stages = algorithm.algorithm1(model)
    bd = stages.breakdown
    assert len(stages) == 5 and bd.stage == 5 and bd.hypothesis == "Assumption 4.3 (last clause)"
    assert "coordinate 4 leaves the support" in bd.measured and "t^-1.0" in bd.measured
    assert bd.T > stages[-1].T


def test_one_over_t_decay_in_a_linear_model():
    """The same degeneracy in closed form: Ltilde = |beta - (1, 0)|^2 / 2. From beta = (1, 1e-3) the flow has
    g_2 = -beta_2 -> 0 and beta_2 ~ 1/(2t): Assumption 4.3 (last clause) fails, stage (B) does not."""
    model = linear(np.eye(2), [1.0, 0.0])
    res = algorithm.train_active(model, np.array([1.0, 1e-3]), np.array([0, 1]), stage=2)
    assert not res.failure and [j for j, *_ in res.degenerate] == [1]
    assert res.degenerate[0][3] == pytest.approx(1.0, abs=0.05)         # decay exponent of 1/t
    np.testing.assert_allclose(res.beta, [1.0, 0.0], atol=1e-8)


def test_zero_tests_are_stable_under_rounding_level_perturbations():
    """Issue 21, item 1: rank-deficient and nearly singular inputs perturbed at 1e-15 give the same answer in
    every zero test of Algorithm 1 (race liveness, ties, Hessian positivity, drops)."""
    rng = np.random.default_rng(0)
    base = algorithm.algorithm1(linear(np.eye(3), [0.9, 0.4, 0.4]))          # exact tie at stage 2
    sing = algorithm.algorithm1(linear([[1, 1, 0], [1, 1, 0], [0, 0, 1]], [0.5, 0.5, 0.2]))  # singular Sigma
    for _ in range(5):
        e = 1e-15 * rng.standard_normal(3)
        tie = algorithm.algorithm1(linear(np.eye(3), list(np.array([0.9, 0.4, 0.4]) + e)))
        assert (len(tie), tie.breakdown.stage, tie.breakdown.hypothesis) == \
            (len(base), base.breakdown.stage, base.breakdown.hypothesis)
        E = 1e-15 * rng.standard_normal((3, 3))
        pert = algorithm.algorithm1(linear(np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]]) + (E + E.T) / 2,
                                           list(np.array([0.5, 0.5, 0.2]) + e)))
        assert [s.coordinate for s in pert] == [s.coordinate for s in sing]
        assert (pert.breakdown is None) == (sing.breakdown is None)
        if sing.breakdown is not None:
            assert pert.breakdown.hypothesis == sing.breakdown.hypothesis
    gamma = np.array([0.0, 1e-16, -1e-16, 0.3])
    for _ in range(5):
        d = algorithm.time_until_active(gamma + 1e-15 * rng.standard_normal(4), np.ones(4), [],
                                        algorithm.g_resolution(gamma, np.inf, 0.0, 0))
        assert list(np.isfinite(d)) == [False, False, False, True]


def test_race_margin_error_propagates_both_uncertainties():
    """The uncertainty of a race margin Delta(i) = (b_i - target)/g_i (Algorithm 1's race for the next stage):
    |Delta| g_err + b_err over |g_i|, plus the rounding of Delta; with g_i = 4 the division by g_i is seen."""
    from stagewise.numerics.roundoff import roundoff
    err = algorithm._race_margin_error(np.array([2.0]), np.array([4.0]), 0.1, 0.01, 0)
    assert err == pytest.approx((2.0 * 0.01 + 0.1) / 4.0 + roundoff(2.0, 4), rel=1e-12)
    assert err < 0.1
