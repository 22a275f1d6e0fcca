"""Spectral summaries of weight matrices: stable rank and the non-top fraction."""
from __future__ import annotations

import math

import numpy as np
import torch

from stagewise.numerics.roundoff import is_zero


def stable_rank_from_svals(svals: torch.Tensor) -> torch.Tensor:
    """``sum_i s_i^2 / s_1^2`` from singular values sorted descending (last axis; NaN for a zero matrix)."""
    top = svals[..., 0]
    ratio = (svals ** 2).sum(-1) / top ** 2
    return torch.where(top > 0, ratio, torch.full_like(ratio, float("nan")))


def stable_rank(matrix: torch.Tensor) -> torch.Tensor:
    """Stable rank ``||W||_F^2 / ||W||_2^2`` of a batch of matrices (float64 SVD)."""
    return stable_rank_from_svals(torch.linalg.svdvals(matrix.double()))


def stable_rank_np(sv) -> np.ndarray:
    """``||W||_F^2 / ||W||_2^2`` from singular values on the last axis (any order; NumPy)."""
    sv = np.asarray(sv, float)
    return (sv ** 2).sum(-1) / sv.max(-1) ** 2


def nontop_fraction(M: torch.Tensor, scale: float | None = None) -> float:
    """``rho_nt(M) = 1 - ||M||_op^2 / ||M||_F^2`` (0 for rank one and for a zero matrix).

    ``scale``: the size the matrix would have if it were not zero (the largest live layer, say). A matrix
    whose Frobenius norm is within rounding of it counts as zero, so that a dead layer gives 0 on every
    machine, not 0 on one BLAS kernel and the ratio of two rounding errors (anything in [0, 1)) on another.
    """
    f2 = float((M ** 2).sum())
    if scale is not None and is_zero(math.sqrt(f2), scale, max(M.shape)):
        return 0.0
    if f2 == 0.0:  # exact: division guard (a zero matrix has no top direction), not a decision about data
        return 0.0
    return max(0.0, 1.0 - float(torch.linalg.matrix_norm(M, ord=2)) ** 2 / f2)
