"""Shared pieces of the training loops: divergence detection and gradient-flow integration."""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch
from scipy.integrate import solve_ivp

from stagewise.core.run.parameters import ParameterError


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


def gradient_descent_batched(
    params: list[torch.Tensor],
    loss_fn: Callable[[list[torch.Tensor]], torch.Tensor],
    etas: torch.Tensor,
    horizon: float,
    record_fn: Callable[[list[torch.Tensor]], torch.Tensor],
    n_records: int = 100,
    step_size_name: str = "etas",
    progress: Callable | None = None,
) -> tuple[np.ndarray, torch.Tensor]:
    """Plain gradient descent run for many independent problems at once.

    Every tensor in ``params`` has a leading batch dimension ``B``; ``loss_fn`` returns
    the ``B`` losses, whose sum has the per-problem gradients as its gradient (the
    problems share no parameters). Problem ``b`` takes ``round(horizon / etas[b])``
    steps of size ``etas[b]`` (gradient-flow time ``t = eta * step``) and is frozen
    afterwards, so different step sizes cover the same time horizon in one loop.

    Returns the record times ``t_k = k * horizon / n_records`` and ``record_fn`` of
    each problem at the step nearest to ``t_k`` (shape ``(n_records + 1, B, ...)``).
    """
    params = [p.detach().clone().requires_grad_(True) for p in params]
    steps = torch.round(horizon / etas).long()
    batch = etas.shape[0]
    record_steps = torch.round(torch.arange(n_records + 1, dtype=torch.float64)[:, None]
                               * steps.double().cpu()[None, :] / n_records).long()  # (K+1, B)
    schedule: dict[int, list[tuple[int, int]]] = {}
    for k in range(n_records + 1):
        for b in range(batch):
            schedule.setdefault(int(record_steps[k, b]), []).append((k, b))
    records: torch.Tensor | None = None
    eta_shaped = [etas.reshape(-1, *([1] * (p.dim() - 1))).to(p) for p in params]
    total = int(steps.max())
    iterator = range(total + 1) if progress is None else progress(range(total + 1))
    for step in iterator:
        if step in schedule:
            with torch.no_grad():
                current = record_fn(params)
            if records is None:
                records = current.new_zeros((n_records + 1, *current.shape))
            for k, b in schedule[step]:
                records[k, b] = current[b]
        if step == total:
            break
        loss = loss_fn(params).sum()
        grads = torch.autograd.grad(loss, params)
        active = (step < steps).to(params[0].dtype)
        with torch.no_grad():
            for p, g, eta in zip(params, grads, eta_shaped):
                p -= (eta * active.reshape(-1, *([1] * (p.dim() - 1)))) * g
        if step % 256 == 0:
            assert_finite(step_size_name, [float(e) for e in etas], step, loss.detach(),
                          hint="lower the step sizes")
    assert_finite(step_size_name, [float(e) for e in etas], total, *[p.detach() for p in params],
                  hint="lower the step sizes")
    times = np.linspace(0.0, horizon, n_records + 1)
    return times, records
