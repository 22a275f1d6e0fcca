"""Gradient flow ``d theta/dt = -grad L(theta)`` by an adaptive ODE solver, recording the
invariants of Theorem ``prf:thm-conservation-laws-balancedness``."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from stagewise.conservation_laws.models import Family, Params
from stagewise.conservation_laws.problem import Data, gradients
from stagewise.conservation_laws.trajectory import Trajectory
from stagewise.numerics.flows import integrate_flow
from stagewise.numerics.params import flatten_batched, unflatten_batched


def gradient_flow_field(family: Family, like: Params, data: Data,
                        gradient_scale: Sequence[float] | None = None) -> Callable[[torch.Tensor], torch.Tensor]:
    """The vector field ``-grad L`` of Theorem ``prf:thm-conservation-laws-balancedness``, on
    parameters flattened to ``(B, P)`` (:func:`stagewise.numerics.params.flatten_batched`).

    ``gradient_scale`` (one factor per parameter tensor; None: all 1) multiplies each tensor's gradient:
    the chapter's controls run the flow with a broken gradient (one layer's halved, or all of them: the
    flow of ``L / 2``), which no longer conserves the invariants (or runs at half speed)."""
    def field(flat: torch.Tensor) -> torch.Tensor:
        grads = gradients(family, unflatten_batched(flat, like), data)
        if gradient_scale is not None:
            grads = [c * g for c, g in zip(gradient_scale, grads, strict=True)]
        return -flatten_batched(grads)
    return field


def gradient_flow_study(family: Family, data: Data, params0: Params, horizon: float, rtol: float,
                        n_records: int = 100, gradient_scale: Sequence[float] | None = None) -> Trajectory:
    """Gradient flow by an adaptive DOP853 solver (all seeds in one system), ``atol = rtol / 100``.

    Returns the invariants at ``n_records + 1`` equally spaced times in ``[0, horizon]``,
    shape ``(T, 1, S, K)`` (Theorem ``prf:thm-conservation-laws-balancedness``: they stay constant
    up to solver error for the homogeneous families), the squared Frobenius norm of every
    parameter tensor, shape ``(T, 1, S, n_tensors)`` (not conserved: their *sum* is the wrong
    hypothesis the chapter's checks must reject), and the parameters at every record.
    ``gradient_scale``: see :func:`gradient_flow_field` (the controls' broken flows).
    """
    times = np.linspace(0.0, horizon, n_records + 1)
    flat = integrate_flow(gradient_flow_field(family, params0, data, gradient_scale), flatten_batched(params0), times,
                          rtol=rtol, atol=rtol * 1e-2)
    states = [unflatten_batched(s, params0) for s in flat]
    invariants = torch.stack([family.invariant(p) for p in states])
    norms = torch.stack([torch.stack([(W**2).flatten(1).sum(-1) for W in p], dim=-1) for p in states])
    return Trajectory(times, invariants[:, None], norms[:, None], states)
