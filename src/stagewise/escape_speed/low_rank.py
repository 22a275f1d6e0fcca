"""Low-rank structure of escape directions: Theorem 3.1, Propositions 3.3 and 3.4.

Per-layer diagnostics (non-top energy fraction ``rho_nt`` of weights and representations,
ReLU deviation ``nu``), Theorem 3.1's constant and bound, both sides of the inequality behind
Proposition 3.4, and Proposition 3.3's bound and speed bracket.
"""
from __future__ import annotations

import math

import torch

from stagewise.escape_speed.network import Weights, forward


def nontop_fraction(M: torch.Tensor) -> float:
    """``rho_nt(M) = 1 - |M|_op^2 / |M|_F^2`` (0 for rank one; 0 for a zero matrix): the non-top energy
    fraction of Theorem 3.1 and Propositions 3.3, 3.4."""
    f2 = float((M ** 2).sum())
    if f2 == 0.0:
        return 0.0
    return max(0.0, 1.0 - float(torch.linalg.matrix_norm(M, ord=2)) ** 2 / f2)


def relu_deviation(Z: torch.Tensor) -> float:
    """``nu = |sigma(Z) - Z|_F^2 / |Z|_F^2 = |relu(-Z)|_F^2 / |Z|_F^2``: how far the ReLU is from the
    identity on pre-activations ``Z`` (Theorem 3.1, Proposition 3.3); 0 for a zero matrix."""
    z2 = float((Z ** 2).sum())
    return float((torch.relu(-Z) ** 2).sum()) / z2 if z2 > 0 else 0.0


def layer_diagnostics(Ws: Weights, X: torch.Tensor) -> dict[str, list[float]]:
    """Per layer of a single network, the quantities bounded by Theorem 3.1 and Proposition 3.3.

    Returns lists under ``rho_W`` (``rho_nt(W_l)``, every layer), ``ratio_W`` (``s2/s1(W_l)``,
    every layer), ``rho_Z`` (``rho_nt(Z^sigma_l)``, hidden layers) and ``nu`` (``nu_l``, hidden
    layers). ``nu_l = |Z^sigma_l - Z_l|_F^2 / |Z_l|_F^2`` measures how far the ReLU is from the
    identity on layer ``l``.
    """
    Z, Zs = forward(Ws, X)
    out = {"rho_W": [], "ratio_W": [], "rho_Z": [], "nu": []}
    for l, W in enumerate(Ws):
        sv = torch.linalg.svdvals(W[0])
        out["rho_W"].append(nontop_fraction(W[0]))
        out["ratio_W"].append(float(sv[1] / sv[0]) if len(sv) > 1 and float(sv[0]) > 0 else 0.0)
        if l < len(Ws) - 1:
            out["rho_Z"].append(nontop_fraction(Zs[l + 1][0]))
            out["nu"].append(relu_deviation(Z[l][0]))
    return out


def thm31_constant(X: torch.Tensor, G: torch.Tensor, s: float) -> tuple[float, float]:
    """Theorem 3.1's ``c = kappa sqrt(2 log kappa)``, ``kappa = |X|_F |G|_F / s*``, and ``l_min = c^2``.

    The bound ``8 c l^{-1/2} / (1 - c l^{-1/2})`` says something only for ``l > c^2``.
    A zero speed gives ``c = inf`` (no escape, nothing to bound).
    """
    if s <= 0:
        return math.inf, math.inf
    kappa = float(X.norm() * G.norm()) / s
    c = kappa * math.sqrt(2 * math.log(kappa))
    return c, c * c


def thm31_bound(c: float, ell: int) -> float:
    """The Theorem 3.1 bound ``8 c l^{-1/2} / (1 - c l^{-1/2})`` at layer ``ell`` (``inf`` where it is vacuous, ``l <= c^2``)."""
    q = c / math.sqrt(ell)
    return 8 * q / (1 - q) if q < 1 else math.inf


def prop34_sides(Ws: Weights, X: torch.Tensor, G: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both sides of the deterministic inequality behind Proposition 3.4 ("Weak control"), per network (log form):

    ``sum_{l=0}^{L-1} log(|Z^s_l|_F^2 / |Z^s_l|_op^2) <= 2 log(|X|_F |G|_F prod_l |W_l|_F / |Tr G^T Z_L|)``.
    Networks with a dead layer or zero output give ``inf`` on the right (nothing to test).
    """
    Z, Zs = forward(Ws, X)
    lhs = torch.zeros(Ws[0].shape[0], dtype=X.dtype, device=X.device)
    for H in Zs:
        f2 = (H ** 2).sum(dim=(1, 2))
        op2 = torch.linalg.matrix_norm(H, ord=2) ** 2
        lhs = lhs + torch.where(op2 > 0, torch.log(f2 / op2.clamp_min(1e-300)), torch.zeros_like(f2))
    prod = torch.ones_like(lhs)
    for W in Ws:
        prod = prod * W.flatten(1).norm(dim=1)
    tr = (Z[-1] * G).sum(dim=(1, 2)).abs()
    rhs = 2 * torch.log(float(X.norm() * G.norm()) * prod / tr.clamp_min(1e-300))
    rhs = torch.where(tr > 0, rhs, torch.full_like(rhs, math.inf))
    return lhs, rhs


def prop33_bound(g_norm: float, eps: float, s: float) -> float:
    """Proposition 3.3 (App. A.5): ``8 |G|_F eps / (s* - |G|_F eps)`` bounds ``rho_nt(W_l)``,
    ``rho_nt(Z^sigma_l)`` and ``nu_l`` at the optimum; ``inf`` (no statement) when ``s* <= |G|_F eps``.
    The bound decreases in ``s*``: evaluated at a lower estimate of ``s*`` it is larger (weaker)."""
    den = s - g_norm * eps
    return 8 * g_norm * eps / den if den > 0 else math.inf


def prop33_speed_bracket(X: torch.Tensor, G: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> tuple[float, float]:
    """The bracket ``|Gv||u| -/+ |G|_F |E|_F`` on the optimal speed ``s*`` for ``X = u v^T + E``
    (proof of Proposition 3.3, App. A.5): a rank-one linear chain along ``u`` reaches the lower end, and
    ``|f_theta(u)| <= |u|`` on the ball ``|theta|^2 <= L`` gives the upper end."""
    base = float((G @ v).norm() * u.norm())
    slack = float(G.norm() * (X - torch.outer(u, v)).norm())
    return base - slack, base + slack


def safe_ratio(a: float, b: float) -> float:
    """``a / b``, or ``nan`` when ``b == 0`` (a zero optimal speed, as for the ``cos 3`` data, is reported, not divided by)."""
    return a / b if b != 0 else float("nan")
