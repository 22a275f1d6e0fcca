"""Plain reference computations that the benchmark (``benchmarks/bench_diagonal_incremental.py``) and the
tests compare the fast paths against: autograd for ``g`` (eq. 4) and one gradient-descent run at a time."""
from __future__ import annotations

from dataclasses import fields

import numpy as np
import torch

from stagewise.diagonal_incremental.descent import DescentRun, gradient_descent
from stagewise.diagonal_incremental.networks import DiagonalModel


def g_reference(model: DiagonalModel, beta: torch.Tensor) -> torch.Tensor:
    """``g(beta) = -grad_beta Ltilde`` (eq. 4) by plain autograd of the model's loss, row by row.

    The reference for the analytic ``DiagonalAttention.g`` (numba on CPU, batched torch on CUDA)."""
    return DiagonalModel.g(model, beta)


def gradient_descent_reference(model: DiagonalModel, u0: np.ndarray, v0: np.ndarray, alphas, etas, n_steps: int,
                               record_every: int = 10, device="cpu") -> DescentRun:
    """The GD of Proposition prop-diagonal-incremental-gd run one (alpha, eta) row at a time (a Python loop
    over runs), for comparison with the batched :func:`descent.gradient_descent`; same record, rows stacked."""
    alphas, etas = np.broadcast_arrays(np.asarray(alphas, float), np.asarray(etas, float))
    runs = [gradient_descent(model, u0, v0, [a], [e], n_steps, record_every=record_every, device=device)
            for a, e in zip(alphas, etas)]
    return DescentRun(**{f.name: np.concatenate([getattr(r, f.name) for r in runs], axis=0)
                         for f in fields(DescentRun)})
