"""Gradient descent converging to the flow (section "The drift is linear in the step size", the ``tanh`` network):
at the two smallest qualifying step sizes (``convergence_steps``) the gap between the descent runs' drift curves
and the flow's, in units of its Richardson estimate (``descent_flow_gap``), and its control against the flow of
``L / 2`` (``descent_gap_to_flow``)."""
from __future__ import annotations

import numpy as np
import torch

from stagewise.conservation_laws.drift_experiment import FamilyDescent
from stagewise.conservation_laws.gradient_flow import gradient_flow_study
from stagewise.conservation_laws.problem_set import Problems
from stagewise.conservation_laws.trajectory import Trajectory


def convergence_steps(result: FamilyDescent) -> list[float]:
    """The two smallest step sizes with ``eta lambda_max <= FIT_BOUND`` for every seed (empty with fewer):
    those of :func:`descent_flow_gap`."""
    qualify = [eta for eta, q in zip(result.etas, result.qualifies.all(1)) if q]
    return sorted(qualify)[:2] if len(qualify) >= 2 else []


def _change_curves(invariants: torch.Tensor) -> np.ndarray:
    """``max_j |I_j(t) - I_j(0)|`` for records ``(T, S, K)``; shape ``(T, S)``."""
    return (invariants - invariants[:1]).abs().amax(-1).cpu().numpy()


def descent_flow_gap(result: FamilyDescent, flow: Trajectory) -> float:
    """How far gradient descent at the smallest step size ``eta_1`` is from the flow, in units of its own
    first-order error estimate: per seed, ``max_t |D_eta1(t) - D_flow(t)|`` over
    ``max_t |D_eta2(t) - D_eta1(t)| eta_1 / (eta_2 - eta_1)`` (Richardson: for an error ``c(t) eta`` both are
    ``max_t |c(t)| eta_1``), with ``D(t) = max_j |I_j(t) - I_j(0)|`` on the common record times and
    ``eta_1 < eta_2`` the two smallest step sizes of :func:`convergence_steps`; the largest over seeds.
    About 1 when the descent runs converge to this flow at first order; NaN without two step sizes."""
    steps = convergence_steps(result)
    if not steps:
        return float("nan")
    (e1, e2), index = steps, [result.etas.index(eta) for eta in steps]
    D1, D2 = (_change_curves(result.trajectory.invariants[:, i]) for i in index)
    D0 = _change_curves(flow.invariants[:, 0])
    gap = np.abs(D1 - D0).max(0)
    estimate = np.abs(D2 - D1).max(0) * e1 / (e2 - e1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.max(gap / estimate))


def descent_gap_to_flow(problems: Problems, name: str, result: FamilyDescent, horizon: float, rtol: float,
                        gradient_scale: list[float]) -> float:
    """:func:`descent_flow_gap` against a flow run with its gradient scaled by ``gradient_scale`` (the
    control: ``0.5`` on every tensor is the flow of ``L / 2``, the same path at half speed, what a descent
    run on a time axis off by a factor 2 would be compared with)."""
    flow = gradient_flow_study(problems.families[name], problems.data[name], problems.params0[name], horizon, rtol,
                               gradient_scale=gradient_scale)
    return descent_flow_gap(result, flow)
