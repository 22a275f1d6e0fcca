"""The objective (3.1) at the limit of the gamma sweep against its minimum V*(gamma) (Theorem 3.1(iii)).

Statements ``thm-linear-riccati-main`` and ``thm-linear-riccati-varopt``: the relative excess (objective - V*) / |V*|
of the GD limit, its eta -> eta/2 ratio (second order in eta), its size against the drift of the invariant, and per
gamma relative to the change from eta to eta/2; each with its control (V* of beta_gt, the objective at gamma/2, the
limit of I_{gamma/2}).
"""
from __future__ import annotations

import numpy as np
import torch

from stagewise.linear_riccati.gd_limit import Sweep, SweepRun, _median_ratio
from stagewise.linear_riccati.implicit_bias import objective, variational_value
from stagewise.numerics.roundoff import roundoff


# -- measurements at the limit (each also evaluates its control: the same measurement with one thing changed) --

def objective_gap(run: SweepRun, G, sigma_star, d: int, gamma_factor: float = 1.0, terms: int | None = None):
    """Relative excess (objective (3.1) - V*) / |V*| of the limit, per batch element, both at gamma * gamma_factor;
    ``terms`` sums V* over that many singular values only (``d`` when None)."""
    g = np.asarray(G, float) * gamma_factor
    V = np.array([variational_value(sigma_star[i][:terms or d], g[i], terms or d) for i in range(len(g))])
    return (objective(torch.from_numpy(run.Z1), torch.from_numpy(run.Z2), g) - V) / np.abs(V)


def gap_ratio(sweep: Sweep, gamma_factor: float = 1.0) -> float:
    """Median eta -> eta/2 ratio of the relative objective gap (second order in eta: about 4); the objective and V*
    at gamma/2 (``gamma_factor`` 0.5, the control) leave a first-order excess that does not shrink (about 1)."""
    a, b = (objective_gap(r, sweep.G, sweep.sigma_star, sweep.d, gamma_factor) for r in (sweep.coarse, sweep.fine))
    return _median_ratio(a, b, sweep.sel)


def gap_vs_drift(run: SweepRun, G, sigma_star, d: int, terms: int | None = None) -> np.ndarray:
    """(objective - V*) / (||D||_F^2 / (8 gamma)) per batch element: second order in the drift D (derived), at
    most about 1; ``terms`` = k sums V* over the k nonzero singular values only (the control: the bottom d - k
    terms of V* dropped)."""
    G = np.asarray(G, float)
    V = np.array([variational_value(sigma_star[i][:terms or d], G[i], terms or d) for i in range(len(G))])
    gap = objective_gap(run, G, sigma_star, d, 1.0, terms)
    drift = np.maximum(run.drift, run.drift_floor)
    return gap / (drift ** 2 / (8 * G) / np.abs(V))


def gap_vs_drift_max(sweep: Sweep, terms: int | None = None) -> float:
    """:func:`gap_vs_drift`, largest over batch elements and both steps (``terms`` = k: the control)."""
    return float(max(gap_vs_drift(r, sweep.G, sweep.sigma_star, sweep.d, terms).max()
                     for r in (sweep.coarse, sweep.fine)))


def gap_vs_drift_steps_mixed(sweep: Sweep) -> float:
    """Near control of the gap-vs-drift row: the objective excess of the limit at step eta over the bound of the
    drift measured at eta/2 (the two step sizes mixed up), largest over batch elements. The drift is first order in
    eta and the excess second order, so this is about four times the row's value where GD is in its first-order
    regime (more where it is not): a limit displaced twice as far as the drift that should explain it."""
    G = np.asarray(sweep.G, float)
    V = np.array([variational_value(sweep.sigma_star[i], G[i], sweep.d) for i in range(len(G))])
    gap = objective_gap(sweep.coarse, G, sweep.sigma_star, sweep.d)
    drift = np.maximum(sweep.fine.drift, sweep.fine.drift_floor)
    return float((gap / (drift ** 2 / (8 * G) / np.abs(V))).max())


def min_objective_gap(sweep: Sweep, target: str = "beta_star") -> float:
    """Smallest relative objective gap over both step sizes against V* of ``target``: "beta_star" (X^+ Y, the
    theorem) or "beta_gt" (the matrix that generated the labels, the control)."""
    sig = sweep.sigma_star if target == "beta_star" else np.linalg.svd(sweep.beta_gt, compute_uv=False)
    return float(min(objective_gap(r, sweep.G, sig, sweep.d).min() for r in (sweep.coarse, sweep.fine)))


# -- per-gamma relative tolerances from the two step sizes (the small-gamma end is held to its own scale) --------

def limit_gap(sigma_star, gamma: float, d: int, limit_factor: float) -> float:
    """Relative excess (F_gamma(beta_*, M) - V*(gamma)) / V*(gamma) of the limit of I_{gamma limit_factor} (Corollary
    3.1 at gamma * limit_factor: M with eigenvalues m_i = g + sqrt(g^2 + sigma_*,i^2), g = gamma limit_factor)
    evaluated in the gamma objective F_gamma (3.1); 0 for ``limit_factor`` 1."""
    s = np.zeros(d)
    s[:len(sigma_star)] = np.asarray(sigma_star, float)
    g = gamma * limit_factor
    m = g + np.sqrt(g ** 2 + s ** 2)
    positive = s > 0
    F = (0.5 * m - gamma * np.log(m)).sum() + 0.5 * (s[positive] ** 2 / m[positive]).sum()
    V = float(variational_value(sigma_star, gamma, d))
    return (F - V) / abs(V)


def gap_relative(sweep: Sweep, limit_factor: float = 1.0) -> np.ndarray:
    """Theorem 3.1(iii) per gamma, relative (derived in the chapter): the relative objective gap at step eta/2 over
    its own tolerance (2/3)(gap(eta) - gap(eta/2)) + floor. The gap is second order in eta, so gap(eta/2) is about
    a third of the change from eta to eta/2; the tolerance is twice that, and the floor the rounding of the
    objective, roundoff(1, d^2). Per batch element, NaN outside ``sweep.sel``. ``limit_factor`` 1/2 puts in place
    of the GD limit at eta/2 the limit of I_{gamma/2} evaluated in the gamma objective (:func:`limit_gap`), with
    the same tolerance (the control)."""
    g1, g2 = sweep.coarse.obj_gap, sweep.fine.obj_gap
    tol = np.maximum(2.0 / 3.0 * (g1 - g2), 0.0) + roundoff(1.0, sweep.d ** 2)
    gap = g2 if limit_factor == 1.0 else np.array([limit_gap(sweep.sigma_star[i], sweep.G[i], sweep.d, limit_factor)
                                                    for i in range(len(sweep.G))])
    return np.where(sweep.sel, gap / tol, np.nan)


def gap_relative_extreme(sweep: Sweep, limit_factor: float = 1.0, which: str = "max") -> float:
    """:func:`gap_relative` over the first-order runs: largest (the row) or smallest (``which`` "min": the control,
    the limit of I_{gamma/2} at the gamma where it comes closest)."""
    r = gap_relative(sweep, limit_factor)[sweep.sel]
    return float(np.max(r) if which == "max" else np.min(r)) if r.size else float("nan")
