"""Assumption 4.5 (noise robustness of stage (B)) tested in practice.

Assumption 4.3 is checked inside Algorithm 1 (race margins, ``algorithm.py``) and Assumption 4.4 by the
restricted Hessian (``networks.restricted_hessian_min``).
"""
from __future__ import annotations

import numpy as np

from stagewise.diagonal_incremental.algorithm import Stage, train_active
from stagewise.diagonal_incremental.networks import DiagonalModel


def stage_b_spread(model: DiagonalModel, stages: list[Stage], eps2_values=(1e-6, 1e-8, 1e-10),
                   jitter: float = 0.01, seed: int = 0) -> float:
    """Assumption 4.5 in practice: rerun every stage (B) from seeds ``eps^2`` in ``eps2_values`` and from
    ``beta^k`` jittered by +-``jitter`` (relative) on its support; return the largest distance
    ``max |beta - beta^{k+1}|`` between any rerun and Algorithm 1's ``beta^{k+1}``."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for prev, nxt in zip(stages[:-1], stages[1:]):
        starts = []
        for e2 in eps2_values:
            s0 = prev.beta.copy()
            s0[nxt.coordinate] = nxt.sign * e2
            starts.append(s0)
        s0 = starts[0].copy()
        s0[prev.support] *= 1.0 + jitter * rng.uniform(-1, 1, prev.support.size)
        starts.append(s0)
        for s0 in starts:
            beta, _, _ = train_active(model, s0, np.append(prev.support, nxt.coordinate), stage=nxt.k)
            worst = max(worst, float(np.abs(beta - nxt.beta).max()))
    return worst
