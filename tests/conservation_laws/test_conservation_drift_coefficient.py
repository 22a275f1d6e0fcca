"""The drift's coefficient (Proposition ``prf:thm-conservation-laws-one-step``, over a horizon): gradient descent
moves each invariant by ``eta C(t)``, ``C(t) = int_0^t Q(grad L) ds`` along the flow, to first order in ``eta``; runs
that give every step size the same number of steps do not."""
import numpy as np
import pytest
import torch

from conservation_problem import small_problem
from stagewise.conservation_laws import bugs, drift_coefficient, drift_experiment, gradient_descent
from stagewise.numerics.flows import gradient_descent_batched

ETAS, HORIZON = [0.04, 0.02, 0.01], 2.0


@pytest.fixture(scope="module", params=["diagonal", "relu"])
def case(request):
    family, data, params = small_problem(request.param, scale=0.5)
    result = drift_experiment.family_descent(family, data, params, ETAS, HORIZON, torch.Generator().manual_seed(3))
    flow = drift_coefficient.descent_flow_coefficient(family, data, params, result.etas, HORIZON, 1e-8)
    return family, data, params, result, flow


def test_record_times_are_those_of_the_descent_loop():
    """t = eta x step of the step nearest to each of the equally spaced record times."""
    times = drift_coefficient.record_times(0.04, 1.0, 10)                    # 25 steps, a record every 2.5
    assert np.allclose(times / 0.04, np.round(np.arange(11) * 2.5)) and times[-1] == pytest.approx(1.0)
    assert np.allclose(drift_coefficient.record_times(0.01, 1.0, 10), np.linspace(0, 1, 11))


def test_flow_coefficient_starts_at_zero_and_bounds_by_its_magnitude(case):
    """C(0) = 0, M(0) = 0, M grows, and |C_j| <= M_j (Q_j = A - B, Q_j^+ = A + B)."""
    *_, flow = case
    assert float(flow.coefficient[0].abs().max()) == 0.0 and float(flow.magnitude[0].abs().max()) == 0.0
    assert (flow.magnitude[1:] >= flow.magnitude[:-1] - 1e-15).all()
    assert (flow.coefficient.abs() <= flow.magnitude + 1e-12).all()


def test_descent_drift_is_eta_times_the_flow_coefficient_to_first_order(case):
    """The relative gap of (I(t) - I(0)) / eta to C(t) is small and halves with eta; within its window."""
    *_, result, flow = case
    gaps = drift_coefficient.coefficient_gaps(result, flow, HORIZON).max(1)   # per step size, decreasing eta
    assert gaps[0] < 0.1 and np.all(gaps[1:] < gaps[:-1])
    assert np.allclose(gaps[:-1] / gaps[1:], 2.0, rtol=0.35)                 # first order in eta
    assert drift_coefficient.coefficient_excess(result, flow, HORIZON) < 1.0


def test_same_step_count_is_rejected(case):
    """The control: every step size run for the step count of the largest; the small ones stop short of T."""
    family, data, params, result, flow = case
    short = drift_coefficient.same_step_count_run(family, data, params, result.etas, HORIZON)
    assert torch.allclose(short.invariants[:, 0], result.trajectory.invariants[:, 0])   # the largest: unchanged
    assert drift_coefficient.same_step_count_excess(family, data, params, result, flow, HORIZON) > 1.0


def test_same_step_count_bug_runs_every_step_size_for_the_same_steps(monkeypatch):
    """The catalogue's bug: the records of the smaller step sizes are those of the control's shortened runs."""
    family, data, params = small_problem("diagonal", scale=0.5)
    monkeypatch.setattr(gradient_descent, "gradient_descent_batched",
                        lambda *a, **k: bugs.same_step_count(*a, original=gradient_descent_batched, **k))
    buggy = gradient_descent.gd_drift_study(family, data, params, ETAS, HORIZON)
    monkeypatch.undo()
    short = drift_coefficient.same_step_count_run(family, data, params, ETAS, HORIZON)
    assert np.allclose(buggy.times, np.linspace(0, HORIZON, 101))
    assert torch.allclose(buggy.invariants, short.invariants)


def test_the_coefficient_window_is_the_quadratic_models_first_order_error():
    """On a quadratic loss L = lambda w^2 / 2, eta sum_t g_t^2 over the whole descent is lambda w0^2 / (2 - x) and
    the flow's integral of g^2 is lambda w0^2 / 2 (x = eta lambda): their relative gap is x / (2 - x) exactly, which
    the window scales by COEFFICIENT_SLACK (a solver error of rtol on top). Summed here step by step, not from the
    formula (control: a window of x / (3 - x) misses it)."""
    lam, w0, rtol = 3.0, 0.7, 1e-6
    for x in (0.05, 0.3, 0.9):
        eta = x / lam
        steps = np.arange(20_000)
        descent = eta * np.sum((lam * w0 * (1 - x) ** steps) ** 2)
        flow = lam * w0 ** 2 / 2                           # int_0^inf (lam w0 e^{-lam t})^2 dt
        gap = descent / flow - 1
        window = drift_coefficient.coefficient_window(np.array([x]), rtol)[0]
        extra = window - drift_coefficient.COEFFICIENT_SLACK * gap
        assert extra == pytest.approx(drift_coefficient.FLOW_SLACK * rtol, rel=1e-9, abs=1e-12), x
        assert abs(drift_coefficient.COEFFICIENT_SLACK * x / (3 - x) - drift_coefficient.COEFFICIENT_SLACK * gap) > 1e-3
