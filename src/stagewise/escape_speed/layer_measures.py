"""Per-layer measures of a network: the ReLU deviation ``nu`` and the layer diagnostics.

The quantities bounded by Theorem 3.1 ("Low-rank deep layers") and Proposition 3.3 ("Nearly rank-one nonnegative
inputs"), per layer of a single network: the non-top energy fraction ``rho_nt`` of the weights and of the
representations, the ratio ``s2/s1`` of the weights, and the distance ``nu`` of the ReLU from the identity on the
pre-activations. Shared by the depth continuation (Proposition "Merging a linear layer" drops the most linear ReLU,
:mod:`~stagewise.escape_speed.deepening`) and the low-rank statements (:mod:`~stagewise.escape_speed.theorem_31`,
:mod:`~stagewise.escape_speed.proposition_33`, :mod:`~stagewise.escape_speed.restart_ranks`).
"""
from __future__ import annotations

import math

import torch

from stagewise.escape_speed.network import Weights, forward
from stagewise.numerics.roundoff import is_positive, is_zero
from stagewise.numerics.spectra import nontop_fraction


def relu_deviation(Z: torch.Tensor, scale: float | None = None, dim: int = 1) -> float:
    """``nu = |sigma(Z) - Z|_F^2 / |Z|_F^2 = |relu(-Z)|_F^2 / |Z|_F^2``: how far the ReLU is from the
    identity on pre-activations ``Z`` (Theorem 3.1, Proposition 3.3); 0 for a zero (dead) layer.

    ``scale`` is the size ``Z`` would have if it were not dead, ``|W_l|_F |Z^sigma_{l-1}|_F`` for
    ``Z = W_l Z^sigma_{l-1}`` (``dim`` terms per entry): a ``Z`` within rounding error of zero at that scale counts
    as dead, so a layer that is exactly zero on one machine and ``1e-17`` on another gets the same ``nu``. Without
    ``scale`` only an exactly zero ``Z`` counts as dead (the ratio is undefined there)."""
    z2 = float((Z ** 2).sum())
    if is_zero(math.sqrt(z2), float(scale), dim) if scale is not None else not z2:
        return 0.0
    return float((torch.relu(-Z) ** 2).sum()) / z2


def layer_diagnostics(Ws: Weights, X: torch.Tensor) -> dict[str, list[float]]:
    """Per layer of a single network, the quantities bounded by Theorem 3.1 and Proposition 3.3.

    Returns lists under ``rho_W`` (``rho_nt(W_l)``, every layer), ``ratio_W`` (``s2/s1(W_l)``,
    every layer), ``rho_Z`` (``rho_nt(Z^sigma_l)``, hidden layers) and ``nu`` (``nu_l``, hidden
    layers). ``nu_l = |Z^sigma_l - Z_l|_F^2 / |Z_l|_F^2`` measures how far the ReLU is from the
    identity on layer ``l``.
    """
    Z, Zs = forward(Ws, X)
    out = {"rho_W": [], "ratio_W": [], "rho_Z": [], "nu": []}
    w_scale = max(float(W[0].norm()) for W in Ws)            # a dead layer is zero relative to the live ones
    z_scale = max(float(Zl[0].norm()) for Zl in Zs)
    for l, W in enumerate(Ws):
        sv = torch.linalg.svdvals(W[0])
        live = len(sv) > 1 and is_positive(float(sv[0]), w_scale, min(W.shape[1:]))
        out["rho_W"].append(nontop_fraction(W[0], w_scale))
        out["ratio_W"].append(float(sv[1] / sv[0]) if live else 0.0)
        if l < len(Ws) - 1:
            out["rho_Z"].append(nontop_fraction(Zs[l + 1][0], z_scale))
            out["nu"].append(relu_deviation(Z[l][0], w_scale * float(Zs[l][0].norm()), W.shape[2]))
    return out
