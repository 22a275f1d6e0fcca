"""Lists of parameter tensors as flat vectors (for ODE solvers), and back."""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

Params = list[torch.Tensor]


def flatten_batched(params: Params) -> torch.Tensor:
    """Concatenate parameters of shape ``(B, ...)`` into one ``(B, P)`` tensor, one row per problem."""
    return torch.cat([p.reshape(p.shape[0], -1) for p in params], dim=1)


def unflatten_batched(flat: torch.Tensor, like: Params) -> Params:
    """Inverse of :func:`flatten_batched`, with the shapes of ``like``."""
    out, start = [], 0
    for p in like:
        size = p[0].numel()
        out.append(flat[:, start:start + size].reshape(flat.shape[0], *p.shape[1:]))
        start += size
    return out


def pack(params: Params) -> torch.Tensor:
    """All parameters as one vector (each tensor flattened whole, in order)."""
    return torch.cat([p.reshape(-1) for p in params])


def unpacker(like: Params) -> Callable[[torch.Tensor], Params]:
    """The inverse of :func:`pack` for tensors shaped like ``like``."""
    shapes = [p.shape for p in like]
    sizes = [int(np.prod(s)) for s in shapes]

    def unpack(vector: torch.Tensor) -> Params:
        return [v.reshape(s) for v, s in zip(torch.split(vector, sizes), shapes)]
    return unpack
