"""Plain reference loops of the escape-speed chapter, for the tests and ``benchmarks/bench_escape_speed.py``.

Each computes what a batched function of the package computes, the slow obvious way; the
benchmark times the fast path against it and checks that both give the same numbers.
"""
from __future__ import annotations

import math

import torch

from stagewise.escape_speed.ascent import projected_ascent
from stagewise.escape_speed.gradient_descent import EscapeRun, dead_gradient
from stagewise.escape_speed.network import Weights, mse_loss, sq_norm
from stagewise.numerics.flows import assert_finite


def projected_ascent_reference(Ws: Weights, X: torch.Tensor, G: torch.Tensor, steps: int, eta: float,
                               eta_final: float) -> torch.Tensor:
    """Reference for :func:`stagewise.escape_speed.ascent.projected_ascent` (lower bounds on ``s*(L)``,
    Definition 2.1): the same ascent, one restart at a time; returns the best speed per restart."""
    out = []
    for r in range(Ws[0].shape[0]):
        out.append(projected_ascent([W[r:r + 1] for W in Ws], X, G, steps, eta, eta_final).speeds)
    return torch.cat(out)


def euler_escape_reference(Ws0: Weights, X: torch.Tensor, Y: torch.Tensor, rel_step: float, drop: float,
                           max_steps: int) -> EscapeRun:
    """Reference for :func:`stagewise.escape_speed.gradient_descent.euler_escape` (escape times of Proposition 2.2
    from small initialization): the same scheme (dead networks stopped too) with autograd
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
    L, dim = len(Ws), X.shape[1] * max(max(W.shape[1:]) for W in Ws)
    for k in range(max_steps):
        leaves = [W.detach().requires_grad_(True) for W in Ws]
        with torch.enable_grad():
            loss = mse_loss(leaves, X, Y)
            g = torch.autograd.grad(loss.sum(), leaves)
        gn = torch.sqrt(sum((x ** 2).sum(dim=(1, 2)) for x in g))
        done = done | dead_gradient(gn, loss.detach(), torch.sqrt(sq_norm(Ws)), X, L, dim)   # dead: as in euler_escape
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
