"""Plain gradient descent on ``(u, v)`` (Proposition prop-diagonal-incremental-gd: the exact discrete identity).

:func:`gradient_descent` is batched over (alpha, eta) rows and tracks ``c_{n+1} = c_n (1 - eta^2 g_n^2)``;
:func:`perturbation_runs` trains given weight rows (the paper's perturbation tests of Assumption 4.4).
"""
from __future__ import annotations

import numpy as np
import torch

from stagewise.diagonal_incremental.networks import DiagonalModel
from stagewise.numerics.flows import assert_finite


def gradient_descent(model: DiagonalModel, u0: np.ndarray, v0: np.ndarray, alphas, etas, n_steps: int,
                     record_every: int = 10, device="cpu", param_name: str = "eta"):
    """Plain GD ``u <- u + eta v g``, ``v <- v + eta u g`` (``g = -grad Ltilde(u v)``), rows = (alpha, eta) pairs.

    Tracks the exact discrete identity of Proposition prop-diagonal-incremental-gd (note Sec. 0.3):
    ``c_{n+1} = c_n (1 - eta^2 g_n^2)`` with ``c = u^2 - v^2``, by accumulating the product alongside the
    weights.  Returns a dict: recorded ``tau`` (``eta * step / log(1/alpha)``) and ``loss``, each
    ``(B, records)``, ``beta`` ``(B, records, p)``; and at the last step, each ``(B, p)``: ``c`` (measured),
    ``c_pred`` (``c_0 prod (1 - eta^2 g^2)``), ``c0``, ``scale`` (``max_n (u_n^2 + v_n^2)``), ``u`` and ``v``.
    Divergence raises ``DivergenceError`` naming ``param_name``.
    """
    alphas, etas = np.broadcast_arrays(np.asarray(alphas, float), np.asarray(etas, float))
    u = torch.from_numpy(alphas[:, None] * np.asarray(u0)[None]).to(device)
    v = torch.from_numpy(alphas[:, None] * np.asarray(v0)[None]).to(device)
    eta = torch.from_numpy(etas[:, None].copy()).to(device)
    c0 = u * u - v * v
    factor = torch.ones_like(u)
    scale = u * u + v * v
    L = -np.log(alphas)
    taus, losses, betas = [], [], []
    for step in range(n_steps + 1):
        if step % record_every == 0 or step == n_steps:
            beta = u * v
            taus.append(etas * step / L)
            losses.append(model.loss(beta).cpu().numpy())
            betas.append(beta.cpu().numpy())
        if step == n_steps:
            break
        g = model.g(u * v)
        factor = factor * (1 - eta * eta * g * g)
        u, v = u + eta * v * g, v + eta * u * g
        scale = torch.maximum(scale, u * u + v * v)
        if step % 100 == 0:
            assert_finite(param_name, float(etas.max()), step, u, v)
    assert_finite(param_name, float(etas.max()), n_steps, u, v)
    return {"tau": np.array(taus).T, "loss": np.array(losses).T, "beta": np.array(betas).transpose(1, 0, 2),
            "c": (u * u - v * v).cpu().numpy(), "c_pred": (c0 * factor).cpu().numpy(), "c0": c0.cpu().numpy(),
            "scale": scale.cpu().numpy(), "u": u.cpu().numpy(), "v": v.cpu().numpy()}


def perturbation_runs(model: DiagonalModel, U0: np.ndarray, V0: np.ndarray, eta: float, n_steps: int,
                      record_every: int = 10, device="cpu"):
    """GD from given weight rows ``(U0, V0)`` of shape ``(B, p)`` (paper App. A perturbation tests of Assumption 4.4);
    returns ``t = eta * step`` and the product-space trajectories ``beta`` ``(B, records, p)``."""
    u = torch.from_numpy(np.ascontiguousarray(U0, dtype=float)).to(device)
    v = torch.from_numpy(np.ascontiguousarray(V0, dtype=float)).to(device)
    ts, betas = [], []
    for step in range(n_steps + 1):
        if step % record_every == 0 or step == n_steps:
            ts.append(eta * step)
            betas.append((u * v).cpu().numpy())
        if step == n_steps:
            break
        g = model.g(u * v)
        u, v = u + eta * v * g, v + eta * u * g
    assert_finite("eta", eta, n_steps, u, v)
    return {"t": np.array(ts), "beta": np.array(betas).transpose(1, 0, 2)}
