"""Layer growth in the deep ReLU network (Corollary ``prf:thm-conservation-laws-deep``, section "What the law
buys: layers that grow together"): every layer gains the same squared Frobenius norm along gradient descent."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stagewise.conservation_laws.trajectory import Trajectory


@dataclass(frozen=True)
class LayerGrowth:
    """Growth ``||W_l(t)||_F^2 - ||W_l(0)||_F^2`` of each layer, shape ``(T, L)``; its spread
    across layers and its largest value; the initial squared norms ``||W_l(0)||_F^2``, shape ``(L,)`` (equal
    growth makes equal norms only where these are small against the growth)."""

    times: np.ndarray
    growth: np.ndarray
    spread: float
    largest: float
    initial: np.ndarray


def layer_growth(trajectory: Trajectory, eta_index: int = -1, seed: int = 0) -> LayerGrowth:
    """Corollary ``prf:thm-conservation-laws-deep``: all layers of a deep ReLU network gain the
    same squared norm (by default at the smallest step size, for the first seed)."""
    norms = trajectory.layer_norms[:, eta_index, seed].cpu().numpy()
    growth = norms - norms[0]
    spread = float(np.abs(growth - growth.mean(1, keepdims=True)).max())
    return LayerGrowth(trajectory.times, growth, spread, float(np.abs(growth).max()), norms[0])
