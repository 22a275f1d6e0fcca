"""Where GD ends in the gamma sweep (Theorem 3.1): the record of its limit, beta(T) -> beta_*, the loss -> 0.

Statements ``thm-linear-riccati-main`` and ``thm-linear-riccati-invariant``: the end state of reduced GD from I_gamma
at one step size (``SweepRun``) and at eta and eta/2 (``Sweep``), measured against beta_* = X^+ Y (distance, final
loss) and the O(eta) drift of the invariant Z1^T Z1 - Z2 Z2^T = 2 gamma I; the median eta -> eta/2 ratio that every
eta-order measurement of the sweep takes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class SweepRun:
    """One step size, per (data set, gamma) batch element: ||beta(T) - beta_*||_F, final loss, max |sigma(W1) -
    Corollary 3.1|, relative objective gap (objective - V*)/|V*|, invariant drift ||Z1^T Z1 - Z2 Z2^T - 2 gamma I||_F
    and the final sigma(W1). Also the raw end state the measurement functions re-evaluate (:mod:`.corollary_31`,
    :mod:`.objective_31`; the controls are the same measurements with one thing changed): the final ``Z1``, ``Z2``,
    the final invariant ``inv`` = Z1^T Z1 - Z2 Z2^T, the recorded ``beta`` at the record times ``t``, the rounding
    floor of the drift (``drift_floor``) and ``steps``.

    ``cor_vs_drift`` (:func:`.corollary_31.cor_vs_drift`) is the per-singular-value Corollary 3.1 error over what
    the measured drift explains, at most 1; ``gap_vs_drift`` = (objective - V*) / (||D||_F^2 / (8 gamma)), at most
    2."""
    beta_err: np.ndarray
    loss: np.ndarray
    cor_err: np.ndarray
    obj_gap: np.ndarray
    drift: np.ndarray
    sv_W1: np.ndarray
    Z1: np.ndarray = None
    Z2: np.ndarray = None
    inv: np.ndarray = None
    beta: np.ndarray = None
    t: np.ndarray = None
    drift_floor: np.ndarray = None
    steps: int = 0
    cor_vs_drift: np.ndarray = None
    gap_vs_drift: np.ndarray = None


@dataclass
class Sweep:
    """The sweep at step ``eta`` (``coarse``) and ``eta / 2`` (``fine``), with median eta -> eta/2 error ratios
    (over the batch elements ``sel`` in the first-order regime). ``G`` the gamma of each batch element (data set
    major), ``sigma_star`` (batch, min(d, k)) the singular values of beta_*, ``X``, ``Y``, ``beta_star``,
    ``beta_gt`` per batch element (numpy), and the data set of each batch element (``data_set``: the sweep runs only
    the (data set, gamma) pairs where GD is stable)."""
    gammas: np.ndarray
    coarse: SweepRun
    fine: SweepRun
    cor_ratio: float
    gap_ratio: float
    drift_ratio: float
    G: np.ndarray = None
    sigma_star: np.ndarray = None
    X: np.ndarray = None
    Y: np.ndarray = None
    beta_star: np.ndarray = None
    beta_gt: np.ndarray = None
    sel: np.ndarray = None
    d: int = 0
    data_set: np.ndarray = None

    @property
    def beta_err_max(self) -> float:
        return float(max(self.coarse.beta_err.max(), self.fine.beta_err.max()))

    @property
    def loss_max(self) -> float:
        return float(max(self.coarse.loss.max(), self.fine.loss.max()))

    @property
    def obj_gap_min_both(self) -> float:
        """Smallest relative objective gap over both step sizes (>= 0 up to rounding: V* is the minimum)."""
        return float(min(self.coarse.obj_gap.min(), self.fine.obj_gap.min()))


# -- measurements at the limit (each also evaluates its control: the same measurement with one thing changed) --

def drift_ratio(sweep: Sweep, constant: float = 2.0) -> float:
    """Median eta -> eta/2 ratio of the drift ||Z1^T Z1 - Z2 Z2^T - constant gamma I||_F of the invariant at the
    limit (first order in eta: about 2); ``constant`` 1 is the control (the invariant against gamma I, the
    constant of I_gamma read with W1(0) of squared norm gamma)."""
    eye = np.eye(sweep.d)
    a, b = (np.maximum(np.linalg.norm(r.inv - constant * sweep.G[:, None, None] * eye, axis=(1, 2)), r.drift_floor)
            for r in (sweep.coarse, sweep.fine))
    return _median_ratio(a, b, sweep.sel)


def beta_error(sweep: Sweep, target: str = "beta_star") -> float:
    """Largest ||beta(T) - target||_F over batch elements and both steps; ``target`` "beta_star" (X^+ Y) or
    "beta_gt" (the label-generating matrix, the control)."""
    ref = sweep.beta_star if target == "beta_star" else sweep.beta_gt
    return float(max(np.linalg.norm(r.beta[-1] - ref, axis=(1, 2)).max() for r in (sweep.coarse, sweep.fine)))


def loss_at(sweep: Sweep, fraction: float = 1.0) -> float:
    """Largest loss 1/2 ||X beta - Y||^2 over batch elements and both steps at the last record at or before
    ``fraction`` of the horizon (1: the end; 1/2: training stopped at half the stated time, the control)."""
    out = 0.0
    for r in (sweep.coarse, sweep.fine):
        i = int(np.searchsorted(r.t, fraction * r.t[-1] * (1 + 1e-12), side="right")) - 1
        out = max(out, float((0.5 * ((sweep.X @ r.beta[i] - sweep.Y) ** 2).sum((1, 2))).max()))
    return out


def loss_curve(sweep: Sweep) -> tuple[np.ndarray, np.ndarray]:
    """The record times as fractions of the horizon and the largest loss 1/2 ||X beta - Y||^2 at each record over
    batch elements and both steps (the fine run's records at the coarse run's fractions)."""
    fractions = sweep.coarse.t / sweep.coarse.t[-1]
    return fractions, np.array([loss_at(sweep, f) for f in fractions])


def loss_before_tolerance(sweep: Sweep, tolerance: float) -> float:
    """Near control of the final-loss row: the largest loss of the sweep stopped one record (a fiftieth of the
    horizon) before the first record where its loss is at most ``tolerance``, the nearest miss on the time axis
    (the final loss when no record meets it)."""
    fractions, losses = loss_curve(sweep)
    below = np.flatnonzero(losses <= tolerance)
    return float(losses[max(int(below[0]) - 1, 0)] if below.size else losses[-1])


def tolerance_time(sweep: Sweep, tolerance: float) -> float:
    """The fraction of the horizon at which the sweep's loss first meets ``tolerance`` (NaN if never): a run
    stopped earlier fails the final-loss row."""
    fractions, losses = loss_curve(sweep)
    below = np.flatnonzero(losses <= tolerance)
    return float(fractions[below[0]]) if below.size else float("nan")


def _median_ratio(a, b, sel) -> float:
    return float(np.median((np.asarray(a) / np.asarray(b))[sel])) if np.any(sel) else float("nan")
