"""Gradient descent from small initialization for the escape-speed chapter.

* Proposition 2.2 (corrected per-layer form): along an escape direction ``rho`` with speed
  ``s`` (``|rho|^2 = L``), gradient flow on ``L0`` from ``u0 rho`` stays on the ray and the
  per-layer scale ``u = |theta| / sqrt(L)`` obeys ``u' = s u^{L-1}``.
* Escape times from random small initialization, measured with an adaptive explicit Euler
  scheme that accumulates physical time (batched over initializations, hand-written backward pass).
* Which escape gradient descent finds on Example 1, for several widths in one padded batch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from stagewise.escape_speed.speed import Weights, forward, normalize_layers, pad_hidden, speed, sq_norm
from stagewise.numerics.flows import assert_finite, integrate_flow


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


def _mm(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Batched product ``A @ B`` that avoids batched GEMM when a dimension is 1 (a broadcast
    product and a sum are several times faster there for the tiny matrices of this chapter)."""
    if A.shape[-1] == 1:                                        # outer product
        return A * B
    if A.shape[-2] == 1:                                        # row vector times matrix
        return (A.transpose(-1, -2) * B).sum(dim=-2, keepdim=True)
    if B.shape[-1] == 1:                                        # matrix times column vector
        return (A * B.transpose(-1, -2)).sum(dim=-1, keepdim=True)
    return torch.matmul(A, B)


def mse_grad(Ws: Weights, X: torch.Tensor, Y: torch.Tensor) -> tuple[torch.Tensor, Weights]:
    """Loss ``C = |f_theta(X) - Y|_F^2 / 2`` per network and its gradient, by an explicit backward pass.

    Forward ``Z_l = W_l Z^sigma_{l-1}`` (Sec. 1, no ReLU on the output). Backward
    ``D_L = f - Y``, ``D_l = (W_{l+1}^T D_{l+1}) * 1[Z_l > 0]`` and ``dC/dW_l = D_l (Z^sigma_{l-1})^T``,
    with the autograd convention ``sigma'(0) = 0``. Batched over networks (``Ws[l]`` is
    ``(R, n_l, n_{l-1})``); about twice as fast as autograd on the tiny nets here
    (``benchmarks/bench_escape_gd.py``).
    """
    R = Ws[0].shape[0]
    hs = [X]
    h = torch.relu((Ws[0].reshape(-1, X.shape[0]) @ X).view(R, -1, X.shape[1]))   # one GEMM for all nets
    for W in Ws[1:-1]:
        hs.append(h)
        h = torch.relu(_mm(W, h))
    hs.append(h)
    r = _mm(Ws[-1], h) - Y
    loss = 0.5 * (r * r).sum(dim=(1, 2))
    grads: Weights = [r] * len(Ws)
    d = r
    for l in range(len(Ws) - 1, 0, -1):
        grads[l] = _mm(d, hs[l].transpose(-1, -2))
        d = torch.ops.aten.threshold_backward(_mm(Ws[l].transpose(1, 2), d), hs[l], 0.0)  # relu' = 1[relu(z) > 0]
    grads[0] = (d.reshape(-1, X.shape[1]) @ X.T).view(Ws[0].shape)
    return loss, grads


def euler_escape(Ws0: Weights, X: torch.Tensor, Y: torch.Tensor, rel_step: float, drop: float,
                 max_steps: int) -> EscapeRun:
    """Adaptive explicit Euler on the MSE loss until the loss falls by the fraction ``drop``.

    Step ``eta_k = rel_step |theta| / |grad|`` per initialization (each iterate moves by a
    fixed fraction of its norm), physical time ``t += eta_k``. This follows gradient flow
    with relative error ``O(rel_step)``; the crossing time is interpolated linearly.
    Gradients come from :func:`mse_grad`, and all layers live in one ``(R, P)`` buffer so that
    norms and updates are one operation each. A network with an exactly zero gradient (all
    ReLUs dead: gradient descent never moves it again) is stopped; its time stays ``inf``.
    """
    R = Ws0[0].shape[0]
    shapes = [tuple(W.shape[1:]) for W in Ws0]
    sizes = [a * b for a, b in shapes]

    def layers(v: torch.Tensor) -> Weights:
        return [p.view(R, *s) for p, s in zip(torch.split(v, sizes, dim=1), shapes)]

    theta = torch.cat([W.reshape(R, -1) for W in Ws0], dim=1)
    target = (1 - drop) * 0.5 * float((Y ** 2).sum())
    t = torch.zeros(R, dtype=X.dtype, device=X.device)
    done = torch.zeros(R, dtype=torch.bool, device=X.device)
    t_hit = torch.full((R,), math.inf, dtype=X.dtype, device=X.device)
    theta_hit = theta.clone()
    loss, g = mse_grad(layers(theta), X, Y)
    assert_finite("rel_step", rel_step, 0, loss)
    for k in range(max_steps):
        grad = torch.cat([x.reshape(R, -1) for x in g], dim=1)
        gn = torch.linalg.vector_norm(grad, dim=1)
        done = done | (gn == 0)
        eta = torch.where(done, 0.0, rel_step * torch.linalg.vector_norm(theta, dim=1) / gn.clamp_min(1e-300))
        theta = torch.addcmul(theta, eta[:, None], grad, value=-1.0)
        new_loss, g = mse_grad(layers(theta), X, Y)
        assert_finite("rel_step", rel_step, k, new_loss)
        hit = (~done) & (new_loss <= target)
        if bool(hit.any()):
            frac = ((loss - target) / (loss - new_loss).clamp_min(1e-300)).clamp(0, 1)
            t_hit = torch.where(hit, t + frac * eta, t_hit)
            theta_hit = torch.where(hit[:, None], theta, theta_hit)
            done = done | hit
        t = t + eta
        loss = new_loss
        if bool(done.all()):
            return EscapeRun(t_hit, [W.contiguous() for W in layers(theta_hit)], k + 1)
    return EscapeRun(t_hit, [W.contiguous() for W in layers(theta_hit)], max_steps)


def euler_escape_autograd(Ws0: Weights, X: torch.Tensor, Y: torch.Tensor, rel_step: float, drop: float,
                 max_steps: int) -> EscapeRun:
    """Reference for :func:`euler_escape`: the same scheme (dead networks stopped too) with autograd
    gradients and one tensor per layer, kept for the tests and the benchmark; same iterates up to rounding."""
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
        gn = torch.sqrt(sum((x ** 2).sum(dim=(1, 2)) for x in g))
        done = done | (gn == 0)                                   # dead network: stopped, as in euler_escape
        eta = rel_step * torch.sqrt(sq_norm(Ws)) / gn.clamp_min(1e-300)
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


@dataclass
class WidthSweep:
    widths: list[int]
    speeds: torch.Tensor         # (len(widths), inits) speed of sqrt(L) theta/|theta| when the loss fell by `drop`
    escaped: torch.Tensor        # (len(widths), inits) True where the loss fell by `drop` within max_steps
    steps: int                   # Euler steps taken by the batch


def gd_width_sweep(X: torch.Tensor, Y: torch.Tensor, widths: list[int], depth: int, inits: int, alpha: float,
                   rel_step: float, drop: float, generator: torch.Generator, max_steps: int = 100_000) -> WidthSweep:
    """Gradient descent from small initialization for several hidden widths, all in one batch.

    ``inits`` networks per width with every layer of norm ``alpha`` (:func:`small_init`) are
    padded with zero neurons to the largest width (:func:`stagewise.escape_speed.speed.pad_hidden`; zero
    neurons get zero gradient and stay zero) and run by :func:`euler_escape` on the squared loss
    with targets ``Y`` until the loss has fallen by ``drop``. Then we record the speed of the
    direction ``sqrt(L) theta / |theta|`` for ``G = -Y`` (Definition 2.1). Runs that never get
    there (dead ReLUs) have speed ``nan``.
    """
    wmax = max(widths)
    W0 = [torch.cat(ws) for ws in zip(*[pad_hidden(small_init(X.shape[0], [w] * (depth - 1), Y.shape[0], inits,
                                                               alpha, generator, X.device), wmax)
                                        for w in widths])]
    r = euler_escape(W0, X, Y, rel_step, drop, max_steps)
    escaped = torch.isfinite(r.times)
    s = torch.where(escaped, direction_speed(r.Ws, X, -Y), torch.nan)
    return WidthSweep(list(widths), s.reshape(len(widths), inits), escaped.reshape(len(widths), inits), r.steps)


def function_cosine(Ws: Weights, ref: Weights, X: torch.Tensor) -> torch.Tensor:
    """Cosine between ``f_theta(X)`` and ``f_ref(X)`` (function-space alignment), per network."""
    f = forward(Ws, X)[0][-1].flatten(1)
    r = forward(ref, X)[0][-1].flatten(1)
    return (f @ r[0]) / (f.norm(dim=1) * r[0].norm()).clamp_min(1e-300)


def loglog_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])
