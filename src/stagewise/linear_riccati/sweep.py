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
from stagewise.linear_riccati.implicit_bias import (corollary_spectrum, objective, variational_numeric,
                                                    variational_value)
from stagewise.linear_riccati.initialization import reduced_init
from stagewise.numerics.roundoff import is_positive, numerical_rank, roundoff


@dataclass
class SweepRun:
    """One step size, per (data set, gamma) batch element: ||beta(T) - beta_*||_F, final loss, max |sigma(W1) -
    Corollary 3.1|, relative objective gap (objective - V*)/|V*|, invariant drift ||Z1^T Z1 - Z2 Z2^T - 2 gamma I||_F
    and the final sigma(W1). Controls per batch element: ||beta(T) - beta_gt||_F against the matrix that generated
    the labels (``beta_gt_err``), the loss at the last saddle (beta_* truncated to rank k - 1, ``saddle_loss``),
    the relative objective gap at the initialization (untrained, infeasible: ``obj_gap_init``) and
    max |sigma(W1) - Corollary 3.1 at gamma/2| (``cor_err_control``).

    Derived from the measured drift D = Z1^T Z1 - Z2 Z2^T - 2 gamma I (first order in D, see the chapter):
    ``cor_vs_drift`` = cor_err / (||D||_F / (2 sqrt(2 gamma))), at most 1 when the Corollary 3.1 error is the
    drift's, and ``gap_vs_drift`` = (objective - V*) / (||D||_F^2 / (8 gamma)), about 1 at most (second order);
    controls ``cor_vs_drift_control`` (Corollary 3.1 at gamma/2) and ``gap_vs_drift_init`` (untrained network)."""
    beta_err: np.ndarray
    loss: np.ndarray
    cor_err: np.ndarray
    obj_gap: np.ndarray
    drift: np.ndarray
    sv_W1: np.ndarray
    beta_gt_err: np.ndarray = None
    saddle_loss: np.ndarray = None
    obj_gap_init: np.ndarray = None
    cor_err_control: np.ndarray = None
    cor_vs_drift: np.ndarray = None
    cor_vs_drift_control: np.ndarray = None
    gap_vs_drift: np.ndarray = None
    gap_vs_drift_init: np.ndarray = None


@dataclass
class Sweep:
    """The sweep at step ``eta`` (``coarse``) and ``eta / 2`` (``fine``), with median eta -> eta/2 error ratios."""
    gammas: np.ndarray
    coarse: SweepRun
    fine: SweepRun
    cor_ratio: float
    gap_ratio: float
    drift_ratio: float

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
    cor_half = np.stack([corollary_spectrum(sst_b[i], G[i] / 2, d) for i in range(len(G))])
    bgt_b = batched([p.beta_gt for p in problems]).cpu().numpy()
    U, S, Vh = torch.linalg.svd(bstar_b, full_matrices=False)
    S_trunc = S.clone()
    for b in range(len(G)):          # drop the smallest *nonzero* singular value (rank(beta_*) < k when n < k)
        S_trunc[b, max(numerical_rank(sst_b[b], max(d, k)), 1) - 1] = 0.0
    saddle = 0.5 * torch.linalg.norm(X_b @ (U * S_trunc[:, None, :]) @ Vh - Y_b, dim=(1, 2)).cpu().numpy() ** 2
    V_b = np.array([variational_value(sst_b[i], G[i], d) for i in range(len(G))])
    eye_d = torch.eye(d, dtype=torch.float64, device=device)
    runs = []
    for e in (eta, eta / 2):
        Z1, Z2 = reduced_init(G, d, k, device=device)
        gap0 = (objective(Z1, Z2, G) - V_b) / np.abs(V_b)
        steps = int(round(horizon / e))
        res = gd(XtX_b, XtY_b, Z1, Z2, e, steps, record_every=max(1, steps // 50))
        inv = res["inv"] - 2 * torch.as_tensor(G, device=device)[:, None, None] * eye_d
        drift = torch.linalg.norm(inv, dim=(1, 2)).cpu().numpy()
        # a drift below the rounding of the run (steps updates of size 2 gamma + sigma_*,1) is rounding: floor it
        floor = np.array([roundoff(2 * G[i] + sst_b[i, 0], d * steps) for i in range(len(G))])
        drift_f = np.maximum(drift, floor)
        cor_err = np.abs(res["sv_W1"][-1] - cor_b).max(1)
        cor_ctrl = np.abs(res["sv_W1"][-1] - cor_half).max(1)
        obj_gap = (objective(res["W1"], res["W2"], G) - V_b) / np.abs(V_b)
        cor_scale = drift_f / (2 * np.sqrt(2 * G))
        gap_scale = drift_f ** 2 / (8 * G) / np.abs(V_b)
        runs.append(SweepRun(
            beta_err=np.linalg.norm(res["beta"][-1] - bstar_b.cpu().numpy(), axis=(1, 2)),
            loss=0.5 * torch.linalg.norm(X_b @ res["W1"] @ res["W2"] - Y_b, dim=(1, 2)).cpu().numpy() ** 2,
            cor_err=cor_err, obj_gap=obj_gap, drift=drift,
            sv_W1=res["sv_W1"][-1],
            beta_gt_err=np.linalg.norm(res["beta"][-1] - bgt_b, axis=(1, 2)),
            saddle_loss=saddle, obj_gap_init=gap0,
            cor_err_control=cor_ctrl,
            cor_vs_drift=cor_err / cor_scale, cor_vs_drift_control=cor_ctrl / cor_scale,
            gap_vs_drift=obj_gap / gap_scale, gap_vs_drift_init=np.abs(gap0) / gap_scale))
    s1, s2 = runs
    sel = np.ones(len(G), bool) if first_order is None else np.asarray(first_order, bool)

    def ratio(a, b):
        return float(np.median((a / b)[sel])) if sel.any() else float("nan")
    return Sweep(gammas, s1, s2, ratio(s1.cor_err, s2.cor_err), ratio(s1.obj_gap, s2.obj_gap),
                 ratio(s1.drift, s2.drift))


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


def variational_certificate(problem: Problem, gammas, seed: int) -> float:
    """Proposition ``thm-linear-riccati-varopt``: largest relative gap between the closed-form V*(gamma) and an
    independent L-BFGS minimum of the convex reformulation (random start from ``seed``); NaN for no gammas."""
    return variational_gaps(problem, gammas, seed)[0]


def variational_gaps(problem: Problem, gammas, seed: int) -> tuple[float, float]:
    """:func:`variational_certificate` and its control: the same L-BFGS minima against the closed form evaluated at
    the singular values of the label-generating beta_gt instead of beta_* = X^+ Y (the wrong optimum). Returns
    (gap, control gap); NaN for no gammas."""
    sigma_star = torch.linalg.svdvals(problem.beta_star).cpu().numpy()
    sigma_gt = torch.linalg.svdvals(problem.beta_gt).cpu().numpy()
    d = problem.XtY.shape[0]
    gaps, controls = [], []
    for g in gammas:
        r = variational_numeric(problem.X.cpu().numpy(), problem.Y.cpu().numpy(), float(g), seed=seed)
        V, V_gt = variational_value(sigma_star, g, d), variational_value(sigma_gt, g, d)
        gaps.append(abs(r["value"] - V) / V)
        controls.append(abs(r["value"] - V_gt) / V_gt)
    return (float(max(gaps)), float(max(controls))) if gaps else (float("nan"), float("nan"))
