"""The chapter's bug catalogue (stagewise.diagonal_incremental.bugs): well formed, and each replacement makes the
slip its docstring names (checked on small inputs; the chapter's checks that kill each bug are in the power matrix)."""
import functools
import importlib

import numpy as np
import torch

from stagewise.core.power import CATEGORIES, MIN_BUGS
from stagewise.diagonal_incremental import algorithm, bugs, descent, finite_alpha, staircase
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
    assert staircase.count_plateaus(tau, stair) == 3
    assert bugs.count_plateaus_absolute(tau, stair * np.where(tau < 1, 1.0, 0.2)) < 3   # small late drops missed


def test_race_memoryless_and_conservation_same_steps():
    gamma, b = np.array([0.5, -0.25]), np.array([0.2, 1.5])
    assert np.allclose(_bound("race-memoryless")(gamma, b, np.zeros(0, int), 0.0),
                       algorithm.time_until_active(gamma, np.ones(2), np.zeros(0, int), 0.0))
    model = LinearDiagonal(torch.eye(2, dtype=torch.float64), torch.tensor([1.0, -0.5], dtype=torch.float64))
    u0, v0 = np.array([0.8, 0.3]), np.array([-0.2, 0.5])
    wrong = _bound("conservation-same-steps")(model, u0, v0, [0.04, 0.02, 0.01], 2.0, alpha=0.1)
    same = descent.conservation_study(model, u0, v0, [0.04, 0.02, 0.01], 2.0, alpha=0.1, same_steps=True)
    assert np.allclose(wrong.drift, same.drift)
