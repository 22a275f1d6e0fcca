"""The gamma sweep: where training ends (Theorem 3.1, Corollary 3.1, Proposition varopt) at two step sizes.

Statements ``thm-linear-riccati-main``, ``thm-linear-riccati-cor`` and ``thm-linear-riccati-varopt``: reduced GD
for every (data set, gamma) in one batch, at step eta and eta/2, plus an independent L-BFGS certificate of V*.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from stagewise.linear_riccati.data import Problem
from stagewise.linear_riccati.gradient_descent import gd
from stagewise.linear_riccati.implicit_bias import (corollary_spectrum, drift_bounds, objective,
                                                    variational_numeric, variational_value)
from stagewise.linear_riccati.initialization import reduced_init
from stagewise.numerics.roundoff import is_positive, numerical_rank, roundoff


@dataclass
class SweepRun:
    """One step size, per (data set, gamma) batch element: ||beta(T) - beta_*||_F, final loss, max |sigma(W1) -
    Corollary 3.1|, relative objective gap (objective - V*)/|V*|, invariant drift ||Z1^T Z1 - Z2 Z2^T - 2 gamma I||_F
    and the final sigma(W1). Also the raw end state the measurement functions below re-evaluate (the controls are
    the same measurements with one thing changed): the final ``Z1``, ``Z2``, the final invariant ``inv`` =
    Z1^T Z1 - Z2 Z2^T, the recorded ``beta`` at the record times ``t``, the rounding floor of the drift
    (``drift_floor``) and ``steps``.

    ``cor_vs_drift`` (:func:`cor_vs_drift`) is the per-singular-value Corollary 3.1 error over what the measured
    drift explains, at most 1; ``gap_vs_drift`` = (objective - V*) / (||D||_F^2 / (8 gamma)), at most 2."""
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
    ``beta_gt`` per batch element (numpy)."""
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


def gamma_sweep(problems: list[Problem], gammas, eta: float, horizon: float, first_order=None) -> Sweep:
    """Theorem 3.1 and Corollary 3.1 for every (data set, gamma), batched: reduced GD from I_gamma to time
    ``horizon`` at step eta and eta/2, compared with beta_* = X^+ Y, Corollary 3.1 and V*(gamma). The eta -> eta/2
    ratios are medians over the batch elements where ``first_order`` (a boolean per element, data set major, as
    :attr:`Horizon.sharpness_each`) is true: GD's error has its expansion in eta only where eta lambda_max(gamma)
    is small; all elements when None, NaN when none."""
    gammas = np.asarray(gammas, float)
    n_gamma = len(gammas)
    d, k = problems[0].XtY.shape
    device = problems[0].X.device
    G = np.tile(gammas, len(problems))

    def batched(tensors):
        return torch.stack(tensors).repeat_interleave(n_gamma, 0)
    XtX_b, XtY_b = batched([p.XtX for p in problems]), batched([p.XtY for p in problems])
    X_b, Y_b = batched([p.X for p in problems]), batched([p.Y for p in problems])
    bstar_b = batched([p.beta_star for p in problems])
    sst_b = torch.linalg.svdvals(bstar_b).cpu().numpy()
    cor_b = np.stack([corollary_spectrum(sst_b[i], G[i], d) for i in range(len(G))])
    V_b = np.array([variational_value(sst_b[i], G[i], d) for i in range(len(G))])
    runs = []
    for e in (eta, eta / 2):
        Z1, Z2 = reduced_init(G, d, k, device=device)
        steps = int(round(horizon / e))
        res = gd(XtX_b, XtY_b, Z1, Z2, e, steps, record_every=max(1, steps // 50))
        inv = res["inv"].cpu().numpy()
        drift = np.linalg.norm(inv - 2 * G[:, None, None] * np.eye(d), axis=(1, 2))
        # a drift below the rounding of the run (steps updates of size 2 gamma + sigma_*,1) is rounding: floor it
        floor = np.array([roundoff(2 * G[i] + sst_b[i, 0], d * steps) for i in range(len(G))])
        cor_err = np.abs(res["sv_W1"][-1] - cor_b).max(1)
        obj_gap = (objective(res["W1"], res["W2"], G) - V_b) / np.abs(V_b)
        run = SweepRun(
            beta_err=np.linalg.norm(res["beta"][-1] - bstar_b.cpu().numpy(), axis=(1, 2)),
            loss=0.5 * torch.linalg.norm(X_b @ res["W1"] @ res["W2"] - Y_b, dim=(1, 2)).cpu().numpy() ** 2,
            cor_err=cor_err, obj_gap=obj_gap, drift=drift, sv_W1=res["sv_W1"][-1],
            Z1=res["W1"].cpu().numpy(), Z2=res["W2"].cpu().numpy(), inv=inv, beta=res["beta"],
            t=np.asarray(res["t"], float), drift_floor=floor, steps=steps)
        run.cor_vs_drift = cor_vs_drift(run, G, sst_b, d)
        run.gap_vs_drift = gap_vs_drift(run, G, sst_b, d)
        runs.append(run)
    s1, s2 = runs
    sel = np.ones(len(G), bool) if first_order is None else np.asarray(first_order, bool)
    out = Sweep(gammas, s1, s2, float("nan"), float("nan"), float("nan"), G, sst_b, X_b.cpu().numpy(),
                Y_b.cpu().numpy(), bstar_b.cpu().numpy(), batched([p.beta_gt for p in problems]).cpu().numpy(), sel, d)
    out.cor_ratio, out.gap_ratio, out.drift_ratio = cor_error_ratio(out), gap_ratio(out), drift_ratio(out)
    return out


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


def drift_ratio(sweep: Sweep, constant: float = 2.0) -> float:
    """Median eta -> eta/2 ratio of the drift ||Z1^T Z1 - Z2 Z2^T - constant gamma I||_F of the invariant at the
    limit (first order in eta: about 2); ``constant`` 1 is the control (the invariant against gamma I, the
    constant of I_gamma read with W1(0) of squared norm gamma)."""
    eye = np.eye(sweep.d)
    a, b = (np.maximum(np.linalg.norm(r.inv - constant * sweep.G[:, None, None] * eye, axis=(1, 2)), r.drift_floor)
            for r in (sweep.coarse, sweep.fine))
    return _median_ratio(a, b, sweep.sel)


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


def min_objective_gap(sweep: Sweep, target: str = "beta_star") -> float:
    """Smallest relative objective gap over both step sizes against V* of ``target``: "beta_star" (X^+ Y, the
    theorem) or "beta_gt" (the matrix that generated the labels, the control)."""
    sig = sweep.sigma_star if target == "beta_star" else np.linalg.svd(sweep.beta_gt, compute_uv=False)
    return float(min(objective_gap(r, sweep.G, sig, sweep.d).min() for r in (sweep.coarse, sweep.fine)))


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


def _median_ratio(a, b, sel) -> float:
    return float(np.median((np.asarray(a) / np.asarray(b))[sel])) if np.any(sel) else float("nan")


@dataclass
class Horizon:
    """Training time of the gamma sweep predicted from the drawn data (``horizon_from_data``): ``T``, the slowest
    predicted final rate ``rate`` (smallest over data sets and gammas), the longest predicted learning time
    ``t_learn`` and the predicted distance ``predicted_err`` to beta_* at ``T`` (largest over the batch). Also the
    smallest numerical row rank of X over the data sets (``rank``; Theorem 3.1 needs n) and the largest loss
    curvature at the limit (``sharpness``, over data sets and gammas: the largest eigenvalue of the loss Hessian
    there, which sets GD's stability, eta * sharpness < 2), and that curvature per (data set, gamma), data set
    major (``sharpness_each``)."""
    T: float
    rate: float
    t_learn: float
    predicted_err: float
    rank: int = 0
    sharpness: float = 0.0
    sharpness_each: np.ndarray = None


def limit_operator(problem: Problem, gamma: float) -> np.ndarray:
    """The linear map r -> X M X^T r + X X^T r N on residuals r = Y - X beta (vectorized, nk x nk) at the limit of
    gradient flow from I_gamma: M = gamma I + (gamma^2 I + beta_* beta_*^T)^{1/2}, N = -gamma I + (gamma^2 I +
    beta_*^T beta_*)^{1/2} (Lemma C.10). It linearizes the flow at its limit (its smallest eigenvalue is the final
    rate) and equals J J^T, J the Jacobian of the residual in (W1, W2), so its largest eigenvalue is the largest
    eigenvalue of the loss Hessian at the limit (the Gauss-Newton part; the rest vanishes with the residual)."""
    X, B = problem.X.cpu().numpy(), problem.beta_star.cpu().numpy()
    U, s, Vh = np.linalg.svd(B, full_matrices=False)
    root = np.sqrt(gamma ** 2 + s ** 2) - gamma
    M = 2 * gamma * np.eye(X.shape[1]) + (U * root) @ U.T
    N = (Vh.T * root) @ Vh
    return np.kron(np.eye(B.shape[1]), X @ M @ X.T) + np.kron(N, X @ X.T)


def limit_spectrum(problem: Problem, gamma: float) -> tuple[float, float, bool]:
    """(smallest eigenvalue, largest eigenvalue, whether the smallest is positive beyond rounding) of
    :func:`limit_operator`. The zero test is scaled to the operator (``roundoff(largest, nk)``): a row-rank
    deficient X gives a smallest eigenvalue of about 1e-17 whose sign depends on the BLAS kernel."""
    L = limit_operator(problem, gamma)
    w = np.linalg.eigvalsh(L)
    lo, hi = float(w[0]), float(w[-1])
    return lo, hi, is_positive(lo, hi, L.shape[0])


def final_rate(problem: Problem, gamma: float) -> float:
    """Rate at which GD from I_gamma approaches beta_* once every mode is learned (Theorem 3.1, derived): the
    residual r = Y - X beta obeys r' = -(X M X^T r + X X^T r N) linearized at the limit (:func:`limit_operator`);
    the rate is the smallest eigenvalue of that linear map. Zero when X is row-rank deficient: an eigenvalue
    within rounding of zero (relative to the largest, see :func:`limit_spectrum`) is returned as 0.0."""
    lo, _, positive = limit_spectrum(problem, gamma)
    return lo if positive else 0.0


def sharpness(problems: list[Problem], gammas) -> float:
    """Largest eigenvalue of the loss Hessian at the limit (:func:`limit_operator`) over data sets and gammas: GD
    at step eta is stable near the limit only for eta * sharpness < 2, and in the first-order regime for a small
    eta * sharpness."""
    return float(max(limit_spectrum(p, float(g))[1] for p in problems for g in np.atleast_1d(gammas)))


def row_rank(problem: Problem) -> int:
    """Numerical row rank of X (Theorem 3.1 needs n): singular values against rounding of the largest
    (:func:`stagewise.numerics.roundoff.numerical_rank`), the same answer for inputs perturbed at rounding level."""
    X = problem.X.cpu().numpy()
    return numerical_rank(np.linalg.svd(X, compute_uv=False), max(X.shape))


def horizon_from_data(problems: list[Problem], gammas, target: float = 1e-10) -> Horizon:
    """Training time after which GD is predicted within ``target`` of beta_* (Theorem 3.1) for every data set and
    gamma: T = max over (data set, gamma) of t_learn + ln(||beta_*||_F / target) / rate, where rate is
    :func:`final_rate` and t_learn = ln(max(sigma_*,1 / gamma, 1)) / (2 lambda_min(X X^T) sigma_*,r) bounds the
    saddle-to-saddle phase (sigma_*,r the smallest nonzero singular value of beta_*): the slowest mode grows from
    gamma like exp(2 lambda_min sigma_*,r t) (the whitened learning time ln(1/gamma)/(2 sigma) with the smallest
    growth rate of the drawn data). Infinite when X is row-rank deficient (an assumption of Theorem 3.1 fails).
    Every zero test is scaled to the problem (:mod:`stagewise.numerics.roundoff`), so the decision does not depend
    on the BLAS kernel."""
    T, rate_min, t_learn_max, rank_min, sharp, each = 0.0, np.inf, 0.0, None, 0.0, []
    for p in problems:
        n, d = p.X.shape
        xs = np.linalg.svd(p.X.cpu().numpy(), compute_uv=False)          # n values, n <= d
        rank = numerical_rank(xs, max(n, d))
        rank_min = rank if rank_min is None else min(rank_min, rank)
        s = torch.linalg.svdvals(p.beta_star).cpu().numpy()
        r = numerical_rank(s, max(p.beta_star.shape))
        bnorm = float(np.linalg.norm(s))
        grows = rank == n and r > 0                                        # lambda_min(X X^T) > 0 and beta_* != 0
        growth = 2 * float(xs[-1]) ** 2 * float(s[r - 1]) if grows else 0.0
        for g in np.asarray(gammas, float):
            lo, hi, positive = limit_spectrum(p, float(g))
            rate = lo if positive else 0.0
            t_learn = np.log(max(s[0] / g, 1.0)) / growth if grows else np.inf
            t_conv = np.log(max(bnorm / target, 1.0)) / rate if positive else np.inf
            T, rate_min, t_learn_max = max(T, t_learn + t_conv), min(rate_min, rate), max(t_learn_max, t_learn)
            sharp = max(sharp, hi)
            each.append(hi)
    return Horizon(float(T), float(rate_min), float(t_learn_max), float(target), int(rank_min or 0), float(sharp),
                   np.array(each))


def variational_minima(problem: Problem, gammas, seed: int) -> list[float]:
    """Proposition ``thm-linear-riccati-varopt``: independent L-BFGS minima of the convex reformulation, one per
    gamma (random start from ``seed``)."""
    return [variational_numeric(problem.X.cpu().numpy(), problem.Y.cpu().numpy(), float(g), seed=seed)["value"]
            for g in gammas]


def variational_gap(minima, problem: Problem, gammas, target: str = "beta_star") -> float:
    """Largest relative gap between the L-BFGS ``minima`` and the closed-form V*(gamma) at the singular values of
    ``target``: "beta_star" (X^+ Y, the proposition) or "beta_gt" (the label-generating matrix, the control: the
    wrong optimum). NaN for no gammas."""
    B = problem.beta_star if target == "beta_star" else problem.beta_gt
    sigma = torch.linalg.svdvals(B).cpu().numpy()
    d = problem.XtY.shape[0]
    gaps = [abs(v - variational_value(sigma, g, d)) / variational_value(sigma, g, d) for v, g in zip(minima, gammas)]
    return float(max(gaps)) if gaps else float("nan")


def variational_certificate(problem: Problem, gammas, seed: int) -> float:
    """Proposition ``thm-linear-riccati-varopt``: :func:`variational_gap` of the L-BFGS minima from ``seed``."""
    return variational_gap(variational_minima(problem, gammas, seed), problem, gammas)


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


def short_horizon_ratio(problems: list[Problem], gammas, eta: float, horizon: float, first_order, quantity: str,
                        fraction: float = 1.0 / 16) -> float:
    """Control of the eta -> eta/2 ratios: the same sweep stopped at ``fraction`` of the horizon, before most runs
    have converged, where what is measured is unfinished training (about the same at eta and eta/2: a ratio near
    1). ``quantity`` "cor" (:func:`cor_error_ratio`) or "gap" (:func:`gap_ratio`)."""
    short = gamma_sweep(problems, gammas, eta, horizon * fraction, first_order=first_order)
    return short.cor_ratio if quantity == "cor" else short.gap_ratio
