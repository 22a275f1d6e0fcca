"""The regression problem every family is trained on: orthogonal data, Gaussian
initialization, the square loss and its gradient (section "The experiment")."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from stagewise.conservation_laws.models import Family, Params


@dataclass(frozen=True)
class Data:
    """Regression data ``X`` (n, d) and targets ``Y`` (n, k)."""

    X: torch.Tensor
    Y: torch.Tensor


def make_orthogonal_data(n: int, d: int, k: int, generator: torch.Generator, dtype=torch.float64) -> Data:
    """``n <= d`` orthogonal inputs of norm ``sqrt(d)`` and targets from a random tanh teacher
    plus Gaussian noise of standard deviation 0.1.

    Orthogonal inputs keep the two-layer ReLU flow free of sliding modes (the admonition
    "Why no ODE for the deep ReLU network"): the pre-activation ``z_ij = <w_j, x_i>`` obeys
    ``dz_ij/dt = -(1/n) a_j r_i 1[z_ij > 0] ||x_i||^2`` (the ``1/n`` of the loss ``(1/2n)||f(X) - Y||^2``),
    so once it is negative nothing pushes it back towards the kink.
    """
    if n > d:
        raise ValueError(f"orthogonal inputs need n <= d, got n={n}, d={d}")
    Q, _ = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=dtype))
    X = np.sqrt(d) * Q[:n]
    teacher = torch.randn(d, k, generator=generator, dtype=dtype) / np.sqrt(d)
    return Data(X, torch.tanh(X @ teacher) + 0.1 * torch.randn(n, k, generator=generator, dtype=dtype))


def init_params(family: Family, batch: int, d: int, k: int, width: int, depth: int, scale: float,
                generator: torch.Generator, dtype=torch.float64) -> Params:
    """Independent Gaussian entries: standard deviation ``scale / sqrt(shape[-1])`` for a matrix,
    ``scale`` for a vector; shape ``(batch, *shape)`` for each of ``family.shapes``.

    ``shape[-1]`` is the fan-in of the ReLU networks' ``(out, in)`` weight matrices; the linear
    network stores ``(in, out)`` matrices, so there it is the fan-out.
    """
    params = []
    for shape in family.shapes(d, k, width, depth):
        fan_in = shape[-1] if len(shape) == 2 else 1
        params.append(scale / np.sqrt(fan_in) * torch.randn(batch, *shape, generator=generator, dtype=dtype))
    return params


def loss(family: Family, params: Params, data: Data) -> torch.Tensor:
    """Per-problem loss ``L = (1/2n) ||f(X) - Y||_F^2``, shape (B,)."""
    residual = family.forward(params, data.X) - data.Y
    return 0.5 * (residual**2).sum(dim=(-2, -1)) / data.X.shape[0]


def gradients(family: Family, params: Params, data: Data) -> Params:
    """``grad L(theta)`` for every problem of the batch (the problems share no parameters)."""
    params = [p.detach().requires_grad_(True) for p in params]
    return list(torch.autograd.grad(loss(family, params, data).sum(), params))
