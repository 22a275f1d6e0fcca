"""The figures of the relu-orthogonal chapter (replicas of the paper's Figures 1, 3, 4, 5 and 6).

Each function takes the experiment's result dataclass and returns a Matplotlib figure; the
chapter exports it with ``run.figure``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from stagewise.numerics.fits import inverse_log_fit
from stagewise.relu_orthogonal.coverage import CoverageStudy
from stagewise.relu_orthogonal.implicit_bias import NormGD, NormScaling, WidthStudy
from stagewise.relu_orthogonal.staircase import Figure1Run
from stagewise.relu_orthogonal.sweep import Sweep, SweepErrors


def _colors() -> list:
    return plt.rcParams["axes.prop_cycle"].by_key()["color"]


def staircase(fr: Figure1Run) -> plt.Figure:
    """Figure 1: loss staircase against Algorithm 1's plateaus and jump epochs; points fitted per neuron."""
    pred, res, ep = fr.pred, fr.res, fr.res.rec_steps
    lp, L, eta = pred.lp, pred.log_inv_lam, pred.eta
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(7.5, 6), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    ax.semilogy(ep, res.loss[0], lw=1.5, label="gradient descent")
    ax.semilogy(ep, np.maximum(lp.loss(ep * eta / L), 1e-30), "k--", lw=1, label="Algorithm 1 plateaus $L^{(k)}$")
    for tk in lp.times:
        ax.axvline(tk * L / eta, color="0.6", ls=":", lw=1)
        bx.axvline(tk * L / eta, color="0.6", ls=":", lw=1)
    ax.set_ylim(max(res.loss[0].min(), 1e-12), 2 * res.loss[0].max()); ax.set_ylabel("training loss")
    ax.legend(loc="lower left")
    for j in range(pred.m):
        pts = fr.gd_sets[j]
        if pts.size:
            bx.plot(ep, (res.point_fit[0][pts][None, :] <= ep[:, None]).sum(1), label=f"neuron {j}")
    bx.set_xlabel("epoch"); bx.set_ylabel("fitted points"); bx.legend(ncol=3, fontsize=8)
    ax.set_xlim(0.8 * fr.t1_step, ep[-1])
    return fig


def lognorms(fr: Figure1Run) -> plt.Figure:
    """Figure 3: log ||w_j|| against the broken lines -tau_j(t) log(1/lambda) of Algorithm 1."""
    pred, res, ep = fr.pred, fr.res, fr.res.rec_steps
    lp, L = pred.lp, pred.log_inv_lam
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    tau_pred = lp.exponents(ep * pred.eta / L)
    colors = _colors()
    final_log = {j: 0.5 * np.log(np.linalg.norm(pred.y[S])) for j, S in zip(lp.neurons, lp.fitted_sets)}
    for j in range(pred.m):
        col = colors[j % len(colors)]
        ax.plot(ep, res.log_norm[0, :, j], color=col, lw=1.5, label=f"neuron {j}")
        line = -tau_pred[:, j] * L
        if j in final_log:
            line = np.where(tau_pred[:, j] <= 0, final_log[j], line)
        ax.plot(ep, line, color="k", ls="--", lw=0.8, zorder=3)
    ax.set_xlabel("epoch"); ax.set_ylabel(r"$\log\|w_j\|$"); ax.legend(ncol=3, fontsize=8)
    return fig


def snapshots(fr: Figure1Run, rng: np.random.Generator) -> plt.Figure:
    """Figure 4: neurons (dots) and predicted directions (crosses) projected on a random plane, six epochs."""
    pred, res = fr.pred, fr.res
    lp, L = pred.lp, pred.log_inv_lam
    P = np.linalg.qr(rng.standard_normal((pred.n, 2)))[0]
    colors = _colors()
    fig, axes = plt.subplots(2, 3, figsize=(9, 6), subplot_kw={"projection": "polar"})
    stage_of = lp.stage(fr.snaps * pred.eta / L)
    for ax, k_snap, st, label in zip(axes.flat, range(len(fr.snaps)), stage_of, "abcdef"):
        d = res.snaps_dir[0, k_snap] @ P
        rad = res.snaps_log[0, k_snap] + L
        for j in range(pred.m):
            col = colors[j % len(colors)]
            ax.plot([np.arctan2(d[j, 1], d[j, 0])], [rad[j]], "o", color=col)
            pdir = lp.directions[min(st, len(lp.directions) - 1)][j] @ P
            if np.any(pdir):
                ax.plot([np.arctan2(pdir[1], pdir[0])], [rad[j]], "x", color=col, ms=9)
        ax.set_title(f"({label}) epoch {fr.snaps[k_snap]:,}", fontsize=9); ax.set_yticklabels([]); ax.set_xticklabels([])
        ax.set_ylim(0, L + 1)
    return fig


def sweep(sw: Sweep, err: SweepErrors) -> plt.Figure:
    """Theorem 2 on the first draw: jump times against 1/log(1/lambda) with the extrapolation; loss curves."""
    Ls, lp, lp_gf, colors = sw.Ls, sw.lps[0], sw.lps_gf[0], _colors()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    x = 1 / Ls
    for k in range(lp.K):
        ax.plot(x, err.that[0, :, k], "o-", color=colors[k % len(colors)], ms=4)
        t0, C = inverse_log_fit(Ls[-3:], err.that[0, -3:, k], 1)
        xx = np.linspace(0, x[-3], 20)
        ax.plot(xx, t0 + C * xx, ":", color=colors[k % len(colors)])
        ax.plot([0], [lp.times[k]], "*", color="k", ms=9)
        ax.plot([0], [lp_gf.times[k]], "d", mfc="none", color="0.4", ms=7)
    ax.set_xlabel(r"$1/\log(1/\lambda)$"); ax.set_ylabel(r"accelerated jump time $\hat t_k$")
    ax.set_xlim(left=-0.002)
    for a, L in enumerate(Ls):
        bx.semilogy(sw.res.rec_steps * sw.eta / L, sw.res.loss[sw.run_index(0, a)], lw=1.2,
                    label=fr"$\log(1/\lambda)={L:g}$")
    tgrid = np.linspace(0, lp.times[-1] * 1.15, 2000)
    bx.semilogy(tgrid, np.maximum(lp.loss(tgrid), 1e-12), "k--", lw=1, label="Algorithm 1")
    bx.set_xlim(0, lp.times[-1] * 1.15); bx.set_ylim(1e-6, 1)
    bx.set_xlabel("accelerated time $t$"); bx.set_ylabel("training loss"); bx.legend(fontsize=8)
    return fig


def coverage(study: CoverageStudy) -> plt.Figure:
    """Proposition 2: Monte Carlo (dots), exact formula (solid), union bound (dotted), m = 2 log2 n (dashed)."""
    colors = _colors()
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for q, n_ in enumerate(study.ns):
        col = colors[q]
        ax.plot(study.ms, study.mc[n_], "o", color=col, ms=4, label=f"n={n_}: Monte Carlo")
        ax.plot(study.ms, study.exact[n_], "-", color=col, lw=1.2)
        ax.plot(study.ms, np.clip(study.union[n_], 0, 1), ":", color=col, lw=1.2)
        ax.axvline(2 * np.log2(n_), color=col, ls="--", lw=0.7)
    ax.set_ylim(-0.02, 1.02); ax.set_xlabel("width m"); ax.set_ylabel("P(every point covered)")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def norm_vs_n(scaling: NormScaling, gd: NormGD) -> plt.Figure:
    """Figure 5: squared norms against n (Algorithm 1, minimal norm, GD); inset: mean ratio to the optimum."""
    ns, rows = scaling.ns, gd.rows
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.loglog(ns, scaling.alg_norm, "o-", label=r"Algorithm 1 ($\lambda\to0$), mean")
    ax.loglog(ns, scaling.opt_norm, "s-", label=r"minimal norm $2(\|y_+\|+\|y_-\|)$")
    ok = gd.interpolating
    ax.plot(rows[ok, 0], rows[ok, 1], "k^", ms=5, label=r"gradient descent, $\lambda=e^{-30}/\sqrt{m}$")
    if (~ok).any():
        ax.plot(rows[~ok, 0], rows[~ok, 1], "^", mfc="none", mec="r", ms=6, label="gradient descent, not interpolating")
    ax.loglog(ns, scaling.alg_norm[0] * (ns / ns[0]) ** 0.5, "k:", lw=1, label="slope 1/2")
    ax.set_xlabel("n"); ax.set_ylabel(r"$\|\theta\|^2$"); ax.legend(fontsize=8)
    ins = ax.inset_axes([0.62, 0.1, 0.33, 0.3])
    ins.semilogx(ns, scaling.ratio, "o-", ms=3); ins.axhline(1 + np.sqrt(2), ls="--", color="0.5")
    ins.set_title("ratio to optimum", fontsize=8); ins.tick_params(labelsize=7)
    return fig


def norm_vs_width(w: WidthStudy) -> plt.Figure:
    """Figure 6: ratio to the minimal norm against width, small init (Algorithm 1, GD) and He init (GD)."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.semilogx(w.widths, w.ratio, "o-", label="small init, Algorithm 1 (ratio to optimum)")
    ax.semilogx(w.gd_widths, w.gd_ratio, "k^", label="small init, gradient descent")
    ax.semilogx(w.gd_widths, w.he_ratio, "s--", label="He init, gradient descent")
    ax.axhline(1, color="0.5", lw=0.8)
    ax.set_xlabel("width m"); ax.set_ylabel(r"$\|\theta\|^2/\|\theta^*\|^2$"); ax.set_yscale("log"); ax.legend(fontsize=8)
    return fig
