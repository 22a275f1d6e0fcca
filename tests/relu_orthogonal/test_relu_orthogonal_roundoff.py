"""Issue 21, item 1: the chapter's decisions do not depend on rounding. Inputs perturbed at 1e-15 (what another
BLAS kernel or CPU changes) give the same answer in every zero, tie and sign test of the relu-orthogonal chapter."""
import numpy as np

from stagewise.relu_orthogonal import algorithm, assumption4, data, norms, sweep, training


def _perturbed(y, rng, size=1e-15):
    return y * (1 + size * rng.standard_normal(y.shape))


def test_algorithm1_decisions_survive_rounding_noise():
    """Algorithm 1: which neurons grow (integer decision), ties (Rademacher labels, exact up to rounding) and jump
    orders are the same for labels perturbed at 1e-15, for draws with and without ties and uncovered points."""
    rng = np.random.default_rng(0)
    for q in range(60):
        labels = ("rademacher", "gaussian", "abs_gaussian")[q % 3]
        y, U, s, M = data.draw_instance(data.draw_seed(7, q), 16, 8, labels, "random")
        ref = algorithm.algorithm1(y, M, s)
        for _ in range(3):
            lp = algorithm.algorithm1(_perturbed(y, rng), M, s)
            assert (lp.tie is None) == (ref.tie is None)
            assert lp.neurons.tolist() == ref.neurons.tolist()
            assert np.array_equal(lp.active, ref.active)
            np.testing.assert_allclose(lp.times, ref.times, rtol=1e-12)


def test_exact_ties_are_found_at_large_n():
    """Two neurons whose waiting times are equal up to rounding of sums over n = 2^14 labels tie (the tie tolerance
    covers that rounding), and a perturbation at 1e-15 does not break the tie."""
    n = 2 ** 14
    rng = np.random.default_rng(1)
    half = rng.standard_normal(n // 2) ** 2 + 0.1
    y = np.concatenate([half, rng.permutation(half)])              # same norm on both halves, another order
    M = np.zeros((n, 2), bool); M[: n // 2, 0] = True; M[n // 2:, 1] = True
    for yy in (y, _perturbed(y, rng)):
        lp = algorithm.algorithm1(yy, M, np.ones(2))
        assert lp.tie is not None and sorted(lp.tie[1].tolist()) == [0, 1]


def test_stage_flags_not_rates_decide_liveness():
    """Diagnostics use Algorithm 1's integer liveness flags: a neuron with a tiny but positive rate (labels 1e-150)
    is live, a neuron without unfitted points is not, whatever its rate rounds to."""
    y = np.array([1.0, 1e-150, 2.0])
    M = np.array([[1, 0], [0, 1], [1, 0]], bool)
    lp = algorithm.algorithm1(y, M, np.ones(2))
    assert lp.active[0].tolist() == [True, True] and lp.active[1].tolist() == [False, True]
    assert lp.K == 2 and lp.rates[1, 1] > 0


def test_sign_flips_counted_beyond_rounding():
    """GD's sign-flip counter: none for balanced runs whatever the perturbation of the data at 1e-15, and every
    genuine crossing of a_j through 0 (unbalanced init) is counted."""
    rng = np.random.default_rng(2)
    y, U, s, M = data.draw_instance(3, 12, 4, "gaussian", "random")
    for yy in (y, _perturbed(y, rng)):
        Ub, bb, lb = training.balanced_state(U, s, -5.0)
        res = training.gd_numba(yy[None], Ub[None], bb[None], lb[None], np.array([0.2]), 1.0, np.array([3000]))
        assert res.sign_flips[0] == 0
        unb = training.gd_numba(yy[None], U[None], -0.1 * s[None], np.full((1, 4), -5.0), np.array([0.2]), 1.0,
                                np.array([3000]))
        assert unb.sign_flips[0] > 0
    zero = training.gd_numba(y[None], np.zeros((1, 4, 12)), np.zeros((1, 4)), np.zeros((1, 4)), np.array([0.2]), 1.0,
                             np.array([40]), track_balance=True)
    assert zero.sign_flips[0] == 0 and np.all(zero.imbalance == 0) and np.all(zero.imbalance_max == 0)


def test_norm_and_loss_thresholds_are_derived_and_stable():
    """The AM-GM lower bound allows exactly the residual's slack (an interpolator at rounding level sits on it), the
    interpolation threshold lies between the converged loss and the smallest uncovered plateau, and the sandwich
    test accepts ratios within rounding of 1."""
    y = np.array([3.0, -4.0, 1.0])
    opt = norms.min_norm_sq(y)
    assert norms.norm_lower_bound(y, 0.0, 1.0) < opt and opt - norms.norm_lower_bound(y, 0.0, 1.0) < 1e-12
    assert norms.norm_lower_bound(y, 1e-4, 1.0) == opt - 4 * np.sqrt(2 * 3 * 1e-4) - (opt - norms.norm_lower_bound(y, 0.0, 1.0))
    yy, U, s, M = data.draw_instance(4, 64, 6, "abs_gaussian", "positive")
    lp = algorithm.algorithm1(yy, M, s)
    thr = assumption4.interpolation_threshold(lp, 64)
    assert np.exp(-40) * lp.plateau_losses[0] < thr < 0.5 * np.min(yy ** 2) / 64
    assert norms._in_sandwich(1 - 1e-15, 2.0, True, 64) and not norms._in_sandwich(1 - 1e-6, 2.0, True, 64)


def test_extrapolation_allowance_covers_curvature_not_a_wrong_limit():
    """The sweep's extrapolation allowance: exact for t = t0 + C/L, grows with a 1/L^2 term, and does not absorb
    a limit that is off by more than the curvature."""
    Ls = np.array([100.0, 200.0, 400.0])
    t0, allow = sweep.extrapolation_allowance(Ls, 10 + 30 / Ls, 0.2)
    assert abs(t0 - 10) < 1e-12 and allow < 0.02          # quantisation only: 7 eta / min L
    t0, allow2 = sweep.extrapolation_allowance(Ls, 10 + 30 / Ls + 3000 / Ls ** 2, 0.2)
    assert allow2 > allow and abs(t0 - 10) <= allow2
    assert abs(t0 - 10.3) > allow2
