"""What the chapter's figures plot, taken out of the experiments' results as plain arrays (the figures' data
sidecars). The drawing itself is in :mod:`stagewise.relu_orthogonal.figures`, which never sees the experiments.

Every computation a figure needs happens here: Algorithm 1's plateaus and broken lines at the recorded epochs,
the extrapolation lines of the sweep, the random projection plane of Figure 4 (drawn from the generator the
chapter passes, so that the sidecar holds the projected points and a restyle draws the same plane)."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagewise.numerics.fits import inverse_log_fit
from stagewise.relu_orthogonal.coverage import CoverageStudy
from stagewise.relu_orthogonal.gd_norms import NormGD
from stagewise.relu_orthogonal.norm_scaling import NormScaling
from stagewise.relu_orthogonal.staircase import Figure1Run
from stagewise.relu_orthogonal.sweep import Sweep, SweepErrors
from stagewise.relu_orthogonal.width_study import WidthStudy


def staircase(fr: Figure1Run) -> dict[str, Any]:
    """Figure 1: GD's loss per recorded epoch, Algorithm 1's plateau loss there and its jump epochs; per neuron
    that fits points, the number of its points fitted by each epoch; the axis limits (crop at 0.8 t_1)."""
    pred, res = fr.pred, fr.res
    ep = np.asarray(res.rec_steps, dtype=float)
    lp, L, eta = pred.lp, pred.log_inv_lam, pred.eta
    loss = np.asarray(res.loss[0], dtype=float)
    neurons = [j for j in range(pred.m) if fr.gd_sets[j].size]
    fitted = np.array([(res.point_fit[0][fr.gd_sets[j]][None, :] <= ep[:, None]).sum(1) for j in neurons],
                      dtype=float).reshape(len(neurons), len(ep))
    return {"epochs": ep, "loss": loss, "plateaus": np.maximum(lp.loss(ep * eta / L), 1e-30),
            "jump_epochs": np.asarray(lp.times, dtype=float) * L / eta,
            "neurons": np.asarray(neurons, dtype=int), "fitted": fitted,
            "ylim": np.array([max(loss.min(), 1e-12), 2 * loss.max()]),
            "xlim": np.array([0.8 * fr.t1_step, ep[-1]])}


def lognorms(fr: Figure1Run) -> dict[str, Any]:
    """Figure 3: log ||w_j|| per recorded epoch and neuron, and Algorithm 1's broken lines -tau_j(t) log(1/lambda)
    (held at (1/2) log ||y_S|| once the neuron has jumped)."""
    pred, res = fr.pred, fr.res
    ep = np.asarray(res.rec_steps, dtype=float)
    lp, L = pred.lp, pred.log_inv_lam
    tau_pred = lp.exponents(ep * pred.eta / L)
    final_log = {j: 0.5 * np.log(np.linalg.norm(pred.y[S])) for j, S in zip(lp.neurons, lp.fitted_sets)}
    lines = -tau_pred * L
    for j, value in final_log.items():
        lines[:, j] = np.where(tau_pred[:, j] <= 0, value, lines[:, j])
    return {"epochs": ep, "log_norm": np.asarray(res.log_norm[0], dtype=float), "predicted": lines}


def snapshots(fr: Figure1Run, rng: np.random.Generator) -> dict[str, Any]:
    """Figure 4: at each snapshot epoch, every neuron's direction projected on a random plane (drawn here from
    ``rng``, once) as an angle, its radius log ||w_j|| + log(1/lambda), and the angle of the direction Algorithm 1
    predicts for the current stage (NaN where it predicts none)."""
    pred, res = fr.pred, fr.res
    lp, L = pred.lp, pred.log_inv_lam
    P = np.linalg.qr(rng.standard_normal((pred.n, 2)))[0]
    stage_of = lp.stage(fr.snaps * pred.eta / L)
    S = len(fr.snaps)
    angle, radius, predicted = np.zeros((S, pred.m)), np.zeros((S, pred.m)), np.full((S, pred.m), np.nan)
    for k, st in enumerate(stage_of):
        d = res.snaps_dir[0, k] @ P
        angle[k] = np.arctan2(d[:, 1], d[:, 0])
        radius[k] = res.snaps_log[0, k] + L
        if lp.directions:
            for j in range(pred.m):
                pdir = lp.directions[min(st, len(lp.directions) - 1)][j] @ P
                if np.any(pdir):
                    predicted[k, j] = np.arctan2(pdir[1], pdir[0])
    return {"epochs": np.asarray(fr.snaps, dtype=int), "angle": angle, "radius": radius,
            "predicted_angle": predicted, "rmax": float(L + 1)}


def sweep(sw: Sweep, err: SweepErrors) -> dict[str, Any]:
    """Theorem 2 on the first draw. Left: measured accelerated jump times against 1/log(1/lambda), the linear
    extrapolation through the three smallest lambda, Algorithm 1's times (step-size-corrected and gradient flow).
    Right: loss against accelerated time per lambda, and the limit staircase."""
    Ls, lp, lp_gf = np.asarray(sw.Ls, dtype=float), sw.lps[0], sw.lps_gf[0]
    x = 1 / Ls
    that = np.asarray(err.that[0, :, :lp.K], dtype=float).T.reshape(lp.K, len(Ls))
    fit_x = np.linspace(0, x[-3], 20) if len(Ls) >= 3 else np.zeros(0)
    fit_y = np.full((lp.K, len(fit_x)), np.nan)
    for k in range(lp.K):
        if len(Ls) >= 3 and np.all(np.isfinite(that[k, -3:])):
            t0, C = inverse_log_fit(Ls[-3:], that[k, -3:], 1)
            fit_y[k] = t0 + C * fit_x
    t_end = float(lp.times[-1] * 1.15) if lp.K else 1.0
    tgrid = np.linspace(0, t_end, 2000)
    return {"x": x, "that": that, "fit_x": fit_x, "fit_y": fit_y,
            "alg1_times": np.asarray(lp.times, dtype=float), "gf_times": np.asarray(lp_gf.times[:lp.K], dtype=float),
            "Ls": Ls, "curve_t": np.stack([sw.res.rec_steps * sw.eta / L for L in Ls]).astype(float),
            "curve_loss": np.stack([sw.res.loss[sw.run_index(0, a)] for a in range(len(Ls))]).astype(float),
            "limit_t": tgrid, "limit_loss": np.maximum(lp.loss(tgrid), 1e-12), "t_end": t_end}


def coverage(study: CoverageStudy) -> dict[str, Any]:
    """Proposition 2 per n: Monte Carlo frequency, exact probability and union bound (clipped to [0, 1]) per width,
    and the width 2 log2 n."""
    ns = list(study.ns)
    return {"ns": np.asarray(ns, dtype=int), "ms": np.asarray(study.ms, dtype=float),
            "mc": np.stack([np.asarray(study.mc[n], dtype=float) for n in ns]),
            "exact": np.stack([np.asarray(study.exact[n], dtype=float) for n in ns]),
            "union": np.stack([np.clip(np.asarray(study.union[n], dtype=float), 0, 1) for n in ns]),
            "threshold": 2 * np.log2(np.asarray(ns, dtype=float))}


def norm_vs_n(scaling: NormScaling, gd: NormGD) -> dict[str, Any]:
    """Figure 5: mean squared norms against n (Algorithm 1, minimal norm), GD's (n, norm) per run split into
    interpolating and not, a slope-1/2 line through Algorithm 1's first point, and the mean ratio to the optimum."""
    ns = np.asarray(scaling.ns, dtype=float)
    rows, ok = np.asarray(gd.rows, dtype=float), np.asarray(gd.interpolating, dtype=bool)
    alg = np.asarray(scaling.alg_norm, dtype=float)
    return {"ns": ns, "alg_norm": alg, "opt_norm": np.asarray(scaling.opt_norm, dtype=float),
            "gd_n": rows[ok, 0], "gd_norm": rows[ok, 1], "gd_failed_n": rows[~ok, 0], "gd_failed_norm": rows[~ok, 1],
            "slope_half": alg[0] * (ns / ns[0]) ** 0.5, "ratio": np.asarray(scaling.ratio, dtype=float),
            "ratio_limit": float(1 + np.sqrt(2))}


def norm_vs_width(w: WidthStudy, smaller=None) -> dict[str, Any]:
    """Figure 6: ratio to the minimal norm against width. Small init: Algorithm 1 (all draws, and the GD draws),
    GD at the study's lambda and (``smaller``, a ``width_study.SmallInitGD``) at a smaller one; He init (GD)."""
    nan = np.full(len(w.gd_widths), np.nan)
    return {"widths": np.asarray(w.widths, dtype=float), "ratio": np.asarray(w.ratio, dtype=float),
            "gd_widths": np.asarray(w.gd_widths, dtype=float), "gd_ratio": np.asarray(w.gd_ratio, dtype=float),
            "gd_alg1_ratio": np.asarray(w.gd_alg1_ratio if w.gd_alg1_ratio is not None else nan, dtype=float),
            "gd_small_ratio": np.asarray(smaller.ratio if smaller is not None else nan, dtype=float),
            "log_inv_lam": float(w.log_inv_lam),
            "small_log_inv_lam": float(smaller.log_inv_lam if smaller is not None else np.nan),
            "he_ratio": np.asarray(w.he_ratio, dtype=float)}
