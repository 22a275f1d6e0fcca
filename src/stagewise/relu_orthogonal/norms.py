"""Norms of the learned and of the minimal-norm interpolator (Eq. 15, Theorem 3) of the relu-orthogonal chapter."""
from __future__ import annotations

from math import log

import numpy as np

from stagewise.relu_orthogonal.algorithm import LimitProcess


def min_norm_sq(y: np.ndarray) -> float:
    """Squared norm of a minimal-norm interpolator: 2(||y_+|| + ||y_-||) (eq. 15) [2.8]."""
    return float(2 * (np.linalg.norm(y[y > 0]) + np.linalg.norm(y[y < 0])))


def sandwich(lp: LimitProcess) -> tuple[float, float]:
    """Ratio ||theta_inf||^2/||theta*||^2 and the upper bound sqrt(max(K+, K-)) [2.8, derived]."""
    kp, km = lp.jumps_per_sign()
    return lp.norm_sq() / min_norm_sq(lp.y), float(np.sqrt(max(kp, km, 1)))


def width_rule(n: int, failure: float = 0.05) -> int:
    """Width with n (3/4)^m <= failure (Proposition 2(i)'s union bound over rows), the note's m(n) for
    the Theorem 3 experiment (Fig. 5)."""
    return int(np.ceil((log(n) - log(failure)) / log(4 / 3)))
