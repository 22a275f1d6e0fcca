"""Shared pieces of the training loops: divergence detection and gradient-flow integration."""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch
from scipy.integrate import solve_ivp

from .parameters import ParameterError


class DivergenceError(ParameterError):
    """Training produced NaN or overflow; the message names the parameter to change."""


def assert_finite(parameter: str, value: object, step: int, *tensors: torch.Tensor, hint: str = "lower it") -> None:
    """Stop with a one-line message naming ``parameter`` when any tensor is not finite."""
    for tensor in tensors:
        if not bool(torch.isfinite(tensor).all()):
            raise DivergenceError(
                f"parameter {parameter}={value}: training diverged (NaN/overflow) at step {step}; {hint}")


def integrate_flow(
    vector_field: Callable[[torch.Tensor], torch.Tensor],
    y0: torch.Tensor,
    times: np.ndarray,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    method: str = "DOP853",
) -> torch.Tensor:
    """Integrate dy/dt = vector_field(y) with an adaptive Runge-Kutta solver (float64).

    ``y0`` may have any shape (batch dimensions included); the solution at ``times``
    is returned with shape ``(len(times), *y0.shape)``. The solver's local error
    control (``rtol``, ``atol``) bounds how far the numerical flow drifts from the
    exact one, which is what the conservation-law checks rely on.
    """
    shape, device = y0.shape, y0.device

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        state = torch.from_numpy(y).to(device=device, dtype=torch.float64).reshape(shape)
        return vector_field(state).reshape(-1).detach().cpu().numpy()

    solution = solve_ivp(rhs, (float(times[0]), float(times[-1])), y0.detach().cpu().double().reshape(-1).numpy(),
                         t_eval=times, rtol=rtol, atol=atol, method=method)
    if not solution.success:
        raise RuntimeError(f"gradient-flow integration failed: {solution.message}")
    return torch.from_numpy(solution.y.T.copy()).to(device).reshape(len(times), *shape)
