"""The orthogonal-start experiment of Corollary ``prf:thm-conservation-laws-linear`` (Varre et al., Lemmas 3.1 and
3.2): the two-layer linear network from ``I_gamma`` (``orthogonal_start``, at width ``gamma_width``) keeps, in the
reduced coordinates ``Z_1 = W_1 P^T``, ``Z_2 = P W_2`` (``reduced_coordinates``), ``Z_1^T Z_1 - Z_2 Z_2^T =
2 gamma I_d`` (``reduced_invariant``, ``isotropy_error``) along gradient flow (``orthogonal_init_experiment``);
the control ``orthogonal_descent_error`` reads the same error along gradient descent."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from stagewise.conservation_laws.gradient_descent import gd_drift_study
from stagewise.conservation_laws.gradient_flow import gradient_flow_study
from stagewise.conservation_laws.models import Family, Params
from stagewise.conservation_laws.problem_set import Problems
from stagewise.numerics.flows import DivergenceError


def gamma_width(width: int, input_dim: int) -> int:
    """Width of the ``I_gamma`` network: Lemma 3.2 of Varre et al. needs ``P P^T = I_d``, a width ``l >= d``, and
    with ``l >= 2 d`` the weights have ``d`` directions outside the row space of ``P`` to leave it by (Lemma 3.1
    says they do not). The chapter's own width when it is larger."""
    return max(width, 2 * input_dim)


@dataclass(frozen=True)
class OrthogonalInit:
    """Two-layer linear network of width ``width`` from ``I_gamma`` (Corollary ``prf:thm-conservation-laws-linear``;
    Varre et al., Lemmas 3.1 and 3.2): ``W_1(0) = sqrt(2 gamma) P`` with ``P P^T = I_d``, ``W_2(0) = 0``, in the
    reduced coordinates ``Z_1 = W_1 P^T``, ``Z_2 = P W_2``. ``error``: ``max_t |Z_1^T Z_1 - Z_2 Z_2^T - 2 gamma I_d|``
    (largest entry, over seeds); ``scale``: the largest magnitude ``|Z_1|^T |Z_1| + |Z_2| |Z_2|^T`` of an entry
    along the flow (what the solver's relative error multiplies); ``outside``: ``max_t`` of the weights' part
    outside the row space of ``P``, ``|W_1 - Z_1 P|`` and ``|W_2 - P^T Z_2|`` (Lemma 3.1: 0); ``orthonormality``:
    ``|P P^T - I_d|``; ``start`` and ``P`` (``(S, d, l)``) for the control (:func:`orthogonal_descent_error`)."""

    gamma: float
    width: int
    error: float
    scale: float
    outside: float
    orthonormality: float
    start: Params
    P: torch.Tensor


def orthogonal_start(seeds: int, d: int, width: int, k: int, gamma: float, generator: torch.Generator,
                     dtype=torch.float64) -> tuple[Params, torch.Tensor]:
    """``I_gamma``: ``W_1(0) = sqrt(2 gamma) P`` with one random ``P`` (``d x width``, orthonormal rows, ``P P^T =
    I_d``; orthonormal columns when ``width < d``, where no ``P`` has ``P P^T = I_d``) per seed, drawn from
    ``generator``, and ``W_2(0) = 0`` (``width x k``); returns the weights and ``P``, shape ``(S, d, width)``."""
    G = torch.randn(seeds, max(d, width), min(d, width), generator=generator, dtype=dtype)
    Q = torch.linalg.qr(G).Q                                            # orthonormal columns
    P = Q.transpose(-1, -2) if width >= d else Q                        # (S, d, width)
    return [np.sqrt(2 * gamma) * P, torch.zeros(seeds, width, k, dtype=dtype)], P


def reduced_coordinates(params: Params, P: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Varre et al.'s reduced coordinates ``Z_1 = W_1 P^T`` (``d x d``) and ``Z_2 = P W_2`` (``d x k``)."""
    W1, W2 = params
    return W1 @ P.transpose(-1, -2), P @ W2


def reduced_invariant(params: Params, P: torch.Tensor) -> torch.Tensor:
    """``Z_1^T Z_1 - Z_2 Z_2^T`` (Lemma 3.2 of Varre et al.), entries flattened: shape ``(S, d * d)``."""
    Z1, Z2 = reduced_coordinates(params, P)
    return (Z1.transpose(-1, -2) @ Z1 - Z2 @ Z2.transpose(-1, -2)).flatten(1)


def isotropy_error(invariants: torch.Tensor, gamma: float) -> float:
    """``max |Z_1^T Z_1 - Z_2 Z_2^T - 2 gamma I_d|`` over records ``(..., d * d)`` of :func:`reduced_invariant`."""
    d = int(round(np.sqrt(invariants.shape[-1])))
    eye = torch.eye(d, dtype=invariants.dtype, device=invariants.device).flatten()
    return float((invariants - 2 * gamma * eye).abs().max())


def orthogonal_init_experiment(problems: Problems, gamma: float, width: int, horizon: float, rtol: float,
                               generator: torch.Generator) -> OrthogonalInit:
    """Corollary ``prf:thm-conservation-laws-linear`` (Varre et al., Lemmas 3.1 and 3.2) from ``I_gamma`` at width
    ``width`` (:func:`gamma_width`), on the linear network's data: gradient flow keeps ``Z_1^T Z_1 - Z_2 Z_2^T =
    2 gamma I_d`` and the weights in the row space of ``P``. One random ``P`` per seed, drawn from ``generator``."""
    family, data = problems.families["linear"], problems.data["linear"]
    seeds, d, k = problems.params0["linear"][0].shape[0], data.X.shape[1], data.Y.shape[1]
    start, P = orthogonal_start(seeds, d, width, k, gamma, generator)
    start, P = [p.to(data.X.device) for p in start], P.to(data.X.device)
    flow = gradient_flow_study(family, data, start, horizon, rtol)
    invariants = torch.stack([reduced_invariant(p, P) for p in flow.states])
    outside, scale = 0.0, 0.0
    for p in flow.states:
        Z1, Z2 = reduced_coordinates(p, P)
        outside = max(outside, float((p[0] - Z1 @ P).abs().max()), float((p[1] - P.transpose(-1, -2) @ Z2).abs().max()))
        scale = max(scale, float((Z1.abs().transpose(-1, -2) @ Z1.abs() + Z2.abs() @ Z2.abs().transpose(-1, -2)).max()))
    eye = torch.eye(d, dtype=P.dtype, device=P.device)
    orthonormality = float((P @ P.transpose(-1, -2) - eye).abs().max())
    return OrthogonalInit(gamma, width, isotropy_error(invariants, gamma), scale, outside, orthonormality, start, P)


def _reduced_family(family: Family, P: torch.Tensor) -> Family:
    """``family`` (the linear one) recording :func:`reduced_invariant` with ``P`` in place of its invariant."""
    def invariant(params: Params) -> torch.Tensor:
        return reduced_invariant(params, P.repeat(params[0].shape[0] // P.shape[0], 1, 1))
    return dataclasses.replace(family, invariant=invariant, magnitude=None)


def orthogonal_descent_error(problems: Problems, orthogonal: OrthogonalInit, etas: list[float],
                             horizon: float) -> float:
    """Control of the ``I_gamma`` row: Lemma 3.2's error read along *gradient descent* from the same ``I_gamma``
    over the same horizon, at the largest of ``etas`` that does not diverge (NaN when all do). The invariant is
    exact at ``t = 0`` and leaves ``2 gamma I_d`` only through the steps, by ``eta^2 Q(g)`` each
    (Proposition ``prf:thm-conservation-laws-one-step``): the lemma is a property of the flow."""
    family = _reduced_family(problems.families["linear"], orthogonal.P)
    for eta in sorted(set(etas), reverse=True):
        try:
            run = gd_drift_study(family, problems.data["linear"], orthogonal.start, [eta], horizon)
        except DivergenceError:
            continue
        return isotropy_error(run.invariants, orthogonal.gamma)
    return float("nan")
