"""Probability that every data point is covered by the mask (Proposition 2) of the relu-orthogonal chapter."""
from __future__ import annotations

from math import comb

import numpy as np


def coverage_exact(m: int, n_pos: int, n_neg: int) -> float:
    """P(every row of M non-zero), exact: sum over m_+ ~ Bin(m, 1/2) [2.5, derived]."""
    k = np.arange(m + 1)
    w = np.array([comb(m, int(i)) for i in k], float) * 0.5 ** m
    return float(np.sum(w * (1 - 0.5 ** k) ** n_pos * (1 - 0.5 ** (m - k)) ** n_neg))


def coverage_union_bound(m: int, n: int) -> float:
    """Union bound on rows: P(all covered) >= 1 - n (3/4)^m (Proposition 2(i), row part)."""
    return 1.0 - n * 0.75 ** m


def assumption4_union_bound(m: int, n_pos: int, n_neg: int) -> float:
    """Full union bound of Proposition 2(i): rows, zero columns and equal columns [2.5]."""
    nmin = min(n_pos, n_neg) if min(n_pos, n_neg) > 0 else max(n_pos, n_neg)
    return 1.0 - (n_pos + n_neg) * 0.75 ** m - (m + comb(m, 2)) * 2.0 ** (-nmin)


def coverage_monte_carlo(m: int, y: np.ndarray, trials: int, rng: np.random.Generator) -> float:
    """Proposition 2: Monte Carlo frequency of full coverage, from signs s_j and activation bits 1{<w_j, x_i> > 0}.

    For orthonormal x_i and w_j uniform on the sphere the activation bits are i.i.d. fair coins
    (signs of independent Gaussian coordinates), so each (trial, point) draws one m-bit word.
    """
    if m > 62:
        raise ValueError("coverage_monte_carlo packs a neuron per bit: m <= 62")
    n = len(y)
    sign_bits = rng.integers(0, 2 ** m, size=trials, dtype=np.int64)          # bit j: s_j = +1
    act = rng.integers(0, 2 ** m, size=(trials, n), dtype=np.int64)           # bit j: active on x_i
    full = np.int64(2 ** m - 1)
    good = np.where(y[None, :] > 0, sign_bits[:, None], full ^ sign_bits[:, None])
    return float(np.mean(np.all((act & good) != 0, axis=1)))


def half_coverage_width(n_pos: int, n_neg: int, m_max: int = 200) -> float:
    """Proposition 2: width at which the exact coverage probability crosses 1/2 (linear interpolation
    in m), about 2 log2 n."""
    p_prev = coverage_exact(1, n_pos, n_neg)
    for m in range(2, m_max):
        p = coverage_exact(m, n_pos, n_neg)
        if p >= 0.5:
            return (m - 1) + (0.5 - p_prev) / (p - p_prev)
        p_prev = p
    return float("nan")
