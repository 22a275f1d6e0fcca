"""The gradient-flow experiment of Theorem ``prf:thm-conservation-laws-balancedness``: the drift of the invariants
along gradient flow against the solver's tolerance (``flow_experiment``, the rows' tolerance ``flow_tolerance``
and ``flow_excess``), and the rows' control ``broken_flow_drift`` (the same flow with the output layer's gradient
halved)."""
from __future__ import annotations

from dataclasses import dataclass

from stagewise.conservation_laws.gradient_flow import gradient_flow_study
from stagewise.conservation_laws.problem_set import Problems
from stagewise.conservation_laws.trajectory import Trajectory, max_drift


@dataclass(frozen=True)
class FlowResult:
    """Gradient flow per family: trajectories, largest drift of any invariant over seeds and time,
    the size ``scale`` of the invariants (the largest magnitude ``A + B`` of an entry ``A - B`` along
    the flow: what the solver's relative error multiplies), and the drift of the *sum*
    ``sum_l ||W_l||_F^2`` (the wrong hypothesis that the total norm, not the difference, is conserved)."""

    trajectories: dict[str, Trajectory]
    drift: dict[str, float]
    scale: dict[str, float]
    sum_drift: dict[str, float]


#: The flow rows allow ``FLOW_SLACK x ode_rtol x`` the invariants' magnitude (at least 1). DOP853 keeps each
#: step's error within ``rtol`` of the weights' size, so an invariant's global error is of order ``rtol`` times its
#: magnitude; the factor must stay small enough for the rows to catch a solver looser than stated (the bug
#: catalogue's ``looser-solver``; section "Gradient flow" of the verification page).
FLOW_SLACK = 10.0


def flow_tolerance(flow: "FlowResult", name: str, rtol: float) -> float:
    """The tolerance of ``name``'s flow row: ``FLOW_SLACK x rtol x max(1, magnitude along the flow)``."""
    return FLOW_SLACK * rtol * max(1.0, flow.scale[name])


def flow_excess(flow: "FlowResult", name: str, rtol: float) -> float:
    """``name``'s flow drift over its tolerance (:func:`flow_tolerance`): below 1 for the homogeneous
    families (the law holds to solver error), above 1 for ``tanh`` (the law fails without homogeneity)."""
    return flow.drift[name] / flow_tolerance(flow, name, rtol)


def flow_experiment(problems: Problems, names: list[str], horizon: float, rtol: float) -> FlowResult:
    """Theorem ``prf:thm-conservation-laws-balancedness``: the drift of the invariants under
    gradient flow (adaptive DOP853, relative tolerance ``rtol``) over ``[0, horizon]``."""
    trajectories, drift, scale, sum_drift = {}, {}, {}, {}
    for name in names:
        family, data, params0 = problems.families[name], problems.data[name], problems.params0[name]
        trajectories[name] = gradient_flow_study(family, data, params0, horizon, rtol)
        drift[name] = float(max_drift(trajectories[name].invariants[:, 0]).max())
        scale[name] = max(float(family.magnitude(p).abs().max()) for p in trajectories[name].states)
        total = trajectories[name].layer_norms[:, 0].sum(-1, keepdim=True)
        sum_drift[name] = float(max_drift(total).max())
    return FlowResult(trajectories, drift, scale, sum_drift)


# -- the control: the same measurement on a broken run -------------------------------------------------------

def broken_flow_drift(problems: Problems, name: str, horizon: float, rtol: float, factor: float = 0.5) -> float:
    """Control of a flow row: the drift of ``name``'s invariants along a flow whose output layer's gradient
    is multiplied by ``factor`` (a gradient with a missing ``1/2`` in one layer). The Euler identity no longer
    balances the two layers, and the invariants move at a rate ``(1 - factor) <theta_out, grad_out>`` from
    the first instant."""
    family, params0 = problems.families[name], problems.params0[name]
    scale = [1.0] * (len(params0) - 1) + [factor]
    flow = gradient_flow_study(family, problems.data[name], params0, horizon, rtol, gradient_scale=scale)
    return float(max_drift(flow.invariants[:, 0]).max())
