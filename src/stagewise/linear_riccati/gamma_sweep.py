"""The gamma sweep: where training ends (Theorem 3.1, Corollary 3.1, Proposition varopt) at two step sizes.

Statements ``thm-linear-riccati-main``, ``thm-linear-riccati-cor`` and ``thm-linear-riccati-varopt``: reduced GD
for every (data set, gamma) in one batch, at step eta and eta/2, with the eta -> eta/2 ratios of its measurements
(:mod:`.gd_limit`, :mod:`.corollary_31`, :mod:`.objective_31`) and their control, the same sweep stopped early.
"""
from __future__ import annotations

import numpy as np
import torch

# Corollary 3.1 and the objective (3.1) are looked up in the modules of their measurements at call time
# (``corollary_31.corollary_spectrum``, ``objective_31.objective``): one name each for the sweep and its measurements,
# which the bug catalogue replaces.
from stagewise.linear_riccati import corollary_31, objective_31
from stagewise.linear_riccati.corollary_31 import cor_error_ratio, cor_vs_drift
from stagewise.linear_riccati.data import Problem
from stagewise.linear_riccati.gd_limit import Sweep, SweepRun, drift_ratio
from stagewise.linear_riccati.gradient_descent import gd
from stagewise.linear_riccati.implicit_bias import variational_value
from stagewise.linear_riccati.initialization import reduced_init
from stagewise.linear_riccati.objective_31 import gap_ratio, gap_vs_drift
from stagewise.numerics.roundoff import roundoff


def gamma_sweep(problems: list[Problem], gammas, eta: float, horizon: float, first_order=None, keep=None) -> Sweep:
    """Theorem 3.1 and Corollary 3.1 for every (data set, gamma), batched: reduced GD from I_gamma to time
    ``horizon`` at step eta and eta/2, compared with beta_* = X^+ Y, Corollary 3.1 and V*(gamma). The eta -> eta/2
    ratios are medians over the batch elements where ``first_order`` (a boolean per element, data set major, as
    :attr:`.training_horizon.Horizon.sharpness_each`) is true: GD's error has its expansion in eta only where eta
    lambda_max(gamma) is small; all elements when None, NaN when none. ``keep`` (a boolean per element, same order)
    runs only those elements: the pairs where GD at step eta is stable (eta lambda_max(gamma) < 2); all when
    None."""
    gammas = np.asarray(gammas, float)
    n_gamma = len(gammas)
    d, k = problems[0].XtY.shape
    device = problems[0].X.device
    keep = np.ones(n_gamma * len(problems), bool) if keep is None else np.asarray(keep, bool)
    index = torch.as_tensor(np.flatnonzero(keep))
    G = np.tile(gammas, len(problems))[keep]
    data_set = np.repeat(np.arange(len(problems)), n_gamma)[keep]

    def batched(tensors):
        return torch.stack(tensors).repeat_interleave(n_gamma, 0)[index.to(tensors[0].device)]
    XtX_b, XtY_b = batched([p.XtX for p in problems]), batched([p.XtY for p in problems])
    X_b, Y_b = batched([p.X for p in problems]), batched([p.Y for p in problems])
    bstar_b = batched([p.beta_star for p in problems])
    sst_b = torch.linalg.svdvals(bstar_b).cpu().numpy()
    cor_b = np.stack([corollary_31.corollary_spectrum(sst_b[i], G[i], d) for i in range(len(G))])
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
        obj_gap = (objective_31.objective(res["W1"], res["W2"], G) - V_b) / np.abs(V_b)
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
    sel = np.ones(len(G), bool) if first_order is None else np.asarray(first_order, bool)[keep]
    out = Sweep(gammas, s1, s2, float("nan"), float("nan"), float("nan"), G, sst_b, X_b.cpu().numpy(),
                Y_b.cpu().numpy(), bstar_b.cpu().numpy(), batched([p.beta_gt for p in problems]).cpu().numpy(), sel, d)
    out.data_set = data_set
    out.cor_ratio, out.gap_ratio, out.drift_ratio = cor_error_ratio(out), gap_ratio(out), drift_ratio(out)
    return out


def short_horizon_ratio(problems: list[Problem], gammas, eta: float, horizon: float, first_order, quantity: str,
                        fraction: float = 1.0 / 16, keep=None) -> float:
    """Control of the eta -> eta/2 ratios: the same sweep stopped at ``fraction`` of the horizon, before most runs
    have converged, where what is measured is unfinished training (about the same at eta and eta/2: a ratio near
    1). ``quantity`` "cor" (:func:`cor_error_ratio`) or "gap" (:func:`gap_ratio`)."""
    short = gamma_sweep(problems, gammas, eta, horizon * fraction, first_order=first_order, keep=keep)
    return short.cor_ratio if quantity == "cor" else short.gap_ratio
