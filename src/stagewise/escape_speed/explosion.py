"""Norm explosion along an escape direction (paper Prop. 2.2 = App. A.2, corrected).

Along an escape direction ``rho`` with speed ``s`` (``|rho|^2 = L``), gradient flow on ``L0``
from ``u0 rho`` stays on the ray and the per-layer scale ``u = |theta| / sqrt(L)`` obeys
``u' = s u^{L-1}``. Closed-form solution, escape and blow-up times, and the gradient flow itself.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from stagewise.escape_speed.network import Weights, mse_loss, speed, sq_norm
from stagewise.numerics.flows import integrate_flow


def ode_scale(u0: float, s: float, L: int, t: np.ndarray) -> np.ndarray:
    """Proposition 2.2 (corrected): solution of ``u' = s u^{L-1}``: ``(u0^{2-L} - (L-2) s t)^{-1/(L-2)}`` (``L >= 3``),
    ``u0 e^{s t}`` (``L = 2``). ``nan`` at and after the blow-up time for ``L >= 3``."""
    t = np.asarray(t, dtype=float)
    if L == 2:
        return u0 * np.exp(s * t)
    base = u0 ** (2 - L) - (L - 2) * s * t
    out = np.full_like(t, np.nan)
    ok = base > 0
    out[ok] = base[ok] ** (-1.0 / (L - 2))
    return out


def escape_time(u0: float, u1: float, s: float, L: int) -> float:
    """Corrected escape time (Proposition 2.2 with '-' instead of the paper's '+', per-layer units):
    ``(u0^{2-L} - u1^{2-L}) / ((L-2) s)`` for ``L >= 3`` and ``log(u1/u0) / s`` for ``L = 2``.
    A zero speed gives ``inf`` (no escape)."""
    if s <= 0:
        return math.inf
    if L == 2:
        return math.log(u1 / u0) / s
    return (u0 ** (2 - L) - u1 ** (2 - L)) / ((L - 2) * s)


def blowup_time(u0: float, s: float, L: int) -> float:
    """Proposition 2.2: finite blow-up time ``T* = u0^{2-L} / ((L-2) s)`` of ``u' = s u^{L-1}`` (``L >= 3``;
    ``inf`` for ``L = 2`` or ``s <= 0``)."""
    return math.inf if L == 2 or s <= 0 else u0 ** (2 - L) / ((L - 2) * s)


def flow(Ws0: Weights, X: torch.Tensor, Y: torch.Tensor, times: np.ndarray, localized: bool,
         rtol: float = 1e-10, atol: float = 1e-14) -> list[Weights]:
    """Gradient flow on the MSE loss (or on ``L0`` with ``G = -Y``) with DOP853, batched.

    Returns the weights at each time. Used from aligned initializations ``u0 rho`` (Proposition 2.2:
    on ``L0`` the flow stays on the ray).
    """
    shapes = [W.shape for W in Ws0]
    sizes = [int(np.prod(s)) for s in shapes]

    def unpack(y: torch.Tensor) -> Weights:
        return [p.reshape(s) for p, s in zip(torch.split(y, sizes), shapes)]

    def field(y: torch.Tensor) -> torch.Tensor:
        Ws = [W.detach().requires_grad_(True) for W in unpack(y)]
        with torch.enable_grad():
            loss = (-speed(Ws, X, -Y) if localized else mse_loss(Ws, X, Y)).sum()
            g = torch.autograd.grad(loss, Ws)
        return -torch.cat([x.reshape(-1) for x in g])

    y0 = torch.cat([W.reshape(-1) for W in Ws0])
    ys = integrate_flow(field, y0, times, rtol=rtol, atol=atol)
    return [unpack(y) for y in ys]


def layer_scale(Ws: Weights) -> torch.Tensor:
    """Per-layer scale ``u = |theta| / sqrt(L)`` of each network (the ``u`` of Proposition 2.2)."""
    return torch.sqrt(sq_norm(Ws) / len(Ws))
