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
    hits = 0
    for size in _blocks(trials, n):                                           # bounded memory for large trials
        sign_bits = rng.integers(0, 2 ** m, size=size, dtype=np.int64)        # bit j: s_j = +1
        act = rng.integers(0, 2 ** m, size=(size, n), dtype=np.int64)         # bit j: active on x_i
        full = np.int64(2 ** m - 1)
        good = np.where(y[None, :] > 0, sign_bits[:, None], full ^ sign_bits[:, None])
        hits += int(np.sum(np.all((act & good) != 0, axis=1)))
    return hits / trials


#: Largest number of array entries a Monte Carlo draws at once (64 MB of float64); the default runs use one block.
BLOCK_ENTRIES = 2 ** 23


def _blocks(trials: int, per_trial: int) -> list[int]:
    """Block sizes summing to ``trials`` with at most BLOCK_ENTRIES entries each (one block when it fits)."""
    size = max(1, BLOCK_ENTRIES // max(per_trial, 1))
    return [min(size, trials - start) for start in range(0, trials, size)]


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
    trials: int               # Monte Carlo draws per (n, m)


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
                         threshold_slope=float(np.polyfit(log2n, m_half, 1)[0]), trials=trials)


def coverage_signs_ignored(m: int, n: int) -> float:
    """A wrong hypothesis (the control of the coverage checks): a point is covered by *any* initially active
    neuron, whatever its output sign, P = (1 - 2^{-m})^n."""
    return float((1 - 0.5 ** m) ** n)


def threshold_slope_signs_ignored(study: "CoverageStudy") -> float:
    """Control of the threshold-slope claim: the slope in log2 n of the width at which the wrong formula (signs
    ignored, (1 - 2^-m)^n) crosses 1/2, over the same n (about 1 instead of 2)."""
    m_half = [np.log2(1 / (1 - 0.5 ** (1 / 2.0 ** k))) for k in study.log2n]      # (1 - 2^-m)^n = 1/2 solved for m
    return float(np.polyfit(study.log2n, m_half, 1)[0])


def mask_monte_carlo(y: np.ndarray, m: int, trials: int, rng: np.random.Generator) -> tuple[float, float]:
    """Proposition 2 from actual initial weights, not from the independent-bit model: ``trials`` draws of
    Assumption 3's init (w_j Gaussian, i.e. uniform directions; random output signs) against orthonormal
    inputs X = Q (a random rotation of R^n per call), the mask of ``data.activation_mask``. Returns the
    frequencies of (every row non-zero, Assumption 4(i): rows non-zero, columns non-zero and distinct)."""
    n = len(y)
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    n_rows, n_full = 0, 0
    for size in _blocks(trials, m * n):                           # bounded memory for large trials
        W = rng.standard_normal((size, m, n)) @ Q                 # <w_j, x_i> with x_i = Q[:, i]
        s = rng.choice([-1.0, 1.0], size=(size, m))
        M = ((s[:, None, :] * y[None, :, None]) > 0) & (np.transpose(W, (0, 2, 1)) > 0)      # (trials, n, m)
        rows = M.any(axis=2).all(axis=1)
        cols = M.any(axis=1).all(axis=1)
        codes = np.packbits(M, axis=1)                            # one byte string per column
        distinct = np.array([len({codes[t, :, j].tobytes() for j in range(m)}) == m for t in range(size)])
        n_rows += int(rows.sum()); n_full += int((rows & cols & distinct).sum())
    return n_rows / trials, n_full / trials


@dataclass
class WeightsStudy:
    """Proposition 2 with actual spherical initial weights on a grid of (n, m) (``mask_monte_carlo``)."""

    grid: list                # (n, m) pairs
    rows_mc: np.ndarray       # frequency of full coverage (rows)
    full_mc: np.ndarray       # frequency of Assumption 4(i) (rows, columns non-zero and distinct)
    exact: np.ndarray         # exact coverage probability (rows)
    full_bound: np.ndarray    # the paper's union bound for Assumption 4(i) (assumption4_union_bound)
    row_bound: np.ndarray     # the row-only bound 1 - n (3/4)^m
    z_exact: float            # max |rows_mc - exact| in standard errors
    z_full: float             # max (full_bound - full_mc)_+ in standard errors
    trials: int               # draws per (n, m)


def weights_study(rng: np.random.Generator, trials: int, grid=((8, 6), (8, 10), (12, 12), (12, 20), (32, 10),
                                                                (32, 16), (64, 12), (64, 20))) -> WeightsStudy:
    """Proposition 2(i), row and column parts, from actual weights; standard errors use max(p(1-p), 1/trials)."""
    rows_mc, full_mc, exact, full_b, row_b = [], [], [], [], []
    for n_, m_ in grid:
        y_ = make_labels(n_, "gaussian", rng)
        npos, nneg = int((y_ > 0).sum()), int((y_ < 0).sum())
        r, f = mask_monte_carlo(y_, m_, trials, rng)
        rows_mc.append(r); full_mc.append(f)
        exact.append(coverage_exact(m_, npos, nneg)); full_b.append(assumption4_union_bound(m_, npos, nneg))
        row_b.append(coverage_union_bound(m_, n_))
    rows_mc, full_mc, exact, full_b, row_b = map(np.array, (rows_mc, full_mc, exact, full_b, row_b))
    se = lambda p: np.sqrt(np.maximum(p * (1 - p), 1 / trials) / trials)
    return WeightsStudy(grid=[tuple(g) for g in grid], rows_mc=rows_mc, full_mc=full_mc, exact=exact,
                        full_bound=full_b, row_bound=row_b,
                        z_exact=float(np.max(np.abs(rows_mc - exact) / se(exact))),
                        z_full=float(np.max(np.maximum(full_b - full_mc, 0) / se(full_mc))), trials=trials)


def _se(p: np.ndarray, trials: int) -> np.ndarray:
    """Standard error of a Monte Carlo frequency of probability p, floored at one success in ``trials``."""
    return np.sqrt(np.maximum(p * (1 - p), 1 / trials) / trials)


def z_signs_ignored(study: CoverageStudy) -> float:
    """Control of "MC vs exact": the same Monte Carlo frequencies held against a wrong formula, a point covered
    by any initially active neuron whatever its output sign, (1 - 2^-m)^n; max distance in standard errors."""
    z = []
    for n_ in study.ns:
        wrong = np.array([coverage_signs_ignored(int(m_), n_) for m_ in study.ms])
        z.append(np.abs(study.mc[n_] - wrong) / _se(wrong, study.trials))
    return float(np.max(z))


def weights_z_signs_ignored(study: "WeightsStudy") -> float:
    """Control of "coverage with actual weights vs exact": the same frequencies against (1 - 2^-m)^n."""
    wrong = np.array([coverage_signs_ignored(m_, n_) for n_, m_ in study.grid])
    return float(np.max(np.abs(study.rows_mc - wrong) / _se(wrong, study.trials)))


def weights_z_rows_only(study: "WeightsStudy") -> float:
    """Control of "Assumption 4(i) below the full union bound": the same frequencies of the whole of
    Assumption 4(i) against the row-only bound 1 - n (3/4)^m (columns ignored), in standard errors."""
    return float(np.max(np.maximum(study.row_bound - study.full_mc, 0) / _se(study.full_mc, study.trials)))
