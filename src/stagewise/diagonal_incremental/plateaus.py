"""Observables of the staircase of Theorem 4.1: transition times, plateau counts, midpoints, supports.

The extrapolation of transition times in ``1/log(1/alpha)`` is ``stagewise.numerics.fits.inverse_log_fit``."""
from __future__ import annotations

import math

import numpy as np


def transition_times(tau: np.ndarray, loss: np.ndarray, levels, dense_loss=None, iters: int = 40):
    """Transition times of Theorem 4.1, measured: the k-th transition is the first time after the (k-1)-th
    at which the loss falls below ``(L(theta^{k-1}) + L(theta^k)) / 2``; ``levels`` are Algorithm 1's
    plateau losses.

    ``dense_loss(t)`` (optional) refines each crossing by bisection.  Returns a list (``nan`` if missing)."""
    times, start = [], 0
    for k in range(1, len(levels)):
        mid = 0.5 * (levels[k - 1] + levels[k])
        below = np.flatnonzero(loss[start:] < mid)
        if below.size == 0:
            times.append(math.nan)
            continue
        j = start + int(below[0])
        lo, hi = tau[max(j - 1, 0)], tau[j]
        if dense_loss is not None and j > 0:
            for _ in range(iters):
                m = 0.5 * (lo + hi)
                lo, hi = (lo, m) if dense_loss(m) < mid else (m, hi)
        times.append(0.5 * (lo + hi))
        start = j
    return times


def drop_threshold(levels) -> float:
    """The relative drop that counts as a transition: half the smallest relative drop between consecutive
    plateau losses of the theory, ``min_k (L_{k-1} - L_k) / L_{k-1}`` (Algorithm 1's ``L(theta^k)``). A teacher
    whose stages each remove a fifth of the loss and one whose stages remove a hundredth are both counted."""
    lv = np.asarray(levels, float)
    return float(0.5 * np.min((lv[:-1] - lv[1:]) / lv[:-1])) if lv.size > 1 else 0.5


def count_plateaus(tau: np.ndarray, loss: np.ndarray, levels, window: float = 0.05,
                   floor: float = 1e-8) -> int:
    """Count plateaus (Theorem 4.1: K stages give K + 1 plateaus) from the drops of a loss curve: a drop is a
    window of rescaled width ``window`` over which the loss falls by more than :func:`drop_threshold` of its
    current value (half the smallest relative drop of the theory's plateau losses ``levels``); consecutive
    windows merge; losses below ``floor * loss[0]`` (rounding noise once the loss is ~0) are ignored. Where the
    drops are counted does not use the theory: two drops merged by a finite alpha count as one.
    Returns the number of plateaus = number of drops + 1 (the last plateau is the final one)."""
    rel_drop = drop_threshold(levels)
    step = max(1, int(round(window / (tau[1] - tau[0]))))
    drop = ((loss[:-step] - loss[step:]) > rel_drop * loss[:-step]) & (loss[:-step] > floor * loss[0])
    edges = np.flatnonzero(np.diff(drop.astype(int)) == 1).size + int(drop[0])
    return edges + 1


def plateau_midpoints(T, tau_end: float) -> np.ndarray:
    """Midpoints of the plateaus ``(T_k, T_{k+1})`` of Theorem 4.1, where ``theta ~ theta^k``
    (``T_0 = 0``; the last plateau ends at ``tau_end``)."""
    edges = np.concatenate([[0.0], np.asarray(T, float), [tau_end]])
    return 0.5 * (edges[:-1] + edges[1:])


def support_counts(beta: np.ndarray, d: int, threshold: float = 1e-3) -> np.ndarray:
    """Ranks of ``W_K W_Q^T = diag(beta[:d])`` and ``W_V W_O^T = diag(beta[d:])`` (Example 3.2): the number
    of entries above ``threshold`` in absolute value; ``beta`` ``(..., 2d)`` -> ``(..., 2)``."""
    big = np.abs(beta) > threshold
    return np.stack([big[..., :d].sum(-1), big[..., d:].sum(-1)], axis=-1)
