"""How fast the exact flow settles on each plateau of Theorem 4.1 (its ``alpha < alpha_0(t)``, measured).

:func:`relaxation_rates`: the slowest rate of stage (B) linearized at ``theta^k``; :func:`relaxation_numbers`:
the number of e-foldings a plateau has relaxed by, which decides whether it is resolved at a given alpha.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from stagewise.diagonal_incremental.algorithm import Stage
from stagewise.diagonal_incremental.networks import DiagonalModel


def relaxation_rates(model: DiagonalModel, stages: list[Stage]) -> np.ndarray:
    """How fast the flow settles on each plateau: near ``theta^k`` stage (B) linearizes to
    ``d(delta beta_S)/dt = -2 D H_S delta beta_S`` with ``D = diag|beta^k_S|``, so its slowest rate is
    ``r_k = lambda_min(2 D^(1/2) H_S D^(1/2))`` (unrescaled time); ``r_0 = inf`` (theta^0 = 0 is exact)."""
    rates = [math.inf]
    for s in stages[1:]:
        H = model.hessian(torch.from_numpy(s.beta).to(model.device)).detach().cpu().numpy()
        S = s.support
        D = np.sqrt(np.abs(s.beta[S]))
        rates.append(float(np.linalg.eigvalsh(2.0 * D[:, None] * H[np.ix_(S, S)] * D[None, :]).min()))
    return np.array(rates)


def relaxation_numbers(rates: np.ndarray, starts, ends, alpha: float) -> np.ndarray:
    """``(end_k - start_k) log(1/alpha) r_k``: the number of e-foldings plateau ``k`` has relaxed by at
    ``end_k``, starting at its measured transition ``start_k`` (rescaled times). The distance to ``theta^k``
    is about ``exp(-number)``, so a plateau is resolved to a tolerance ``tol`` once the number is at least
    ``log(1/tol)``: Theorem 4.1's ``alpha < alpha_0(t)``, measured."""
    span = np.maximum(np.asarray(ends, float) - np.asarray(starts, float), 0.0)
    with np.errstate(invalid="ignore"):
        out = span * -math.log(alpha) * np.asarray(rates, float)
    return np.where(np.isinf(rates), np.inf, out)
