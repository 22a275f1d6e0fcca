"""Gradient descent from small initialization for the escape-speed chapter.

* Proposition 2.2 (corrected per-layer form): along an escape direction ``rho`` with speed
  ``s`` (``|rho|^2 = L``), gradient flow on ``L0`` from ``u0 rho`` stays on the ray and the
  per-layer scale ``u = |theta| / sqrt(L)`` obeys ``u' = s u^{L-1}``.
* Escape times from random small initialization, measured with an adaptive explicit Euler
  scheme that accumulates physical time (batched over initializations).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .escape import Weights, forward, normalize_layers, speed, sq_norm
from .training import assert_finite, integrate_flow


# ----------------------------------------------------------------------------------
# Proposition 2.2
# ----------------------------------------------------------------------------------
def ode_scale(u0: float, s: float, L: int, t: np.ndarray) -> np.ndarray:
    """Solution of ``u' = s u^{L-1}``: ``(u0^{2-L} - (L-2) s t)^{-1/(L-2)}`` (``L >= 3``),
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
    """Corrected escape time (Prop 2.2 with '-' instead of the paper's '+', per-layer units):
    ``(u0^{2-L} - u1^{2-L}) / ((L-2) s)`` for ``L >= 3`` and ``log(u1/u0) / s`` for ``L = 2``.
    A zero speed gives ``inf`` (no escape)."""
    if s <= 0:
        return math.inf
    if L == 2:
        return math.log(u1 / u0) / s
    return (u0 ** (2 - L) - u1 ** (2 - L)) / ((L - 2) * s)


def blowup_time(u0: float, s: float, L: int) -> float:
    """Finite blow-up time ``u0^{2-L} / ((L-2) s)`` of ``u' = s u^{L-1}`` (``L >= 3``)."""
    return math.inf if L == 2 or s <= 0 else u0 ** (2 - L) / ((L - 2) * s)


def mse_loss(Ws: Weights, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """``C(f) = |f(X) - Y|_F^2 / 2`` per network; its gradient at ``f = 0`` is ``G = -Y``."""
    return 0.5 * ((forward(Ws, X)[0][-1] - Y) ** 2).sum(dim=(1, 2))


def flow(Ws0: Weights, X: torch.Tensor, Y: torch.Tensor, times: np.ndarray, localized: bool,
         rtol: float = 1e-10, atol: float = 1e-14) -> list[Weights]:
    """Gradient flow on the MSE loss (or on ``L0`` with ``G = -Y``) with DOP853, batched.

    Returns the weights at each time. Used from aligned initializations (Prop 2.2).
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
    """Per-layer scale ``u = |theta| / sqrt(L)`` of each network."""
    return torch.sqrt(sq_norm(Ws) / len(Ws))


# ----------------------------------------------------------------------------------
# small-initialization gradient descent with physical time
# ----------------------------------------------------------------------------------
def small_init(d_in: int, widths: list[int], d_out: int, restarts: int, alpha: float,
               generator: torch.Generator, device: torch.device | str = "cpu") -> Weights:
    """Gaussian layers each rescaled to ``|W_l|_F = alpha`` (balanced: GF keeps it so)."""
    dims = [d_in, *widths, d_out]
    Ws = [torch.randn(restarts, dims[i + 1], dims[i], generator=generator, dtype=torch.float64)
          for i in range(len(dims) - 1)]
    return [alpha * W.to(device) for W in normalize_layers(Ws)]


@dataclass
class EscapeRun:
    times: torch.Tensor          # (R,) physical time at which the loss first fell by `drop`
    Ws: Weights                  # weights at that moment
    steps: int                   # Euler steps taken


def euler_escape(Ws0: Weights, X: torch.Tensor, Y: torch.Tensor, rel_step: float, drop: float,
                 max_steps: int) -> EscapeRun:
    """Adaptive explicit Euler on the MSE loss until the loss falls by the fraction ``drop``.

    Step ``eta_k = rel_step |theta| / |grad|`` per initialization (each iterate moves by a
    fixed fraction of its norm), physical time ``t += eta_k``. This follows gradient flow
    with relative error ``O(rel_step)``; the crossing time is interpolated linearly.
    """
    Ws = [W.clone() for W in Ws0]
    R = Ws[0].shape[0]
    c0 = 0.5 * float((Y ** 2).sum())
    target = (1 - drop) * c0
    t = torch.zeros(R, dtype=X.dtype, device=X.device)
    done = torch.zeros(R, dtype=torch.bool, device=X.device)
    t_hit = torch.full((R,), math.inf, dtype=X.dtype, device=X.device)
    W_hit = [W.clone() for W in Ws]
    prev_loss = mse_loss(Ws, X, Y)
    for k in range(max_steps):
        leaves = [W.detach().requires_grad_(True) for W in Ws]
        with torch.enable_grad():
            loss = mse_loss(leaves, X, Y)
            g = torch.autograd.grad(loss.sum(), leaves)
        gn = torch.sqrt(sum((x ** 2).sum(dim=(1, 2)) for x in g)).clamp_min(1e-300)
        eta = rel_step * torch.sqrt(sq_norm(Ws)) / gn
        eta = torch.where(done, torch.zeros_like(eta), eta)
        Ws = [(W - eta[:, None, None] * x).detach() for W, x in zip(Ws, g)]
        new_loss = mse_loss(Ws, X, Y)
        assert_finite("rel_step", rel_step, k, new_loss)
        hit = (~done) & (new_loss <= target)
        if bool(hit.any()):
            frac = ((prev_loss - target) / (prev_loss - new_loss).clamp_min(1e-300)).clamp(0, 1)
            t_hit = torch.where(hit, t + frac * eta, t_hit)
            W_hit = [torch.where(hit[:, None, None], W, B) for W, B in zip(Ws, W_hit)]
            done = done | hit
        t = t + eta
        prev_loss = new_loss.detach()
        if bool(done.all()):
            return EscapeRun(t_hit, W_hit, k + 1)
    return EscapeRun(t_hit, W_hit, max_steps)


def direction_speed(Ws: Weights, X: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """Speed ``-L0(rho)`` of the direction ``rho = sqrt(L) theta / |theta|``."""
    L = len(Ws)
    scale = torch.sqrt(L / sq_norm(Ws))
    return speed([W * scale[:, None, None] for W in Ws], X, G)


def function_cosine(Ws: Weights, ref: Weights, X: torch.Tensor) -> torch.Tensor:
    """Cosine between ``f_theta(X)`` and ``f_ref(X)`` (function-space alignment), per network."""
    f = forward(Ws, X)[0][-1].flatten(1)
    r = forward(ref, X)[0][-1].flatten(1)
    return (f @ r[0]) / (f.norm(dim=1) * r[0].norm()).clamp_min(1e-300)


def loglog_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])
