"""The chapter's bug catalogue (``stagewise power``): well formed, and each bug changes what it targets."""
import numpy as np
import pytest

from stagewise.core.checks import catalogue
from stagewise.core.sweep import power
from stagewise.relu_orthogonal import algorithm, bugs, data, staircase, training
from relu_problem import hand_example


def test_catalogue_is_well_formed():
    found = power.catalogue("relu-orthogonal")
    assert len(found) >= catalogue.MIN_BUGS and sum(b.ci for b in found) == 1
    assert len({b.category for b in found}) >= 6


def test_bugs_change_what_they_target():
    """Each replacement, called like the original, gives a different result (a bug that changes nothing would
    survive for nothing)."""
    y, s, M = hand_example()
    r = np.array([0.5, 0.1])
    assert not np.allclose(bugs.gradient_flow_rates(r, 0.2, original=algorithm.neuron_rates),
                           algorithm.neuron_rates(r, 0.2))
    U, _ = bugs.unnormalised_init(4, 9, "positive", np.random.default_rng(0), original=data.balanced_init)
    assert not np.allclose(np.linalg.norm(U, axis=1), 1.0)
    lp = algorithm.algorithm1(y, M, s)
    steps = training.steps_for(lp, 100.0, 0.01, 2.0, 3)
    assert bugs.halved_steps(lp, 100.0, 0.01, 2.0, 3, original=training.steps_for) == steps // 2
    assert bugs.swapped_eta_c(lp, 100.0, 0.01, 2.0, 3, original=training.steps_for) != steps
    shifted = bugs.plateau_before_removal(y, M, s, original=algorithm.algorithm1)
    assert shifted.plateau_losses[1] == lp.plateau_losses[0] and shifted.plateau_losses[-1] > 0
    assert bugs.one_sign_min_norm(np.array([3.0, -4.0]), original=None) == 10.0
    assert staircase.algorithm1 is algorithm.algorithm1      # the target is the name the chapter's code looks up
    W0 = np.array([[1.0, 1.0], [1.0, -1.0]])
    yy, ss = np.array([1.0, -1.0]), np.array([1.0, 1.0])
    assert not np.array_equal(bugs.mask_without_signs(W0, yy, ss, original=None), data.activation_mask(W0, yy, ss))
    from stagewise.relu_orthogonal import width_study
    W, a, lazy = np.array([[1.0, 2.0]]), np.array([3.0]), np.array([0.0, 1.0, 2.0])
    W0, a0 = np.array([[0.5, 1.0]]), np.array([1.0])
    assert (bugs.theta_order_swapped(W, a, W0, a0, lazy, original=None)
            != width_study.lazy_distance(W, a, W0, a0, lazy))


class _Reached(Exception):
    pass


def _raise(*args, **kwargs):
    raise _Reached


def test_shared_targets_reach_every_study(monkeypatch):
    """The bug targets ``gd_norms:gd_numba`` and ``norm_scaling:min_norm_sq`` reach every study that uses them: the
    Figure 5 GD runs and the Figure 6 runs (``width_study`` looks both names up through those modules at call time),
    and for the minimal norm the Theorem 3 study too."""
    from stagewise.relu_orthogonal import gd_norms, norm_scaling, width_study
    y, W, a = np.ones((1, 4)), np.ones((1, 2, 4)), np.ones((1, 2))
    with monkeypatch.context() as m:
        m.setattr(gd_norms, "gd_numba", _raise)
        for run in (lambda: gd_norms.norm_vs_n_gd(0, 4, 30.0, draws=1), lambda: width_study.he_training(y, W, a, 10),
                    lambda: width_study.norm_vs_width(0, 1, 1, [16], 30.0, widths=[16], gd_draws=1)):
            with pytest.raises(_Reached):
                run()
    with monkeypatch.context() as m:
        m.setattr(norm_scaling, "min_norm_sq", _raise)
        for run in (lambda: norm_scaling.norm_vs_n(0, 4, 1), lambda: gd_norms.norm_vs_n_gd(0, 4, 30.0, draws=1),
                    lambda: width_study.norm_vs_width(0, 1, 1, [16], 30.0, widths=[16], gd_draws=1)):
            with pytest.raises(_Reached):
                run()
