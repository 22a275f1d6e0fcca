"""Corollary 3.1 at the limit of the gamma sweep: sigma(W1) against sqrt(gamma + sqrt(gamma^2 + sigma_*,i^2)).

Statement ``thm-linear-riccati-cor``: per singular value against what the measured drift of the invariant explains,
the eta -> eta/2 error ratio, the bottom branch sqrt(2 gamma) at small gamma, and per gamma relative to the
first-order change from eta to eta/2; each with its control (the active branches at gamma/2).
"""
from __future__ import annotations

import numpy as np

from stagewise.linear_riccati.gd_limit import Sweep, SweepRun, _median_ratio
from stagewise.linear_riccati.implicit_bias import corollary_spectrum, drift_bounds


# -- measurements at the limit (each also evaluates its control: the same measurement with one thing changed) --

def corollary_at(sigma_star, gamma: float, d: int, gamma_factor: float = 1.0) -> np.ndarray:
    """Corollary 3.1 with its active branches (i <= rank of beta_*) at gamma * gamma_factor and its bottom branch
    sqrt(2 gamma) as stated: ``gamma_factor`` 1/2 is the controls' wrong-but-plausible theory (the active values of a
    start with ||W1(0)||^2 = gamma), which leaves the bottom branch alone so that it differs from the corollary in
    the learned directions only."""
    formula = np.array(corollary_spectrum(sigma_star, gamma * gamma_factor, d), float)
    if gamma_factor != 1.0:          # a parameter, not a computed float: the control's bottom branch, as stated
        formula[len(sigma_star):] = np.sqrt(2 * gamma)
    return formula


def cor_vs_drift(run: SweepRun, G, sigma_star, d: int, gamma_factor: float = 1.0) -> np.ndarray:
    """Corollary 3.1 per singular value against what the measured drift D of the invariant explains (derived in the
    chapter), largest over the d values of each batch element: |sigma_i(W1) - formula_i| / (sqrt(m_i) ||D v_i|| /
    (2 (m_i - gamma))), m_i the i-th eigenvalue of M = Z1 Z1^T, v_i = Z1^T u_i / sqrt(m_i) (see
    :func:`stagewise.linear_riccati.implicit_bias.drift_bounds`). ``gamma_factor`` evaluates the corollary's active
    branches at gamma * gamma_factor (:func:`corollary_at`; the control: I_gamma read with W1(0) of squared norm
    gamma)."""
    G = np.asarray(G, float)
    out = np.empty(len(G))
    for b in range(len(G)):
        formula = corollary_at(sigma_star[b], G[b], d, gamma_factor)
        out[b] = (drift_bounds(run.Z1[b], run.inv[b], G[b], formula, run.drift_floor[b])).max()
    return out


def cor_error_ratio(sweep: Sweep, gamma_factor: float = 1.0) -> float:
    """Median eta -> eta/2 ratio of max_i |sigma_i(W1) - Corollary 3.1| (first order in eta: about 2); with
    ``gamma_factor`` 1/2 the active branches at gamma/2 (:func:`corollary_at`, the control: a wrong formula leaves an
    eta-independent error, ratio about 1)."""
    errs = []
    for r in (sweep.coarse, sweep.fine):
        formula = np.stack([corollary_at(sweep.sigma_star[i], sweep.G[i], sweep.d, gamma_factor)
                            for i in range(len(sweep.G))])
        errs.append(np.abs(r.sv_W1 - formula).max(1))
    return _median_ratio(errs[0], errs[1], sweep.sel)


def cor_vs_drift_max(sweep: Sweep, gamma_factor: float = 1.0) -> float:
    """:func:`cor_vs_drift`, largest over batch elements and both steps (``gamma_factor`` 1/2: the control)."""
    return float(max(cor_vs_drift(r, sweep.G, sweep.sigma_star, sweep.d, gamma_factor).max()
                     for r in (sweep.coarse, sweep.fine)))


def bottom_tolerance(sweep: Sweep) -> float:
    """Largest relative tolerance that :func:`cor_vs_drift` allows on the bottom branch sqrt(2 gamma) at the
    smallest gamma (what the check can see at the small end): sqrt(m_i) ||D v_i|| / (2 (m_i - gamma)) / sqrt(2 gamma)
    over the d - k bottom values, both steps."""
    k = sweep.sigma_star.shape[1]
    out = 0.0
    for r in (sweep.coarse, sweep.fine):
        for b in np.flatnonzero(np.isclose(sweep.G, sweep.G.min())):
            formula = corollary_spectrum(sweep.sigma_star[b], sweep.G[b], sweep.d)
            ratio = drift_bounds(r.Z1[b], r.inv[b], sweep.G[b], formula, r.drift_floor[b])
            err = np.abs(r.sv_W1[b] - formula)
            with np.errstate(divide="ignore", invalid="ignore"):
                tol = np.where(ratio > 0, err / ratio, 0.0)
            out = max(out, float((tol[k:] / np.sqrt(2 * sweep.G[b])).max()))
    return out


def global_bound_bottom(sweep: Sweep) -> float:
    """The global form of the drift bound, ||D||_F / (2 sqrt(2 gamma)), over the bottom branch sqrt(2 gamma) at the
    smallest gamma, largest over data sets and both steps: how much larger than the whole bottom branch a bound that
    is not taken per direction would be (D = Z1^T Z1 - Z2 Z2^T - 2 gamma I at the limit)."""
    out = 0.0
    for r in (sweep.coarse, sweep.fine):
        for b in np.flatnonzero(np.isclose(sweep.G, sweep.G.min())):
            D = r.inv[b] - 2 * sweep.G[b] * np.eye(sweep.d)
            out = max(out, float(np.linalg.norm(D) / (2 * np.sqrt(2 * sweep.G[b])) / np.sqrt(2 * sweep.G[b])))
    return out


# -- per-gamma relative tolerances from the two step sizes (the small-gamma end is held to its own scale) --------

def _relative_errors(sv, sigma_star, G, d: int, gamma_factor: float) -> np.ndarray:
    """max_i |sigma_i(W1) - formula_i| / formula_i per batch element, Corollary 3.1 at gamma * gamma_factor (every
    branch, the bottom one sqrt(2 gamma gamma_factor) included: the control 1/2 is the limit of I_{gamma/2})."""
    formula = np.stack([corollary_spectrum(sigma_star[i], G[i] * gamma_factor, d) for i in range(len(G))])
    return (np.abs(sv - formula) / formula).max(1)


def cor_relative(sweep: Sweep, gamma_factor: float = 1.0) -> np.ndarray:
    """Corollary 3.1 per gamma, relative (derived in the chapter): the largest relative error of sigma(W1) at step
    eta/2 over its own tolerance 2 e_1 + floor, where e_1 = max_i |sigma_i(eta) - sigma_i(eta/2)| / formula_i is
    the first-order change from eta to eta/2 (a first-order error at eta/2 is about e_1) and the floor the
    rounding of a bottom value, drift_floor / (4 gamma). Per batch element; NaN outside ``sweep.sel`` (GD's error
    has its expansion in eta only there). ``gamma_factor`` 1/2 measures the eta/2 limit against Corollary 3.1 at
    gamma/2 with the same tolerance (the control: the limit of I_{gamma/2})."""
    G, sst, d = sweep.G, sweep.sigma_star, sweep.d
    f = np.stack([corollary_spectrum(sst[i], G[i], d) for i in range(len(G))])
    change = (np.abs(sweep.coarse.sv_W1 - sweep.fine.sv_W1) / f).max(1)
    floor = np.maximum(sweep.coarse.drift_floor, sweep.fine.drift_floor) / (4 * G)
    ratio = _relative_errors(sweep.fine.sv_W1, sst, G, d, gamma_factor) / (2 * change + floor)
    return np.where(sweep.sel, ratio, np.nan)


def cor_relative_extreme(sweep: Sweep, gamma_factor: float = 1.0, which: str = "max") -> float:
    """:func:`cor_relative` over the first-order runs: its largest value (``which`` "max", the row) or its smallest
    (``which`` "min": the control, Corollary 3.1 at gamma/2 where it comes closest; above 1 means it is rejected
    at every gamma)."""
    r = cor_relative(sweep, gamma_factor)[sweep.sel]
    return float(np.max(r) if which == "max" else np.min(r)) if r.size else float("nan")


def bottom_relative(sweep: Sweep, which: str = "min") -> float:
    """Largest relative deviation of the d - k bottom values of sigma(W1) from sqrt(2 gamma) at step eta, at the
    smallest gamma (``which`` "min") or over all gammas ("all")."""
    k = sweep.sigma_star.shape[1]
    sel = np.isclose(sweep.G, sweep.G.min()) if which == "min" else np.ones(len(sweep.G), bool)
    bottom = sweep.coarse.sv_W1[sel][:, k:]
    root = np.sqrt(2 * sweep.G[sel])[:, None]
    return float((np.abs(bottom - root) / root).max()) if bottom.size else float("nan")


def cor_relative_tolerance(sweep: Sweep) -> float:
    """The relative tolerance 2 e_1 + floor of :func:`cor_relative` at the smallest gamma (largest over data sets)."""
    G, sst, d = sweep.G, sweep.sigma_star, sweep.d
    b = np.flatnonzero(np.isclose(G, G.min()))
    f = np.stack([corollary_spectrum(sst[i], G[i], d) for i in b])
    change = (np.abs(sweep.coarse.sv_W1[b] - sweep.fine.sv_W1[b]) / f).max(1)
    floor = np.maximum(sweep.coarse.drift_floor[b], sweep.fine.drift_floor[b]) / (4 * G[b])
    return float((2 * change + floor).max())
