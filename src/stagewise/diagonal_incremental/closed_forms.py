"""Algorithm 1 in closed form (the research note's cases used by the unit tests)."""
from __future__ import annotations

import numpy as np


def closed_form_orthogonal(beta_star: np.ndarray):
    """Algorithm 1 in closed form for ``Sigma = I`` (note Sec. 2.8): ``T_k = 1/|beta*|_(k)``, losses
    ``1/2 sum_{j>k} |beta*|_(j)^2``; returns ``(T, order, losses)`` over the nonzero entries."""
    mags = np.abs(beta_star)
    order = [int(i) for i in np.argsort(-mags) if mags[i] > 0]
    T = [1.0 / mags[i] for i in order]
    sq = np.sort(mags)[::-1] ** 2
    losses = [0.5 * float(sq[k:].sum()) for k in range(len(order) + 1)]
    return T, order, losses
