"""Probability that every data point is covered by the mask (Proposition 2) of the relu-orthogonal chapter.

The exact formula, the paper's union bounds, a bit-packed Monte Carlo, the half-coverage width,
and ``coverage_study``: Monte Carlo against the formula and the bound over a grid of (n, m).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np

from stagewise.relu_orthogonal.data import make_labels


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


@dataclass
class CoverageStudy:
    """Proposition 2 on a grid of (n, m), N(0,1) labels, and the half-coverage width for balanced labels."""

    ns: list                  # numbers of points
    ms: np.ndarray            # widths
    mc: dict                  # n -> Monte Carlo frequency per width
    exact: dict               # n -> exact probability per width
    union: dict               # n -> union bound 1 - n (3/4)^m per width
    z_exact: float            # max |MC - exact| in standard errors
    z_bound: float            # max (union bound - MC)_+ in standard errors
    log2n: np.ndarray         # log2 n of the half-coverage study
    m_half: np.ndarray        # half-coverage width per log2 n
    threshold_slope: float    # slope of m_half in log2 n (about 2)


def coverage_study(rng: np.random.Generator, trials: int, ns=(16, 64, 256, 1024), ms=np.arange(4, 42, 2),
                   log2n=np.arange(4, 21)) -> CoverageStudy:
    """Proposition 2 (prop-relu-orthogonal-coverage): Monte Carlo (``trials`` draws per (n, m)) against the
    exact formula and the union bound; the standard error uses max(p(1-p), 1/trials)."""
    mc, ex, ub, z = {}, {}, {}, []
    for n_ in ns:
        y_ = make_labels(n_, "gaussian", rng)
        npos, nneg = int((y_ > 0).sum()), int((y_ < 0).sum())
        mc[n_] = np.array([coverage_monte_carlo(int(m_), y_, trials, rng) for m_ in ms])
        ex[n_] = np.array([coverage_exact(int(m_), npos, nneg) for m_ in ms])
        ub[n_] = np.array([coverage_union_bound(int(m_), n_) for m_ in ms])
        sig = np.sqrt(np.maximum(ex[n_] * (1 - ex[n_]), 1 / trials) / trials)
        z.append(np.abs(mc[n_] - ex[n_]) / sig)
        z.append(np.maximum(ub[n_] - mc[n_], 0) / sig)
    m_half = np.array([half_coverage_width(2 ** (k - 1), 2 ** (k - 1)) for k in log2n])
    return CoverageStudy(ns=list(ns), ms=ms, mc=mc, exact=ex, union=ub, z_exact=float(np.max(z[0::2])),
                         z_bound=float(np.max(z[1::2])), log2n=log2n, m_half=m_half,
                         threshold_slope=float(np.polyfit(log2n, m_half, 1)[0]))
