"""Gradient descent batched over step sizes and seeds, each run over the same gradient-flow
time, recording the invariants whose drift Proposition ``prf:thm-conservation-laws-one-step``
predicts."""
from __future__ import annotations

import torch

from stagewise.conservation_laws.models import Family, Params
from stagewise.conservation_laws.problem import Data, loss
from stagewise.conservation_laws.trajectory import Trajectory
from stagewise.numerics.flows import gradient_descent_batched


def batch_over_step_sizes(params0: Params, etas: list[float]) -> tuple[Params, torch.Tensor]:
    """The seeds' parameters repeated once per step size, and the matching step sizes.

    Row ``e * S + s`` of the batch is seed ``s`` of ``params0`` (``S`` seeds) with step size
    ``etas[e]``; returns ``(params, eta)`` with ``eta`` of shape ``(E * S,)``.
    """
    seeds = params0[0].shape[0]
    batched = [p.repeat(len(etas), *([1] * (p.dim() - 1))) for p in params0]
    eta = torch.tensor(etas, dtype=params0[0].dtype, device=params0[0].device).repeat_interleave(seeds)
    return batched, eta


def gd_drift_study(family: Family, data: Data, params0: Params, etas: list[float], horizon: float,
                   n_records: int = 100, progress=None) -> Trajectory:
    """Gradient descent for every (step size, seed) pair in one batched loop.

    Each step size covers the same gradient-flow time ``horizon`` (``round(horizon / eta)``
    steps); records the invariants, shape ``(T, E, S, K)``, and the squared Frobenius norm of
    every parameter tensor, shape ``(T, E, S, n_tensors)`` (the layers of Corollary
    ``prf:thm-conservation-laws-deep`` for the deep ReLU network), and the final parameters of every
    (step size, seed) row (``Trajectory.final``, rows step size major). Divergence raises
    :class:`stagewise.numerics.flows.DivergenceError` naming the parameter ``etas``.
    """
    seeds = params0[0].shape[0]
    batched, eta = batch_over_step_sizes(params0, etas)
    n_inv = family.invariant(params0).shape[-1]

    live: list[Params] = []

    def record(p: Params) -> torch.Tensor:
        live[:] = [p]   # the loop updates these tensors in place: after it, they hold every row's final state
        norms = torch.stack([(W**2).flatten(1).sum(-1) for W in p], dim=-1)
        return torch.cat([family.invariant(p), norms], dim=-1)

    times, records = gradient_descent_batched(batched, lambda p: loss(family, p, data), eta, horizon,
                                              record, n_records, progress=progress)
    records = records.reshape(len(times), len(etas), seeds, -1)
    final = [w.detach().clone() for w in live[0]]
    return Trajectory(times, records[..., :n_inv], records[..., n_inv:], final=final)
