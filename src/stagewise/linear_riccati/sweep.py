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


@dataclass
class SweepRun:
    """One step size, per (data set, gamma) batch element: ||beta(T) - beta_*||_F, final loss, max |sigma(W1) -
    Corollary 3.1|, relative objective gap (objective - V*)/|V*|, invariant drift ||Z1^T Z1 - Z2 Z2^T - 2 gamma I||_F
    and the final sigma(W1)."""
    beta_err: np.ndarray
    loss: np.ndarray
    cor_err: np.ndarray
    obj_gap: np.ndarray
    drift: np.ndarray
    sv_W1: np.ndarray


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


def gamma_sweep(problems: list[Problem], gammas, eta: float, horizon: float) -> Sweep:
    """Theorem 3.1 and Corollary 3.1 for every (data set, gamma), batched: reduced GD from I_gamma to time
    ``horizon`` at step eta and eta/2, compared with beta_* = X^+ Y, Corollary 3.1 and V*(gamma)."""
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
    eye_d = torch.eye(d, dtype=torch.float64, device=device)
    runs = []
    for e in (eta, eta / 2):
        Z1, Z2 = reduced_init(G, d, k, device=device)
        steps = int(round(horizon / e))
        res = gd(XtX_b, XtY_b, Z1, Z2, e, steps, record_every=max(1, steps // 50))
        inv = res["inv"] - 2 * torch.as_tensor(G, device=device)[:, None, None] * eye_d
        runs.append(SweepRun(
            beta_err=np.linalg.norm(res["beta"][-1] - bstar_b.cpu().numpy(), axis=(1, 2)),
            loss=0.5 * torch.linalg.norm(X_b @ res["W1"] @ res["W2"] - Y_b, dim=(1, 2)).cpu().numpy() ** 2,
            cor_err=np.abs(res["sv_W1"][-1] - cor_b).max(1),
            obj_gap=(objective(res["W1"], res["W2"], G) - V_b) / np.abs(V_b),
            drift=torch.linalg.norm(inv, dim=(1, 2)).cpu().numpy(),
            sv_W1=res["sv_W1"][-1]))
    s1, s2 = runs
    return Sweep(gammas, s1, s2, float(np.median(s1.cor_err / s2.cor_err)), float(np.median(s1.obj_gap / s2.obj_gap)),
                 float(np.median(s1.drift / s2.drift)))


def variational_certificate(problem: Problem, gammas, seed: int) -> float:
    """Proposition ``thm-linear-riccati-varopt``: largest relative gap between the closed-form V*(gamma) and an
    independent L-BFGS minimum of the convex reformulation (random start from ``seed``); NaN for no gammas."""
    sigma_star = torch.linalg.svdvals(problem.beta_star).cpu().numpy()
    d = problem.XtY.shape[0]
    gaps = []
    for g in gammas:
        r = variational_numeric(problem.X.cpu().numpy(), problem.Y.cpu().numpy(), float(g), seed=seed)
        V = variational_value(sigma_star, g, d)
        gaps.append(abs(r["value"] - V) / V)
    return float(max(gaps)) if gaps else float("nan")
