"""Norms of the learned and of the minimal-norm interpolator (Eq. 15, Theorem 3) of the relu-orthogonal chapter."""
from __future__ import annotations

from math import log

import numpy as np

from stagewise.numerics.roundoff import roundoff
from stagewise.relu_orthogonal.algorithm import LimitProcess


def min_norm_sq(y: np.ndarray) -> float:
    """Squared norm of a minimal-norm interpolator: 2(||y_+|| + ||y_-||) (eq. 15) [2.8]."""
    return float(2 * (np.linalg.norm(y[y > 0]) + np.linalg.norm(y[y < 0])))


def norm_lower_bound(y: np.ndarray, loss: float, c: float) -> float:
    """Smallest squared norm of any network (X = I_n) whose loss L_c is ``loss``: min_norm_sq(y) - 4 ||y - h||
    with ||y - h|| = sqrt(2 n loss / c) [derived]. AM-GM gives ||theta||^2 >= 2 sum_j |a_j| ||w_j|| >=
    2(||h_+|| + ||h_-||), and the positive part is 1-Lipschitz, so ||h_+|| >= ||y_+|| - ||y - h||. A rounding
    allowance of the norm's size is subtracted, so that the bound is a strict consequence of AM-GM."""
    y = np.asarray(y, float)
    return norm_lower_bound_from_min(min_norm_sq(y), len(y), loss, c)


def norm_lower_bound_from_min(opt: float, n: int, loss: float, c: float) -> float:
    """:func:`norm_lower_bound` from the minimal squared norm ``opt`` of the labels and their number ``n``."""
    n = int(n)
    return float(opt) - 4 * float(np.sqrt(2 * n * max(float(loss), 0.0) / c)) - roundoff(opt, n)


def _in_sandwich(ratio: float, upper: float, covered: bool, n: int) -> bool:
    """1 <= ratio (interpolating runs only) and ratio <= sqrt(max(K+, K-)), with the rounding error of norms of
    n labels as slack (``numerics.roundoff``)."""
    slack = roundoff(1.0, n)
    return (1 - slack <= ratio if covered else True) and ratio <= upper * (1 + slack)


def sandwich(lp: LimitProcess) -> tuple[float, float]:
    """Ratio ||theta_inf||^2/||theta*||^2 and the upper bound sqrt(max(K+, K-)) [2.8, derived]."""
    kp, km = lp.jumps_per_sign()
    return lp.norm_sq() / min_norm_sq(lp.y), float(np.sqrt(max(kp, km, 1)))


def width_rule(n: int, failure: float = 0.05) -> int:
    """Width with n (3/4)^m <= failure (Proposition 2(i)'s union bound over rows), the note's m(n) for
    the Theorem 3 experiment (Fig. 5)."""
    return int(np.ceil((log(n) - log(failure)) / log(4 / 3)))


def off_mask_share(W: np.ndarray, a: np.ndarray, y: np.ndarray, M: np.ndarray) -> float:
    """Proposition 1 with Assumption 2 on one trained network (X = I_n): a point is fitted only by neurons of its
    label's sign that were active on it at initialisation (the mask M, (n, m)). Returns the largest share, over
    points, of |y_i| carried by the other neurons: max_i sum_{j: M_ij = 0} |a_j relu(W_ji)| / |y_i|."""
    contrib = np.abs(a[:, None] * np.maximum(W, 0.0))          # (m, n)
    return float(np.max((contrib * ~M.T.astype(bool)).sum(axis=0) / np.abs(y)))


def off_mask_ceiling(U0: np.ndarray, init_norm: float, a: np.ndarray, y: np.ndarray, M: np.ndarray) -> float:
    """What Proposition 1 allows ``off_mask_share`` to be on one trained network, from its start (unit directions
    ``U0`` (m, n), every neuron of norm ``init_norm``) and its final output weights ``a``. A component off the mask
    either starts non-positive and never moves (sigma'(0) = 0) or is active with the wrong sign and only shrinks (its
    gradient has the sign of -s_j y_i while the residual keeps the label's sign), so it ends in [0, w_ji(0)]. The
    largest share, over points, of |y_i| that these components can carry: max_i sum_{j: M_ij = 0} |a_j|
    relu(w_ji(0)) / |y_i|, of order lambda / sqrt(m) times the output weights."""
    reach = np.abs(a[:, None]) * np.maximum(U0, 0.0) * init_norm           # (m, n)
    return float(np.max((reach * ~M.T.astype(bool)).sum(axis=0) / np.abs(y)))
