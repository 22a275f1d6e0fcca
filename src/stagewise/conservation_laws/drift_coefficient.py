"""The drift's coefficient (Proposition ``prf:thm-conservation-laws-one-step``, section "The drift is eta times a
flow quantity"): over a fixed horizon, gradient descent moves each invariant by ``eta C_j(t)`` to first order in
``eta``, where ``C_j(t) = int_0^t Q_j(grad L(theta(s))) ds`` is read off the *gradient flow*
(``flow_coefficient``). ``coefficient_excess`` compares the descent runs with it at the time ``t = eta x step``
of each record, and its control ``same_step_count_excess`` makes the comparison for descent runs that all take
the same number of steps (the step count of the largest step size), so that the smaller step sizes stop short of
the horizon."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from stagewise.conservation_laws.drift_experiment import FIT_BOUND, FamilyDescent
from stagewise.conservation_laws.flow_experiment import FLOW_SLACK
from stagewise.conservation_laws.gradient_descent import gd_drift_study
from stagewise.conservation_laws.models import Family, Params
from stagewise.conservation_laws.problem import Data, gradients
from stagewise.conservation_laws.trajectory import Trajectory
from stagewise.numerics.flows import integrate_flow
from stagewise.numerics.params import flatten_batched, unflatten_batched


@dataclass(frozen=True)
class FlowCoefficient:
    """Along the gradient flow, at ``times``: ``coefficient`` ``C_j(t) = int_0^t Q_j(grad L) ds`` and
    ``magnitude`` ``int_0^t Q_j^+(grad L) ds`` (``Q_j = A - B``, two sums of squares; ``Q^+ = A + B``: the size
    that the first-order error of ``C_j`` is relative to), both of shape ``(T, S, K)``; ``rtol``: the solver's
    relative tolerance."""

    times: np.ndarray
    coefficient: torch.Tensor
    magnitude: torch.Tensor
    rtol: float

    def at(self, times: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """``(C, M)`` at the given times (each one of :attr:`times`)."""
        index = [int(np.argmin(np.abs(self.times - t))) for t in times]
        return self.coefficient[index], self.magnitude[index]


def record_times(eta: float, horizon: float, n_records: int = 100) -> np.ndarray:
    """The times ``t = eta x step`` of the records of a descent run of ``round(horizon / eta)`` steps: the step
    nearest to each of ``n_records + 1`` equally spaced times (as :func:`stagewise.numerics.flows.
    gradient_descent_batched` records them)."""
    steps = np.round(horizon / eta)
    return eta * np.round(np.arange(n_records + 1, dtype=np.float64) * steps / n_records)


def flow_coefficient(family: Family, data: Data, params0: Params, times: np.ndarray, rtol: float) -> FlowCoefficient:
    """Gradient flow with ``C_j(t)`` and its magnitude integrated alongside the weights (one adaptive DOP853
    solve, ``atol = rtol / 100``), recorded at ``times`` (sorted, from 0)."""
    size = flatten_batched(params0).shape[1]

    def field(state: torch.Tensor) -> torch.Tensor:
        grads = gradients(family, unflatten_batched(state[:, :size], params0), data)
        return torch.cat([-flatten_batched(grads), family.invariant(grads), family.magnitude(grads)], dim=1)

    seeds, entries = params0[0].shape[0], family.invariant(params0).shape[-1]
    start = torch.cat([flatten_batched(params0), params0[0].new_zeros(seeds, 2 * entries)], dim=1)
    states = integrate_flow(field, start, times, rtol=rtol, atol=rtol * 1e-2)
    return FlowCoefficient(np.asarray(times), states[:, :, size:size + entries], states[:, :, size + entries:], rtol)


def descent_flow_coefficient(family: Family, data: Data, params0: Params, etas: list[float], horizon: float,
                             rtol: float) -> FlowCoefficient:
    """:func:`flow_coefficient` at the record times of every step size of ``etas``."""
    times = np.unique(np.concatenate([record_times(eta, horizon) for eta in etas] + [np.zeros(1)]))
    return flow_coefficient(family, data, params0, times, rtol)


#: The coefficient rows allow this many times the quadratic model's first-order error: the model is exact on a
#: quadratic loss, and the ReLU networks' kinks add an O(eta) error of the same order that it leaves out (their
#: activation patterns change at slightly different steps for different step sizes).
COEFFICIENT_SLACK = 3.0


def coefficient_window(eta_lambda: np.ndarray, rtol: float) -> np.ndarray:
    """The largest relative gap allowed between ``(I(t) - I(0)) / eta`` and ``C(t)``: ``COEFFICIENT_SLACK`` times
    the quadratic model's first-order error ``eta lambda / (2 - eta lambda)`` (``eta sum_t Q(g_t)`` is
    ``1 / (1 - eta lambda / 2)`` times the flow's integral on a quadratic loss), plus the error of the solver that
    integrated ``C`` (``FLOW_SLACK x rtol``, as the flow rows allow)."""
    x = np.asarray(eta_lambda, dtype=float)
    return COEFFICIENT_SLACK * x / (2.0 - x) + FLOW_SLACK * rtol


def coefficient_gaps(result: FamilyDescent, flow: FlowCoefficient, horizon: float,
                     trajectory: Trajectory | None = None) -> np.ndarray:
    """Per (step size, seed), shape ``(E, S)``: ``max_{t, j} |(I_j(t) - I_j(0)) / eta - C_j(t)|`` over
    ``max_{t, j} M_j(t)``, each record taken at its time ``t = eta x step`` (``trajectory``: another run of the
    same step sizes, by default the family's own)."""
    trajectory = trajectory if trajectory is not None else result.trajectory
    gaps = np.full((len(result.etas), result.drift.shape[1]), np.nan)
    for e, eta in enumerate(result.etas):
        C, M = flow.at(record_times(eta, horizon, len(trajectory.times) - 1))             # (T, S, K)
        change = (trajectory.invariants[:, e] - trajectory.invariants[:1, e]) / eta
        gaps[e] = ((change - C).abs().amax(dim=(0, 2)) / M.abs().amax(dim=(0, 2))).cpu().numpy()
    return gaps


def coefficient_excess(result: FamilyDescent, flow: FlowCoefficient, horizon: float,
                       trajectory: Trajectory | None = None) -> float:
    """The largest ratio of :func:`coefficient_gaps` to :func:`coefficient_window`, over the (step size, seed)
    pairs with ``eta lambda_max <= FIT_BOUND``: at most 1 when the drift is ``eta`` times the flow's ``C(t)`` to
    first order (NaN when no pair qualifies)."""
    if not result.etas:
        return float("nan")
    products = np.asarray(result.etas)[:, None] * result.curvature
    ratio = coefficient_gaps(result, flow, horizon, trajectory) / coefficient_window(products, flow.rtol)
    qualifying = products <= FIT_BOUND
    return float(ratio[qualifying].max()) if qualifying.any() else float("nan")


def worst_gap(result: FamilyDescent, flow: FlowCoefficient, horizon: float) -> tuple[float, float, float]:
    """``(gap, window, eta)`` of the qualifying pair with the largest ratio (what the row's detail names)."""
    products = np.asarray(result.etas)[:, None] * result.curvature
    gaps, windows = coefficient_gaps(result, flow, horizon), coefficient_window(products, flow.rtol)
    ratio = np.where(products <= FIT_BOUND, gaps / windows, -np.inf)
    e, s = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    return float(gaps[e, s]), float(windows[e, s]), float(result.etas[e])


@dataclass(frozen=True)
class CoefficientResult:
    """Per family: the flow's ``C(t)`` at the descent's record times (``flows``), the relative gaps of the descent
    runs to it, shape ``(E, S)`` (``gaps``), and the largest ratio of a qualifying gap to its window (``excess``:
    at most 1 when the drift is ``eta C(t)`` to first order)."""

    flows: dict[str, FlowCoefficient]
    gaps: dict[str, np.ndarray]
    excess: dict[str, float]


def coefficient_experiment(problems, descent, names: list[str], horizon: float, rtol: float) -> CoefficientResult:
    """Proposition ``prf:thm-conservation-laws-one-step`` over the horizon: for each family of ``names`` that ran,
    the flow's ``C(t) = int_0^t Q(grad L) ds`` (solver tolerance ``rtol``) against the drift of the descent runs
    ``descent`` (a :class:`~stagewise.conservation_laws.drift_experiment.DescentResult`) divided by ``eta``."""
    flows, gaps, excess = {}, {}, {}
    for name in names:
        result = descent.families[name]
        if not result.etas:
            continue
        flows[name] = descent_flow_coefficient(problems.families[name], problems.data[name], problems.params0[name],
                                               result.etas, horizon, rtol)
        gaps[name] = coefficient_gaps(result, flows[name], horizon)
        excess[name] = coefficient_excess(result, flows[name], horizon)
    return CoefficientResult(flows, gaps, excess)


# -- the control: every step size takes the same number of steps ----------------------------------------------

def same_step_count_run(family: Family, data: Data, params0: Params, etas: list[float], horizon: float) -> Trajectory:
    """Gradient descent at each of ``etas`` for the same number of steps, ``round(horizon / max(etas))`` (the
    step count of the largest step size), its records labelled as those of a run over the whole horizon: the
    smaller step sizes stop at ``horizon x eta / max(etas)``. A slip of a loop batched over step sizes."""
    steps = round(horizon / max(etas))
    runs = [gd_drift_study(family, data, params0, [eta], steps * eta) for eta in etas]
    return Trajectory(runs[0].times * horizon / runs[0].times[-1], torch.cat([r.invariants for r in runs], dim=1))


def same_step_count_excess(family: Family, data: Data, params0: Params, result: FamilyDescent,
                           flow: FlowCoefficient, horizon: float) -> float:
    """Control of the coefficient row: :func:`coefficient_excess` of :func:`same_step_count_run` (same step sizes,
    same curvature, same windows)."""
    if not result.etas:
        return float("nan")
    return coefficient_excess(result, flow, horizon, same_step_count_run(family, data, params0, result.etas, horizon))
