"""The chapter's bug catalogue (stagewise.diagonal_incremental.bugs): well formed, and each replacement makes the
slip its docstring names (checked on small inputs; the chapter's checks that kill each bug are in the power matrix)."""
import functools
import importlib

import numpy as np
import pytest
import torch

from stagewise.core.checks.catalogue import CATEGORIES, MIN_BUGS
from stagewise.diagonal_incremental import algorithm, bugs, descent, finite_alpha, plateau_states
from stagewise.diagonal_incremental.networks import LinearDiagonal


def test_catalogue_is_well_formed():
    names = [b.name for b in bugs.BUGS]
    assert len(names) == len(set(names)) >= MIN_BUGS
    assert sum(b.ci for b in bugs.BUGS) == 1
    assert len({b.category for b in bugs.BUGS}) >= 6 and all(b.category in CATEGORIES for b in bugs.BUGS)
    for b in bugs.BUGS:
        module, _, attr = b.target.partition(":")
        assert hasattr(importlib.import_module(module), attr), b.target
        assert len(b.doc) >= 40, b.name


def _bound(name):
    b = {x.name: x for x in bugs.BUGS}[name]
    module, _, attr = b.target.partition(":")
    return functools.partial(b.replacement, original=getattr(importlib.import_module(module), attr))


def test_race_factor_two_halves_the_times_until_active():
    gamma, b = np.array([0.5, -0.25]), np.ones(2)
    right = algorithm.time_until_active(gamma, b, np.zeros(0, int), 0.0)
    assert np.allclose(_bound("race-factor-two")(gamma, b, np.zeros(0, int), 0.0), right / 2)


def test_gradient_descent_bugs_change_time_scale_steps_and_start():
    model = LinearDiagonal(torch.eye(2, dtype=torch.float64), torch.tensor([1.0, -0.5], dtype=torch.float64))
    u0, v0 = np.array([0.8, 0.3]), np.array([-0.2, 0.5])
    right = descent.gradient_descent(model, u0, v0, [1e-2], [0.05], 40, record_every=10)
    squeezed = _bound("gd-time-alpha-squared")(model, u0, v0, [1e-2], [0.05], 40, record_every=10)
    assert np.allclose(squeezed.tau, right.tau / 2)
    assert _bound("gd-half-steps")(model, u0, v0, [1e-2], [0.05], 40, record_every=10).t[0, -1] == right.t[0, -1] / 2
    low = _bound("gd-init-alpha-squared")(model, u0, v0, [1e-2], [0.05], 40, record_every=10)
    assert np.allclose(low.tau, right.tau) and np.allclose(low.beta[0, 0], right.beta[0, 0] * 1e-4)


def test_thresholds_and_plateau_counter_bugs():
    b0, b_hi = finite_alpha.log_scale_thresholds(np.array([0.8]), np.array([0.3]), 1e-8)
    w0, w_hi = _bound("b-hi-sign")(np.array([0.8]), np.array([0.3]), 1e-8)
    assert np.allclose(w0, b0) and np.allclose(w_hi - 2, 2 - b_hi)
    tau = np.linspace(0, 3, 601)
    stair = np.where(tau < 1, 1.0, np.where(tau < 2, 0.5, 0.05))
    assert plateau_states.count_plateaus(tau, stair, [1.0, 0.5, 0.05]) == 3
    late = stair * np.where(tau < 1, 1.0, 0.2)                                # 1 -> 0.1 -> 0.01
    assert plateau_states.count_plateaus(tau, late, [1.0, 0.1, 0.01]) == 3
    assert bugs.count_plateaus_absolute(tau, late, [1.0, 0.1, 0.01]) < 3     # small late drops missed


def test_race_memoryless_and_conservation_same_steps():
    gamma, b = np.array([0.5, -0.25]), np.array([0.2, 1.5])
    assert np.allclose(_bound("race-memoryless")(gamma, b, np.zeros(0, int), 0.0),
                       algorithm.time_until_active(gamma, np.ones(2), np.zeros(0, int), 0.0))
    model = LinearDiagonal(torch.eye(2, dtype=torch.float64), torch.tensor([1.0, -0.5], dtype=torch.float64))
    u0, v0 = np.array([0.8, 0.3]), np.array([-0.2, 0.5])
    wrong = _bound("conservation-same-steps")(model, u0, v0, [0.04, 0.02, 0.01], 2.0, alpha=0.1)
    same = descent.conservation_study(model, u0, v0, [0.04, 0.02, 0.01], 2.0, alpha=0.1, same_steps=True)
    assert np.allclose(wrong.drift, same.drift)


class _Reached(Exception):
    pass


def _raise(*args, **kwargs):
    raise _Reached


def test_targets_reach_every_caller(monkeypatch):
    """The bug targets are the names the studies look up at call time: ``staircase:log_scale_flow`` reaches every
    exact flow of the studies (Algorithm 1's study, the solver check's fresh flow, the tighter plateau solve),
    ``transitions:transition_times`` the transition times (also those the finite-alpha study measures) and
    ``plateau_states:count_plateaus`` the plateau count."""
    from stagewise.diagonal_incremental import staircase, transitions
    model = LinearDiagonal(torch.eye(2, dtype=torch.float64), torch.tensor([1.0, -0.5], dtype=torch.float64))
    tau = np.linspace(0.0, 1.0, 11)
    fs = staircase.FlowStudy([1e-8], np.ones(2), np.zeros(2), [], tau, {"beta": np.zeros((11, 1, 2)),
                                                                        "loss": np.ones((11, 1))})
    ps = plateau_states.PlateauStudy(np.array([0.5]), [5], 1, 0.0, 0.0, np.zeros((1, 2)), np.zeros((1, 2)),
                                     np.zeros((11, 2)))
    with monkeypatch.context() as m:
        m.setattr(staircase, "log_scale_flow", _raise)
        for run in (lambda: staircase.flow_study(model, [1e-8], np.ones(2), np.zeros(2), rtol=1e-8),
                    lambda: transitions.flow_times(model, fs, 0, 1e-8),
                    lambda: plateau_states.plateau_weight_errors(model, fs, ps, rtol=1e-8)):
            with pytest.raises(_Reached):
                run()
    assert finite_alpha.measured_times is transitions.measured_times
    with monkeypatch.context() as m:
        m.setattr(transitions, "transition_times", _raise)
        with pytest.raises(_Reached):
            transitions.measured_times(model, fs)
    with monkeypatch.context() as m:
        m.setattr(plateau_states, "count_plateaus", _raise)
        with pytest.raises(_Reached):
            plateau_states.plateaus_match(tau, np.ones(11), [1.0, 0.5])
