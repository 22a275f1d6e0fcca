"""The chapter's figures and its table of stages (display only: every number comes from the studies)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from stagewise.diagonal_incremental.algorithm import Stage
from stagewise.diagonal_incremental.assumptions import PerturbationStudy
from stagewise.diagonal_incremental.correlated import CorrelatedStudy
from stagewise.diagonal_incremental.descent import ConservationStudy, DescentRun
from stagewise.diagonal_incremental.full_head import FullHeadRun
from stagewise.diagonal_incremental.staircase import FlowStudy, LogScaleStudy, PlateauStudy, TransitionStudy
from stagewise.numerics.tables import markdown_table

RESCALED = "rescaled time t / log(1/α)"


def stage_table(stages: list[Stage], d: int):
    """Algorithm 1's stages: time, new coordinate (KQ or VO and its index), sign, plateau loss, race
    margin (Assumption 4.3), restricted-Hessian eigenvalue (Assumption 4.4), stationarity."""
    def kind(i):
        return f"KQ {i}" if i < d else f"VO {i - d}"
    rows = [[s.k, f"{s.T:.4f}", kind(s.coordinate), "+" if s.sign > 0 else "−", f"{s.loss:.5f}", f"{s.margin:.3f}",
             f"{s.hessian_min:.3f}", f"{s.stationarity:.1e}"] for s in stages[1:]]
    return markdown_table(["stage $k$", "$T_k$", "new coordinate", "sign", "$\\mathcal L(\\theta^k)$", "margin",
                           "$\\lambda_{\\min}(H_{S_k})$", "$\\max_{S_k}\\lvert g\\rvert$"], rows)


def loss_figure(fs: FlowStudy, gd: DescentRun, alphas_gd) -> plt.Figure:
    """Loss against rescaled time: GD (dotted), exact flow (solid), Algorithm 1's staircase (dashed)."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    cmap = plt.get_cmap("viridis")
    all_alphas = sorted(set(alphas_gd) | set(fs.alphas), reverse=True)
    color = {a: cmap(i / max(1, len(all_alphas) - 1)) for i, a in enumerate(all_alphas)}
    for j, a in enumerate(alphas_gd):
        keep = gd.tau[j] <= fs.tau_end
        ax.plot(gd.tau[j][keep], gd.loss[j][keep], color=color[a], ls=":", label=f"GD, α={a:.0e}")
    for j, a in enumerate(fs.alphas):
        ax.plot(fs.tau, fs.flow["loss"][:, j], color=color[a], label=f"GF, α={a:.0e}")
    ax.step(np.concatenate([[0], fs.T, [fs.tau_end]]), np.concatenate([fs.levels, [fs.levels[-1]]]), where="post",
            color="k", ls="--", lw=1, label="Algorithm 1")
    ax.set(xlabel=RESCALED, ylabel="loss", xlim=(0, fs.tau_end))
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_ylim(0, 1.5 * fs.levels[0])
    ax.axhspan(0, 1e-3, color="0.9", zorder=0)          # symlog: the axis is linear below 1e-3
    ax.text(0.01, 5e-4, "linear scale below 1e-3", transform=ax.get_yaxis_transform(), fontsize=7,
            va="center", color="0.4")
    ax.legend(fontsize=7, ncol=2)
    return fig


def entries_figure(fs: FlowStudy, d: int) -> plt.Figure:
    """Diagonal entries of ``W_K W_Q^T`` and ``W_V W_O^T`` along the flow at the smallest alpha."""
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), sharey=True)
    panels = ((axes[0], slice(0, d), "diag(w_K) diag(w_Q)"), (axes[1], slice(d, 2 * d), "diag(w_V) diag(w_O)"))
    for ax, sl, name in panels:
        ax.plot(fs.tau, fs.beta_min[:, sl], lw=1.2)
        for t_k in fs.T:
            ax.axvline(t_k, color="k", ls="--", lw=0.6)
        ax.set(title=name, xlabel=RESCALED)
    axes[0].set_ylabel(f"entries, α={fs.alphas[fs.j_min]:.0e}")
    return fig


def times_figure(ts: TransitionStudy) -> plt.Figure:
    """Measured transition times against ``1/log(1/alpha)``, the quadratic fits and Algorithm 1's ``T_k``."""
    fig, ax = plt.subplots(figsize=(6, 3.4))
    xs = np.linspace(0, ts.x.max() * 1.05, 50)
    for k in range(len(ts.T)):
        ax.plot(ts.x, ts.times[:, k], "o", color=f"C{k}")
        ax.plot(xs, np.vander(xs, ts.fits.shape[1], increasing=True) @ ts.fits[k], color=f"C{k}", lw=0.8)
        ax.plot([0], [ts.T[k]], "k*", ms=9)
    ax.set(xlabel="1 / log(1/α)", ylabel="transition time τ_k(α)")
    return fig


def rank_figure(fs: FlowStudy, ps: PlateauStudy) -> plt.Figure:
    """The rank staircase along the flow and Algorithm 1's support sizes at the plateau midpoints."""
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.step(fs.tau, ps.ranks_tau[:, 0], where="post", label="rank W_K W_Q^T")
    ax.step(fs.tau, ps.ranks_tau[:, 1], where="post", label="rank W_V W_O^T")
    ax.plot(ps.mids, ps.ranks_alg[:, 0], "o", mfc="none", color="C0", label="Algorithm 1")
    ax.plot(ps.mids, ps.ranks_alg[:, 1], "s", mfc="none", color="C1")
    ax.set(xlabel=RESCALED, ylabel="rank (|entry| > 1e-3)")
    ax.legend(fontsize=8)
    return fig


def logscale_figure(fs: FlowStudy, ls: LogScaleStudy, d: int) -> plt.Figure:
    """``b = log_alpha(u + v)`` along the flow (blue KQ, orange VO) and the bookkeeping through the ``b^k``."""
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    p = ls.b_sim.shape[1]
    for i in range(p):
        ax.plot(fs.tau, ls.b_sim[:, i], lw=0.8, color="C0" if i < d else "C1")
    for i in range(p):
        ax.plot(ls.knots, ls.b_knots[:, i], "k--", lw=0.5)
    ax.set(xlabel=RESCALED, ylabel="b = log_α(u+v)", ylim=(-0.3, 2.3))
    return fig


def conservation_figure(cs: ConservationStudy) -> plt.Figure:
    """Violation of ``u^2 - v^2`` conservation against the step size, with a slope-1 guide."""
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.loglog(cs.etas, cs.drift, "o-", label="max |c_n / c_0 − 1|")
    ax.loglog(cs.etas, cs.drift[0] * np.array(cs.etas) / cs.etas[0], "k--", lw=0.8, label="slope 1")
    ax.set(xlabel="step size η", ylabel="violation of u²−v² conservation")
    ax.legend(fontsize=8)
    return fig


def reenter_figure(cs: CorrelatedStudy) -> plt.Figure:
    """``beta`` along the exact flow at the smallest alpha of the correlated example (log time axis)."""
    fig, ax = plt.subplots(figsize=(6.5, 3))
    for i in range(3):
        ax.plot(cs.tau, cs.flow["beta"][:, cs.j_min, i], label=f"β_{i + 1}")
    for t_k in cs.T:
        ax.axvline(t_k, color="k", ls="--", lw=0.6)
    ax.set(xscale="log", xlabel=RESCALED, ylabel=f"β, α = {cs.alphas[cs.j_min]:.0e}", xlim=(0.5, cs.tau[-1]))
    ax.legend(fontsize=8)
    return fig


def perturb_figure(ps: PerturbationStudy) -> plt.Figure:
    """Distance between perturbed and unperturbed GD; dots end each plateau's window."""
    fig, ax = plt.subplots(figsize=(5.5, 3))
    for q in range(ps.dist.shape[0]):
        ax.semilogy(ps.t, ps.dist[q], color=f"C{q}", label=f"plateau after stage {q + 1}")
        ax.plot(ps.t[ps.i_stop[q]], ps.dist[q, ps.i_stop[q]], "o", color=f"C{q}")
    ax.set(xlabel="training time t after the perturbation", ylabel="max |β_pert − β|")
    ax.legend(fontsize=8)
    return fig


def fullhead_figure(fh: FullHeadRun) -> plt.Figure:
    """Singular values of ``W_K W_Q^T`` (blue) and ``W_V W_O^T`` (orange), and the loss."""
    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    axes[0].plot(fh.tau, fh.s_kq[:, :4], color="C0", lw=1)
    axes[0].plot(fh.tau, fh.s_vo[:, :4], color="C1", lw=1)
    axes[0].set(xlabel="t / log(1/α)", ylabel="singular values (blue KQ, orange VO)")
    axes[1].semilogy(fh.tau, fh.loss)
    axes[1].set(xlabel="t / log(1/α)", ylabel="loss")
    return fig
