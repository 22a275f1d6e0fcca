"""Initializations of the two-layer linear network: I_gamma, its reduced coordinates, and Gaussian.

I_gamma is Definition ``thm-linear-riccati-init`` (paper, Section 2); the reduced coordinates
Z1 = W1 P^T, Z2 = P W2 are those of Lemma 3.1 (``thm-linear-riccati-reduction``).
"""
from __future__ import annotations

import numpy as np
import torch

from stagewise.linear_riccati.data import random_orthogonal
from stagewise.linear_riccati.parameters import check_gamma


def reduced_init(gammas, d: int, k: int, device="cpu"):
    """Reduced coordinates of I_gamma (Lemma 3.1, ``thm-linear-riccati-reduction``): Z1(0) = sqrt(2 gamma) I_d,
    Z2(0) = 0, batched over gammas. Returns Z1 (G, d, d) and Z2 (G, d, k)."""
    check_gamma(gammas)
    g = torch.as_tensor(np.asarray(gammas, dtype=float), dtype=torch.float64, device=device)
    Z1 = torch.sqrt(2 * g)[:, None, None] * torch.eye(d, dtype=torch.float64, device=device)
    return Z1, torch.zeros(len(g), d, k, dtype=torch.float64, device=device)


def orthogonal_init(gammas, d: int, width: int, generator: torch.Generator, k: int, device="cpu"):
    """I_gamma (Definition ``thm-linear-riccati-init``, paper Section 2): W1(0) = sqrt(2 gamma) P with P P^T = I_d,
    W2(0) = 0, batched over gammas; that is, the reduced coordinates of :func:`reduced_init` lifted by P
    (W1 = Z1 P, W2 = P^T Z2, Lemma 3.1).

    Returns W1 (G, d, width), W2 (G, width, k) and P (d x width), the same P for every gamma."""
    Z1, Z2 = reduced_init(gammas, d, k)
    P = random_orthogonal(d, width, generator)
    return (Z1 @ P).to(device), (P.T @ Z2).to(device), P.to(device)


def gaussian_init(var_w1, var_w2, d: int, width: int, k: int, generator: torch.Generator, device="cpu"):
    """Gaussian initialization (Fig. 1a right, Fig. 4), batched over pairs of variances.

    gamma_eff = var_w1 * width / 2, since W1 W1^T ~ var_w1 * width * I_d for width >> d (compared with
    Corollary 3.1, ``thm-linear-riccati-cor``). Returns W1 (G, d, width), W2 (G, width, k) and gamma_eff (NumPy)."""
    v1 = torch.as_tensor(np.asarray(var_w1, dtype=float), dtype=torch.float64)
    v2 = torch.as_tensor(np.asarray(var_w2, dtype=float), dtype=torch.float64)
    W1 = torch.randn(len(v1), d, width, generator=generator, dtype=torch.float64) * v1.sqrt()[:, None, None]
    W2 = torch.randn(len(v2), width, k, generator=generator, dtype=torch.float64) * v2.sqrt()[:, None, None]
    return W1.to(device), W2.to(device), (v1 * width / 2).cpu().numpy()

