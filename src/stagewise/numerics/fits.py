"""Fits the chapters read theorems off: power laws, 1/log extrapolation, level crossings."""
from __future__ import annotations

import numpy as np


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x`` (the exponent of a power law ``y ~ x^p``)."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def inverse_log_fit(log_inv_scale, values, order: int = 1) -> np.ndarray:
    """Least-squares fit ``values = T + sum_{j=1..order} C_j / log(1/scale)^j``; returns ``[T, C_1, ...]``.

    The small-initialization limits of the book converge at rate ``1/log(1/scale)``
    (Algorithm 1's stage times, Theorem 2 of the ReLU-orthogonal chapter): ``T`` is the
    extrapolated limit. ``log_inv_scale`` is ``log(1/scale)`` (positive).
    """
    x = 1.0 / np.asarray(log_inv_scale, float)
    A = np.vander(x, order + 1, increasing=True)
    return np.linalg.lstsq(A, np.asarray(values, float), rcond=None)[0]


def first_crossing(t, values, level: float) -> float:
    """First ``t`` where sampled ``values`` reach ``level`` (linear interpolation); NaN if never."""
    values = np.asarray(values, float)
    idx = np.flatnonzero(values >= level)
    if idx.size == 0:
        return float("nan")
    i = idx[0]
    if i == 0:
        return float(t[0])
    return float(t[i - 1] + (level - values[i - 1]) * (t[i] - t[i - 1]) / (values[i] - values[i - 1]))
