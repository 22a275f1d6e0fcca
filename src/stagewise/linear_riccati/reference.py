"""Plain reference loops the benchmarks compare the batched code against (slow on purpose)."""
from __future__ import annotations

import math

import numpy as np


def gd_reference(XtX: np.ndarray, XtY: np.ndarray, gamma: float, eta: float, steps: int) -> np.ndarray:
    """Plain per-step, per-gamma NumPy reference of reduced GD (Lemma 3.1, ``thm-linear-riccati-reduction``) for the
    benchmark: what :func:`stagewise.linear_riccati.gradient_descent.gd` batches. Returns the final beta (d, k)."""
    d, k = XtY.shape
    Z1, Z2 = math.sqrt(2 * gamma) * np.eye(d), np.zeros((d, k))
    for _ in range(steps):
        E = XtY - XtX @ (Z1 @ Z2)
        Z1, Z2 = Z1 + eta * E @ Z2.T, Z2 + eta * Z1.T @ E
    return Z1 @ Z2

