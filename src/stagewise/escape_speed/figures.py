"""The figures of the escape-speed chapter; each function returns a Matplotlib figure for ``run.figure``."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from stagewise.escape_speed.deepening import DepthStudy
from stagewise.escape_speed.digits import DigitsRun, record_at
from stagewise.escape_speed.example1 import RANK_ONE_SPEED, AscentSweep, GDSuccess, RankOneScan
from stagewise.escape_speed.explosion import AlignedFlow
from stagewise.escape_speed.gradient_descent import EscapeTimeLaw
from stagewise.escape_speed.low_rank import layer_diagnostics


def rank_one_figure(scan: RankOneScan) -> plt.Figure:
    """Figure "rank-one" (paper Fig. 5): Proposition "Example 1" (a) against the angle, and the rank-two speed."""
    fig, ax = plt.subplots(figsize=(6, 2.8))
    ax.plot(scan.phi, scan.direct, label="direct: $|G\\,\\sigma(X^\\top w_\\phi)|$")
    ax.plot(scan.phi[::400], scan.eq6[::400], "o", ms=3, label="Eq. (6)")
    ax.axhline(RANK_ONE_SPEED, ls="--", c="gray", lw=1, label="$\\sqrt{2}-1$")
    ax.axhline(0.5, ls=":", c="k", lw=1, label="rank-two construction")
    ax.set_xlabel("first-layer angle $\\phi$"); ax.set_ylabel("rank-one speed"); ax.legend(fontsize=7, loc="lower right")
    return fig


def success_figure(sweep: AscentSweep) -> plt.Figure:
    """Figure "success" (paper Figs 2 and 6): projected-ascent traces and the success fraction per width."""
    fig, axs = plt.subplots(1, 2, figsize=(9, 3.2))
    for w in sweep.widths:
        trace = sweep.runs[w].trace.cpu().numpy()
        ok = (sweep.runs[w].speeds > sweep.threshold).cpu().numpy()
        axs[0].plot(trace[:, ~ok], c="tab:red", lw=0.4, alpha=0.4)
        axs[0].plot(trace[:, ok], c="tab:blue", lw=0.4, alpha=0.4)
    axs[0].axhline(RANK_ONE_SPEED, ls="--", c="gray", lw=1); axs[0].set_ylim(0, 0.55)
    axs[0].set_xlabel("ascent step"); axs[0].set_ylabel("speed $-\\mathcal{L}_0$")
    axs[1].semilogx(sweep.widths, sweep.fractions, "o-", base=2)
    axs[1].set_xlabel("hidden width"); axs[1].set_ylabel("success fraction")
    return fig


def gd_success_figure(sweep: AscentSweep, gd: GDSuccess, rng: np.random.Generator) -> plt.Figure:
    """Figure "gd-success": success fractions of gradient descent next to projected ascent, and every run's speed
    (``rng`` jitters the widths so that the dots do not overlap)."""
    fig, axs = plt.subplots(1, 2, figsize=(9, 3.2))
    axs[0].semilogx(sweep.widths, sweep.fractions, "s--", base=2, label="projected ascent")
    axs[0].semilogx(gd.widths, gd.fractions, "o-", base=2, label="gradient descent")
    axs[0].set_xlabel("hidden width"); axs[0].set_ylabel("success fraction"); axs[0].legend(fontsize=7)
    jitter = 2 ** rng.uniform(-0.15, 0.15, gd.sweep.speeds.shape[1])
    for w, s in zip(gd.widths, gd.sweep.speeds.cpu().numpy()):
        axs[1].plot(w * jitter, s, ".", ms=4, alpha=0.6, c="tab:orange")
    for y, ls in ((RANK_ONE_SPEED, "--"), (RANK_ONE_SPEED + gd.margin, ":"), (0.5, "-")):
        axs[1].axhline(y, c="gray", ls=ls, lw=0.8)
    axs[1].set_xscale("log", base=2); axs[1].set_xlabel("hidden width"); axs[1].set_ylabel("speed at the 1% drop")
    return fig


def depth_figure(study: DepthStudy, depths: list[int], X1: torch.Tensor) -> plt.Figure:
    """Figure "depth": ``s_hat(L)`` per dataset (Proposition 3.2; dashed: forward pass alone) and ``s2/s1`` of every
    layer of the Example 1 optima (inputs ``X1``)."""
    fig, axs = plt.subplots(1, 2, figsize=(9, 3.2))
    for name, r in study.results.items():
        line, = axs[0].plot(r.depths, r.speeds, "o-", label=name)
        axs[0].plot(r.depths, r.forward_speeds, "--", c=line.get_color(), lw=0.8)
    axs[0].set_xlabel("depth $L$"); axs[0].set_ylabel("$\\hat s(L)$"); axs[0].legend(fontsize=7)
    axs[0].set_xticks(depths)
    mat = np.full((len(depths), max(depths)), np.nan)
    for i, W in enumerate(study.results["Example 1"].optima):
        mat[i, :len(W)] = layer_diagnostics(W, X1)["ratio_W"]
    im = axs[1].imshow(mat, aspect="auto", cmap="viridis", vmin=0, vmax=1, origin="lower",
                       extent=[0.5, max(depths) + 0.5, depths[0] - 0.5, depths[-1] + 0.5])
    axs[1].set_xticks(range(1, max(depths) + 1)); axs[1].set_yticks(depths); axs[1].grid(False)
    axs[1].set_xlabel("layer $\\ell$"); axs[1].set_ylabel("depth $L$")
    fig.colorbar(im, ax=axs[1], label="$s_2/s_1(W_\\ell)$")
    return fig


def explosion_figure(flow: AlignedFlow) -> plt.Figure:
    """Figure "explosion" (Proposition 2.2): per-layer scale on ``L0``, on the MSE loss, and the corrected ODE."""
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for c in flow.curves:
        for u, localized in ((c.u_localized, True), (c.u_full, False)):
            ax.semilogy(c.times * (c.L - 1), u, "-" if localized else "--",
                        label=f"L={c.L}, " + ("$\\mathcal{L}_0$" if localized else "MSE"))
        ax.semilogy(c.times * (c.L - 1), c.u_ode, "k:", lw=0.8)
    ax.set_xlabel("time $\\times (L-1)$"); ax.set_ylabel("per-layer scale $u$"); ax.legend(fontsize=7, ncol=2)
    return fig


def escape_time_figure(law: EscapeTimeLaw) -> plt.Figure:
    """Figure "escape-time": median escape time against ``alpha`` (Proposition 2.2's scaling; dotted: slope ``-(L-2)``)."""
    fig, axs = plt.subplots(1, 2, figsize=(9, 3.2))
    axs[0].semilogx(law.alphas[2], law.median_times[2], "o-")
    axs[0].set_xlabel("$\\alpha$"); axs[0].set_ylabel("escape time ($L=2$)")
    for L in (3, 4):
        al, Ts = law.alphas[L], law.median_times[L]
        axs[1].loglog(al, Ts, "o-", label=f"L={L}, slope {law.slopes[L]:.2f}")
        axs[1].loglog(al, Ts[-1] * (al / al[-1]) ** (2 - L), "k:", lw=0.8)
    axs[1].set_xlabel("$\\alpha$"); axs[1].set_ylabel("escape time"); axs[1].legend(fontsize=7)
    return fig


def digits_figure(runs: dict[int, DigitsRun], escape_its: dict[int, list[int | None]]) -> plt.Figure:
    """Figure "digits" (paper Figs 1, 3, 4): loss, ``s2/s1`` per layer, and the top-10 spectra of every layer after
    the first escape and at the end, one row per depth."""
    fig, axs = plt.subplots(2, 4, figsize=(13, 6), layout="constrained")
    for row, (L, rr) in enumerate(runs.items()):
        axs[row, 0].plot(rr.loss, lw=0.8); axs[row, 0].set_title(f"depth {L}: loss", fontsize=9)
        axs[row, 0].set_xlabel("iteration")
        ratio = rr.spectra[:, :, 1] / rr.spectra[:, :, 0]
        for l in range(L):
            axs[row, 1].semilogy(rr.steps, ratio[:, l], lw=0.8, label=f"$W_{l + 1}$")
        axs[row, 1].set_title(f"depth {L}: $s_2/s_1$ per layer", fontsize=9); axs[row, 1].set_xlabel("iteration")
        axs[row, 1].legend(fontsize=6, ncol=2)
        for e in escape_its[L]:
            if e is not None:
                for ax in axs[row, :2]:
                    ax.axvline(e, c="gray", ls="--", lw=0.8)
        marks = [(escape_its[L][0], "after first escape"), (len(rr.loss) - 1, "end")]
        for col, (it, lab) in enumerate(marks, start=2):
            if it is None:
                axs[row, col].set_title("no escape", fontsize=9)
                continue
            j = record_at(rr, it)
            for l in range(L):
                axs[row, col].plot(np.arange(1, 11), rr.spectra[j][l] / rr.spectra[j][l, 0], "o-", ms=2)
            axs[row, col].set_title(f"depth {L}: {lab} (it. {rr.steps[j]})", fontsize=9)
            axs[row, col].set_xlabel("index $k$"); axs[row, col].set_ylabel("$s_k/s_1$")
    return fig
