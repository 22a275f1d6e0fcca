"""The curvature that decides which step sizes the slope of Proposition ``prf:thm-conservation-laws-one-step``
is fitted over, and the quadratic model that sets the slope window."""
import numpy as np
import pytest
import torch

from conservation_problem import small_problem
from stagewise.conservation_laws import drift_experiment, problem_set
from stagewise.conservation_laws.curvature import hessian_norm, quadratic_model_factor
from stagewise.conservation_laws.problem import loss
from stagewise.numerics.flows import DivergenceError


def _exact_norm(family, params, data, b):
    """||Hess L||_2 of problem b from the dense Hessian (autograd.functional)."""
    shapes = [p[b].shape for p in params]
    sizes = [int(np.prod(s)) for s in shapes]

    def f(flat):
        parts = [x.reshape(1, *s) for x, s in zip(torch.split(flat, sizes), shapes)]
        return loss(family, parts, data).sum()
    H = torch.autograd.functional.hessian(f, torch.cat([p[b].reshape(-1) for p in params]))
    return float(torch.linalg.eigvalsh(H).abs().max())


@pytest.mark.parametrize("name", ["linear", "relu", "deep_relu", "tanh"])
def test_hessian_norm_is_the_largest_absolute_eigenvalue(name):
    """Power iteration converges to ||Hess L||_2 and never exceeds it (every iterate is a lower bound)."""
    family, data, params = small_problem(name, seeds=2, n=4, d=4, width=3, depth=3)
    precise = hessian_norm(family, params, data, torch.Generator().manual_seed(0), iterations=400)
    quick = hessian_norm(family, params, data, torch.Generator().manual_seed(0))
    for b in range(2):
        exact = _exact_norm(family, params, data, b)
        assert abs(float(precise[b]) - exact) <= 1e-6 * exact
        assert 0.9 * exact <= float(quick[b]) <= exact * (1 + 1e-12)


def test_quadratic_model_is_gradient_descent_on_a_quadratic():
    """eta sum_t g_t^2 over a converged GD run on L = lambda x^2 / 2 is the flow's integral / (1 - eta lambda / 2)."""
    lam, eta, x = 7.0, 0.05, 1.0
    total = 0.0
    for _ in range(5000):
        g = lam * x
        total += eta * g**2
        x -= eta * g
    flow = lam / 2.0                       # int_0^inf (lam e^{-lam t})^2 dt for x(0) = 1
    assert abs(total / flow - quadratic_model_factor(eta, lam)) < 1e-12
    assert quadratic_model_factor(0.0, lam) == pytest.approx(1.0, abs=1e-15)


@pytest.fixture(scope="module")
def stiff():
    """Problems whose ReLU curvature puts the largest step sizes beyond eta lambda_max <= 1/2."""
    return problem_set.build_problems(2, 6, 16, 8, 3, 1.0, torch.Generator().manual_seed(1),
                                      torch.Generator().manual_seed(2))


def test_step_sizes_are_fitted_only_while_eta_lambda_max_is_small(stiff):
    """Rows with eta lambda_max > 1/2 leave the fit; step sizes with eta lambda_max(0) > 1 are not run."""
    family = stiff.families["relu"]
    result = drift_experiment.family_descent(family, stiff.data["relu"], stiff.params0["relu"],
                                             [0.2, 0.1, 0.05, 0.025, 0.0125, 0.00625, 0.003125], 1.0,
                                             torch.Generator().manual_seed(3))
    lam0 = result.curvature0.max()
    assert all(eta * lam0 <= drift_experiment.RUN_BOUND for eta in result.etas)
    assert all(eta * lam0 > drift_experiment.RUN_BOUND for eta in result.skipped)
    assert result.skipped, "the fixture must be stiff enough to skip a step size"
    products = np.asarray(result.etas)[:, None] * result.curvature
    assert np.array_equal(result.qualifies, products <= drift_experiment.FIT_BOUND)
    for s in range(2):
        fitted = result.fitted(s)
        assert len(fitted) >= 3 and len(fitted) < len(result.etas)      # some run, but not all, are fitted
        low, high = result.windows[s]
        assert low == pytest.approx(1 - drift_experiment.SLOPE_ALLOWANCE)
        assert high == pytest.approx(1 + drift_experiment.SLOPE_ALLOWANCE + result.model_excess[s])
        assert low <= result.slopes[s] <= high
    assert "eta lambda_max" in result.describe()


def test_too_few_qualifying_step_sizes_give_no_slope(stiff):
    """Fewer than three step sizes with eta lambda_max <= 1/2: the slope is NaN (the chapter's 'not run')."""
    result = drift_experiment.family_descent(stiff.families["relu"], stiff.data["relu"], stiff.params0["relu"],
                                             [0.2, 0.1, 0.05], 0.5, torch.Generator().manual_seed(3))
    assert all(len(result.fitted(s)) < 3 for s in range(2))
    assert all(np.isnan(x) for x in result.slopes)


def test_a_step_size_that_diverges_is_dropped(monkeypatch, stiff):
    """When the curvature grows past 2 / eta along a run, that step size is dropped and the rest still run."""
    from stagewise.conservation_laws import drift_experiment as module
    original, calls = module.gd_drift_study, []

    def diverging(family, data, params0, etas, horizon, progress=None):
        calls.append(list(etas))
        if len(calls) == 1:
            raise DivergenceError("parameter etas: training diverged")
        return original(family, data, params0, etas, horizon, progress=progress)
    monkeypatch.setattr(module, "gd_drift_study", diverging)
    result = module.family_descent(stiff.families["diagonal"], stiff.data["diagonal"], stiff.params0["diagonal"],
                                   [0.01, 0.005, 0.0025, 0.00125], 0.2, torch.Generator().manual_seed(3))
    assert calls[1] == calls[0][1:] and result.skipped[calls[0][0]] == "diverged"
    assert "diverged at eta" in result.describe()


def test_a_network_without_gradient_has_no_resolved_drift():
    """All ReLUs dead (zero gradient): the drift is zero, no row is resolved, no slope is fitted (C_1 = 0)."""
    family, data, params = small_problem("relu", seeds=1)
    W, a = params
    away = -data.X.sum(0) / data.X.sum(0).norm()      # <away, x_i> = -|x_i|^2 / |sum x| < 0: orthogonal inputs
    dead = [torch.zeros_like(W) + away, a]
    assert bool((data.X @ dead[0][0].T < 0).all())
    result = drift_experiment.family_descent(family, data, dead, [0.04, 0.02, 0.01], 0.5,
                                             torch.Generator().manual_seed(0))
    assert not result.resolved.any() and np.isnan(result.slopes[0])
