"""The chapter's figures, one function each (they take the experiments' results and return a Figure)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from stagewise.linear_riccati.hidden_spectrum import GaussianRuns
from stagewise.linear_riccati.implicit_bias import corollary_spectrum, hidden_singular_values
from stagewise.linear_riccati.jump_process import jump_process, jump_time
from stagewise.linear_riccati.mirror_experiments import MirrorRun
from stagewise.linear_riccati.noise_experiments import LabelNoiseRun, PureNoiseSDE
from stagewise.linear_riccati.relu_teacher import TeacherStudentRun
from stagewise.linear_riccati.riccati import sigma_beta
from stagewise.linear_riccati.sweep import Sweep
from stagewise.linear_riccati.whitened_experiments import JumpRates, Whitened
from stagewise.numerics.spectra import stable_rank_np


def fig1a(full: dict, gauss: GaussianRuns, sigma_star: np.ndarray, d: int) -> plt.Figure:
    """The paper's Fig. 1a: top-4 sigma(W1) for orthogonal I_gamma (gamma = 1, 1e-4; ``full`` records) and the first
    two Gaussian runs, with Corollary 3.1 (at gamma_eff for the Gaussian runs) dashed."""
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.2), sharey=True)
    g_eff = gauss.gamma_eff
    panels = [(full, 0, r"orthogonal, $\gamma=1$", 1.0), (full, 1, r"orthogonal, $\gamma=10^{-4}$", 1e-4),
              (gauss.records, 0, r"Gaussian std $0.01$ ($\gamma_{\rm eff}=%.2g$)" % g_eff[0], g_eff[0]),
              (gauss.records, 1, r"Gaussian var $0.01$ ($\gamma_{\rm eff}=%.2g$)" % g_eff[1], g_eff[1])]
    for ax, (res, j, title, g) in zip(axes, panels):
        ax.semilogy(res["t"], res["sv_W1"][:, j, :4])
        for v in corollary_spectrum(sigma_star, g, d)[:4]:
            ax.axhline(v, ls="--", lw=0.8, color="k")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("t")
    axes[0].set_ylabel(r"top-4 $\sigma_i(W_1)$")
    return fig


def fig4(gauss: GaussianRuns, sigma_star: np.ndarray, d: int) -> plt.Figure:
    """The paper's Fig. 4: all sigma(W1) when W2 also starts Gaussian (runs 2 and 3), Corollary 3.1 dashed."""
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), sharey=True)
    res = gauss.records
    for ax, j in zip(axes, [2, 3]):
        ax.semilogy(res["t"], res["sv_W1"][:, j, :])
        for v in corollary_spectrum(sigma_star, gauss.gamma_eff[j], d):
            ax.axhline(v, ls="--", lw=0.6, color="k")
        ax.set_title(r"$W_2$ variance $%g$, $W_1$ variance $10^{-3}$" % gauss.var_w2[j], fontsize=9)
        ax.set_xlabel("t")
    axes[0].set_ylabel(r"$\sigma_i(W_1)$")
    return fig


def spectrum(sweep: Sweep, sigma_star: np.ndarray, d: int, eta: float) -> plt.Figure:
    """Corollary 3.1 against the GD limit over gamma (first data set), the stable rank, and the objective gap."""
    k, gammas = len(sigma_star), sweep.gammas
    n_gamma = len(gammas)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    gg = np.logspace(np.log10(gammas.min()) - 0.5, np.log10(gammas.max()) + 0.5, 200)
    theory = corollary_spectrum(sigma_star, gg, d)
    final = sweep.coarse.sv_W1[:n_gamma]
    ax = axes[0]
    ax.loglog(gg, theory[:, :k], color="C0", lw=1)
    if k < d:
        ax.loglog(gg, theory[:, k], color="C1", lw=1, label=r"$\sqrt{2\gamma}$ ($d-k$ fold)")
    ax.loglog(gammas, final[:, :k], "o", color="C0", ms=4)
    if k < d:
        ax.loglog(gammas, final[:, k:], "x", color="C1", ms=4)
    ax.set_xlabel(r"$\gamma$"); ax.set_ylabel(r"$\sigma_i(W_1^\infty)$"); ax.legend(fontsize=8)
    ax.set_title("Corollary 3.1 (lines) vs GD (markers)", fontsize=9)
    ax = axes[1]
    ax.loglog(gg, stable_rank_np(theory), color="k", lw=1, label="formula")
    ax.loglog(gammas, stable_rank_np(final), "o", ms=4, label="GD")
    ax.axhline(k, ls=":", color="gray"); ax.axhline(d, ls=":", color="gray")
    ax.set_xlabel(r"$\gamma$"); ax.set_ylabel(r"stable rank of $W_1^\infty$"); ax.legend(fontsize=8)
    ax = axes[2]
    ax.loglog(gammas, np.abs(sweep.coarse.obj_gap[:n_gamma]), "o-", ms=4, label=rf"$\eta={eta:g}$")
    ax.loglog(gammas, np.abs(sweep.fine.obj_gap[:n_gamma]), "s-", ms=4, label=rf"$\eta={eta / 2:g}$")
    ax.set_xlabel(r"$\gamma$"); ax.set_ylabel(r"(objective at GD limit $- V^*$)$/V^*$"); ax.legend(fontsize=8)
    return fig


def mirror(m: MirrorRun) -> plt.Figure:
    """sigma(beta) from the beta-ODE against GD at the smallest step, and the GD -> ODE gap against eta."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    axes[0].plot(m.times, m.sv_ode, color="k", lw=1)
    axes[0].plot(m.gd_finest["t"], m.gd_finest["sv_beta"][:, 0], "o", ms=2, color="C3")
    axes[0].set_xlabel("t"); axes[0].set_ylabel(r"$\sigma_i(\beta)$")
    axes[0].set_title(r"$\beta$-ODE (lines) vs GD $\eta=%g$ (dots)" % m.etas[-1], fontsize=9)
    axes[1].loglog(m.etas, m.errs, "o-")
    axes[1].set_xlabel(r"$\eta$"); axes[1].set_ylabel(r"$\max_t\|\beta_{GD}-\beta_{ODE}\|_\infty$")
    return fig


def whitened(w: Whitened) -> plt.Figure:
    """Top: closed form (lines) vs GD at the largest step (dots) per gamma, exact half-times dotted. Bottom: the gap
    against eta per gamma, and sigma(W1) for the smallest gamma against Lemma C.10 of the closed form."""
    gw, k = w.gammas, len(w.sigma_star)
    ng = len(gw)
    # One grid for both rows, laid out by constrained layout: the former tight layout of subplots from two
    # different grids warned into the notebook (with a path of the machine) that it could not lay them out.
    fig = plt.figure(figsize=(max(9.0, 2.8 * ng), 6.4), layout="constrained")
    grid = fig.add_gridspec(2, 2 * ng)
    top = [fig.add_subplot(grid[0, 2 * j:2 * j + 2]) for j in range(ng)]
    bottom = [fig.add_subplot(grid[1, :ng]), fig.add_subplot(grid[1, ng:])]
    r = w.runs[0]
    sub = slice(None, None, max(1, len(r.t) // 60))
    for j, ax in enumerate(top):
        ax.plot(r.t, r.cf[:, j, :], color="k", lw=1)
        ax.plot(r.t[sub], r.modes[sub, j, :], "o", ms=2.5, color="C3")
        for i in range(k):
            ax.axvline(w.t_exact[j, i], ls=":", lw=0.7, color="gray")
        ax.set_title(rf"$\gamma={gw[j]:g}$", fontsize=9); ax.set_xlabel("t")
    top[0].set_ylabel(r"$\sigma_{\beta,i}(t)$")
    etas = [run.eta for run in w.runs]
    for j in range(ng):
        bottom[0].loglog(etas, w.err[:, j], "o-", label=rf"$\gamma={gw[j]:g}$")
    bottom[0].set_xlabel(r"$\eta$"); bottom[0].set_ylabel(r"$\max_{t,i}|\sigma_{GD}-\sigma_{\rm closed}|$")
    bottom[0].legend(fontsize=8)
    jj = int(np.argmin(gw))
    bottom[1].semilogy(r.t_rec, r.sv_W1[:, jj, :], color="C0", lw=1)
    bottom[1].semilogy(r.t, hidden_singular_values(r.cf[:, jj, :], gw[jj]), "k--", lw=0.8)
    bottom[1].set_xlabel("t"); bottom[1].set_ylabel(r"$\sigma_i(W_1)$")
    bottom[1].set_title(rf"hidden layer, $\gamma={gw[jj]:g}$", fontsize=9)
    return fig


def jump(j: JumpRates, w: Whitened) -> plt.Figure:
    """Left: closed form in rescaled time for gamma = 10^-p, the jump process (dashed), GD (gamma < 0.1) dots.
    Right: rescaled half-times against 1/ln(1/gamma) with the first-order prediction."""
    sig = w.sigma_star
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    tau = np.linspace(0, 1.2 * jump_time(sig.min()), 600)
    for p, g in zip(j.powers, j.gammas):
        axes[0].plot(tau, sigma_beta(sig[None, :], g, np.log(1 / g) * tau[:, None]), lw=1,
                     color=plt.cm.viridis(np.log(p) / np.log(max(j.powers) + 1)))
    axes[0].plot(tau, jump_process(sig[None, :], tau[:, None]), "k--", lw=0.8)
    r = w.runs[0]
    for i, g in enumerate(w.gammas):
        if g < 0.1:
            keep = r.t / np.log(1 / g) <= tau[-1]
            sub = np.flatnonzero(keep)[::max(1, keep.sum() // 40)]
            axes[0].plot(r.t[sub] / np.log(1 / g), r.modes[sub, i, :], "o", ms=2, color="C3")
    axes[0].set_xlabel(r"rescaled time $\tau=t/\ln(1/\gamma)$"); axes[0].set_ylabel(r"$\sigma_{\beta,i}$")
    xs = np.linspace(0, 1 / j.log_inv_gamma.min(), 50)
    for i in range(len(sig)):
        axes[1].plot(1 / j.log_inv_gamma, j.rescaled[:, i], "o", ms=4, label=rf"$\sigma_*={sig[i]:.3g}$")
        axes[1].plot(xs, jump_time(sig[i]) + np.log(2 * sig[i]) / (2 * sig[i]) * xs, "k--", lw=0.7)
    axes[1].set_xlabel(r"$1/\ln(1/\gamma)$"); axes[1].set_ylabel(r"$t_{1/2,i}/\ln(1/\gamma)$")
    axes[1].legend(fontsize=8)
    return fig


def noise(lngd: LabelNoiseRun, sde: PureNoiseSDE) -> plt.Figure:
    """Fig. 1b (GD and label-noise GD at the largest delta, heuristic decay dashed) and Fig. 3 (SDE paths)."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.3))
    last = len(lngd.deltas) - 1
    for ax, jj in zip(axes[:2], [0, last]):
        (ax.plot if jj == 0 else ax.semilogy)(lngd.steps_axis, lngd.sv[:, jj, :])
        ax.set_title((r"GD" if jj == 0 else rf"label-noise GD, $\delta={lngd.deltas[jj]:g}$")
                     + rf", $\gamma={lngd.gamma:g}$", fontsize=9)
        ax.set_xlabel("step"); ax.set_ylabel(r"$\sigma_i(W_1)$")
    axes[1].semilogy(lngd.steps_axis, np.exp(-(lngd.eta * lngd.deltas[last]) ** 2 / 2 * lngd.steps_axis), "k--",
                     lw=0.8, label=r"$e^{-\eta^2\delta^2 m/2}$")
    axes[1].legend(fontsize=8)
    for p in range(min(3, sde.ratio.shape[1])):
        axes[2].semilogy(sde.t, sde.ratio[:, p], lw=0.8, color="C0")
        axes[2].semilogy(sde.t, sde.comm[:, p], lw=0.8, color="C1")
    axes[2].semilogy(sde.t, sde.med_ratio, "C0", lw=2, label=r"median $\sigma_2/\sigma_1$")
    axes[2].semilogy(sde.t, sde.med_comm, "C1", lw=2, label=r"median $\|[w_1,a]\|/(\|w_1\|\|a\|)$")
    axes[2].set_xlabel("t"); axes[2].legend(fontsize=7); axes[2].set_title("pure-noise SDE (4.1), d = 2", fontsize=9)
    return fig


def relu(result: TeacherStudentRun) -> plt.Figure:
    """Figs. 2 and 5: student hidden-weight singular values (first data set) at small and large scale; losses."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.3))
    for ax, j, title in ((axes[0], 0, r"small init ($10^{-4}$)"), (axes[1], 1, "large init (1)")):
        ax.semilogy(result.t, result.sv[:, 0, j, :])
        ax.set_title(title, fontsize=9); ax.set_xlabel("t"); ax.set_ylabel(r"$\sigma_i$(hidden weights)")
    axes[2].loglog(result.t[1:], result.loss[1:, :, 0])
    axes[2].set_xlabel("t"); axes[2].set_ylabel("training loss (small init)")
    return fig
