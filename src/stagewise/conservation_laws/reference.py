"""Plain reference loops the benchmark (``benchmarks/bench_conservation_laws.py``) compares
the batched code against: one problem at a time, one step at a time."""
from __future__ import annotations

import torch

from stagewise.conservation_laws.models import Family, Params
from stagewise.conservation_laws.problem import Data, loss
from stagewise.numerics.params import flatten_batched


def gradient_descent_reference(family: Family, data: Data, params0: Params, etas: list[float],
                               horizon: float) -> torch.Tensor:
    """One problem at a time, one step at a time: what the package avoids.

    Runs ``round(horizon / eta)`` plain GD steps for every step size and every seed of
    ``params0`` and returns the final parameters flattened, one row per (step size, seed),
    step size major: the rows of
    :func:`stagewise.conservation_laws.gradient_descent.batch_over_step_sizes`.
    """
    finals = []
    for eta in etas:
        for s in range(params0[0].shape[0]):
            p = [x[s:s + 1].clone().requires_grad_(True) for x in params0]
            for _ in range(round(horizon / eta)):
                grads = torch.autograd.grad(loss(family, p, data).sum(), p)
                with torch.no_grad():
                    for x, g in zip(p, grads):
                        x -= eta * g
            finals.append(flatten_batched(p).detach())
    return torch.cat(finals)
