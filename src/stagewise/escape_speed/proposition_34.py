"""Proposition 3.4 ("Weak control"): both sides of its deterministic inequality, and the largest gap.

The inequality ``sum_l log(|Z^s_l|_F^2 / |Z^s_l|_op^2) <= 2 log(|X|_F |G|_F prod_l |W_l|_F / |Tr G^T Z_L|)`` (log
form), per network, on random networks and on the computed optima of the depth continuation.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from stagewise.escape_speed.network import Weights, forward, init_sphere
from stagewise.numerics.roundoff import roundoff

if TYPE_CHECKING:
    from stagewise.escape_speed.deepening import DepthResult


def prop34_sides(Ws: Weights, X: torch.Tensor, G: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both sides of the deterministic inequality behind Proposition 3.4 ("Weak control"), per network (log form):

    ``sum_{l=0}^{L-1} log(|Z^s_l|_F^2 / |Z^s_l|_op^2) <= 2 log(|X|_F |G|_F prod_l |W_l|_F / |Tr G^T Z_L|)``.
    Networks with a dead layer or zero output give ``inf`` on the right (nothing to test).
    """
    Z, Zs = forward(Ws, X)
    N = X.shape[1]
    lhs = torch.zeros(Ws[0].shape[0], dtype=X.dtype, device=X.device)
    prod = torch.ones_like(lhs)                       # prod_{k <= l} |W_k|_F: the size a live Z^sigma_l can reach
    for l, H in enumerate(Zs):
        f2 = (H ** 2).sum(dim=(1, 2))
        op2 = torch.linalg.matrix_norm(H, ord=2) ** 2
        # a dead representation (zero up to rounding at its reachable size |X|_F prod |W_k|_F) adds nothing
        live = op2.sqrt() > roundoff(1.0, max(h.shape[1] for h in Zs[:l + 1])) * float(X.norm()) * prod
        lhs = lhs + torch.where(live, torch.log(f2 / op2.clamp_min(1e-300)), torch.zeros_like(f2))
        prod = prod * Ws[l].flatten(1).norm(dim=1)
    tr = (Z[-1] * G).sum(dim=(1, 2)).abs()
    top = float(X.norm() * G.norm()) * prod           # bound (v): |Tr G^T Z_L| <= |X|_F |G|_F prod |W_l|_F
    rhs = 2 * torch.log(top / tr.clamp_min(1e-300))
    # a trace within rounding error of zero at that size: no statement (inf), on every machine alike
    rhs = torch.where(tr > roundoff(1.0, N * G.shape[0] * len(Ws)) * top, rhs, torch.full_like(rhs, math.inf))
    return lhs, rhs


def prop34_gap(X: torch.Tensor, G: torch.Tensor, results: dict[str, DepthResult],
               data: dict[str, tuple[torch.Tensor, torch.Tensor]], generator: torch.Generator,
               depths: tuple[int, ...] = (4, 8), width: int = 8, nets: int = 300) -> float:
    """Proposition 3.4's inequality: ``max(LHS - RHS)`` over ``nets`` random networks per depth on ``(X, G)`` and over
    every computed optimum of ``results`` on its own data (at most rounding)."""
    gap = []
    for L in depths:
        lhs, rhs = prop34_sides(init_sphere(X.shape[0], [width] * (L - 1), G.shape[0], nets, generator, X.device), X, G)
        gap.append(float((lhs - rhs).max()))
    for name, r in results.items():
        for W in r.optima:
            lhs, rhs = prop34_sides(W, *data[name])
            gap.append(float((lhs - rhs).max()))
    return max(gap)
