"""The figures of the relu-orthogonal chapter (replicas of the paper's Figures 1, 3, 4, 5 and 6): pure render
functions ``render(data, style) -> Figure`` of the data that :mod:`stagewise.relu_orthogonal.figure_data` takes
out of the experiments (no torch, no computation), so that ``stagewise figure`` draws them again in any style
from the run's sidecars."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def _width(style, factor: float = 1.0) -> float:
    """A line width relative to the style's (today's book widths are factors of Matplotlib's 1.5)."""
    return factor * style.rc.get("lines.linewidth", 1.5) / 1.5


def _marker(style, size: float) -> float:
    """A marker size relative to the style's (today's book sizes are relative to Matplotlib's 6)."""
    return size * style.rc.get("lines.markersize", 6.0) / 6.0


def _color(style, i: int) -> str:
    return style.palette[i % len(style.palette)]


def staircase(data: dict, style) -> plt.Figure:
    """Figure 1: loss staircase against Algorithm 1's plateaus and jump epochs (left); points fitted per neuron
    (right), side by side so that the figure stays short on a laptop screen."""
    ep = data["epochs"]
    fig, (ax, bx) = style.subplots(1, 2, size=(10, 3.1), gridspec_kw={"width_ratios": [1.5, 1]})
    ax.semilogy(ep, data["loss"], lw=_width(style, 1.5), label="gradient descent")
    ax.semilogy(ep, data["plateaus"], "--", color=style.ink, lw=_width(style), label="Algorithm 1 plateaus $L^{(k)}$")
    for epoch in data["jump_epochs"]:
        for a in (ax, bx):
            a.axvline(epoch, color=style.muted, ls=":", lw=_width(style))
    ax.set_ylim(*data["ylim"])
    ax.set_ylabel("training loss")
    ax.set_xlabel("epoch")
    ax.legend(loc="lower left")
    handles = [bx.plot(ep, counts, color=_color(style, int(j)), label=f"neuron {j}")[0]
               for j, counts in zip(data["neurons"], data["fitted"])]
    bx.set_xlabel("epoch")
    bx.set_ylabel("fitted points")
    if handles:     # a legend without artists warns in the notebook
        bx.legend(handles=handles, loc="center right", fontsize="small", ncols=2)
    for a in (ax, bx):
        a.set_xlim(*data["xlim"])
    return fig


def lognorms(data: dict, style) -> plt.Figure:
    """Figure 3: log ||w_j|| against the broken lines -tau_j(t) log(1/lambda) of Algorithm 1 (dashed, ink)."""
    ep, log_norm, predicted = data["epochs"], data["log_norm"], data["predicted"]
    fig, ax = style.subplots(size=(10, 2.9))
    for j in range(log_norm.shape[1]):
        ax.plot(ep, log_norm[:, j], color=_color(style, j), lw=_width(style, 1.5), label=f"neuron {j}")
        ax.plot(ep, predicted[:, j], color=style.ink, ls="--", lw=_width(style, 0.8), zorder=3)
    ax.set_xlabel("epoch")
    ax.set_ylabel(r"$\log\|w_j\|$")
    fig.legend(loc="outside right upper", fontsize="small")
    return fig


def snapshots(data: dict, style) -> plt.Figure:
    """Figure 4: neurons (dots) and predicted directions (crosses) on a random plane (drawn in the data), six
    epochs in one row; angle = projected direction, radius = log ||w_j|| + log(1/lambda)."""
    fig, axes = style.subplots(1, 6, size=(12, 2.6), subplot_kw={"projection": "polar"})
    angle, radius, predicted = data["angle"], data["radius"], data["predicted_angle"]
    for ax, k, label in zip(axes.flat, range(len(data["epochs"])), "abcdef"):
        for j in range(angle.shape[1]):
            ax.plot([angle[k, j]], [radius[k, j]], "o", color=_color(style, j))
            if np.isfinite(predicted[k, j]):
                ax.plot([predicted[k, j]], [radius[k, j]], "x", color=_color(style, j), ms=_marker(style, 9))
        ax.set_title(f"({label}) {int(data['epochs'][k]):,}", fontsize="medium")
        ax.set_yticklabels([])
        ax.set_xticklabels([])
        ax.set_ylim(0, data["rmax"])
    return fig


def sweep(data: dict, style) -> plt.Figure:
    """Theorem 2 on the first draw: jump times against 1/log(1/lambda) with the extrapolation; loss curves."""
    fig, (ax, bx) = style.subplots(1, 2, size=(10, 3.1))
    that, x = data["that"], data["x"]
    for k in range(len(that)):
        color = _color(style, k)
        ax.plot(x, that[k], "o-", color=color, ms=_marker(style, 4))
        if len(data["fit_x"]):
            ax.plot(data["fit_x"], data["fit_y"][k], ":", color=color)
        ax.plot([0], [data["alg1_times"][k]], "*", color=style.ink, ms=_marker(style, 9))
        if k < len(data["gf_times"]):
            ax.plot([0], [data["gf_times"][k]], "d", mfc="none", color=style.muted, ms=_marker(style, 7))
    ax.set_xlabel(r"$1/\log(1/\lambda)$")
    ax.set_ylabel(r"accelerated jump time $\hat t_k$")
    ax.set_xlim(left=-0.002)
    for L, t, loss, color in zip(data["Ls"], data["curve_t"], data["curve_loss"], style.sequence(len(data["Ls"]))):
        bx.semilogy(t, loss, lw=_width(style, 1.2), color=color, label=fr"$\log(1/\lambda)={L:g}$")
    bx.semilogy(data["limit_t"], data["limit_loss"], "--", color=style.ink, lw=_width(style),
                label="Algorithm 1")
    bx.set_xlim(0, data["t_end"])
    bx.set_ylim(1e-6, 1)
    bx.set_xlabel("accelerated time $t$")
    bx.set_ylabel("training loss")
    fig.legend(handles=bx.get_lines(), loc="outside right upper", fontsize="small")
    return fig


def coverage(data: dict, style) -> plt.Figure:
    """Proposition 2: Monte Carlo (dots), exact formula (solid), union bound (dotted), m = 2 log2 n (dashed)."""
    fig, ax = style.subplots(size=(10, 3.0))
    ms = data["ms"]
    for q, n in enumerate(data["ns"]):
        color = _color(style, q)
        ax.plot(ms, data["mc"][q], "o", color=color, ms=_marker(style, 4), label=f"n={n}: Monte Carlo")
        ax.plot(ms, data["exact"][q], "-", color=color, lw=_width(style, 1.2))
        ax.plot(ms, data["union"][q], ":", color=color, lw=_width(style, 1.2))
        ax.axvline(data["threshold"][q], color=color, ls="--", lw=_width(style, 0.7))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("width m")
    ax.set_ylabel("P(every point covered)")
    ax.legend(fontsize="small", loc="lower right")
    return fig


def norm_vs_n(data: dict, style) -> plt.Figure:
    """Figure 5: squared norms against n (Algorithm 1, minimal norm, GD); inset: mean ratio to the optimum."""
    ns = data["ns"]
    fig, ax = style.subplots(size=(10, 3.1))
    ax.loglog(ns, data["alg_norm"], "o-", color=_color(style, 0), label=r"Algorithm 1 ($\lambda\to0$), mean")
    ax.loglog(ns, data["opt_norm"], "s-", color=_color(style, 1), label=r"minimal norm $2(\|y_+\|+\|y_-\|)$")
    ax.plot(data["gd_n"], data["gd_norm"], "^", color=style.ink, ms=_marker(style, 5),
            label=r"gradient descent, $\lambda=e^{-30}/\sqrt{m}$")
    if len(data["gd_failed_n"]):
        ax.plot(data["gd_failed_n"], data["gd_failed_norm"], "^", mfc="none", mec=_color(style, 3),
                ms=_marker(style, 6), label="gradient descent, not interpolating")
    ax.loglog(ns, data["slope_half"], ":", color=style.ink, lw=_width(style), label="slope 1/2")
    ax.set_xlabel("n")
    ax.set_ylabel(r"$\|\theta\|^2$")
    fig.legend(loc="outside right upper", fontsize="small")
    ins = ax.inset_axes([0.62, 0.1, 0.33, 0.3])
    ins.semilogx(ns, data["ratio"], "o-", color=_color(style, 0), ms=_marker(style, 3))
    ins.axhline(data["ratio_limit"], ls="--", color=style.muted)
    ins.set_title("ratio to optimum", fontsize="small")
    ins.tick_params(labelsize="small")
    return fig


def norm_vs_width(data: dict, style) -> plt.Figure:
    """Figure 6: ratio to the minimal norm against width. Left, small init: Algorithm 1 (mean over all draws; and
    over the GD draws), gradient descent at two lambdas. Right: small init against He init (log scale)."""
    fig, (ax, bx) = style.subplots(1, 2, size=(10, 3.2))
    gw = data["gd_widths"]
    ax.semilogx(data["widths"], data["ratio"], "o-", color=_color(style, 0), label="Algorithm 1, mean")
    ax.semilogx(gw, data["gd_alg1_ratio"], "o", mfc="none", color=_color(style, 0), ms=_marker(style, 8),
                label="Algorithm 1, GD draws")
    ax.semilogx(gw, data["gd_ratio"], "^", color=style.ink,
                label=fr"GD, $\log(1/\lambda)={data['log_inv_lam']:g}$")
    if np.isfinite(data["gd_small_ratio"]).any():
        ax.semilogx(gw, data["gd_small_ratio"], "v", color=_color(style, 2),
                    label=fr"GD, $\log(1/\lambda)={data['small_log_inv_lam']:g}$")
    ax.axhline(1, color=style.muted, lw=_width(style, 0.8))
    ax.set_xlabel("width m")
    ax.set_ylabel(r"$\|\theta\|^2/\|\theta^*\|^2$")
    ax.set_title("small initialisation", fontsize="medium")
    ax.legend(fontsize="small")
    bx.loglog(data["widths"], data["ratio"], "o-", color=_color(style, 0), label="small init, Algorithm 1")
    bx.loglog(gw, data["he_ratio"], "s--", color=_color(style, 1), label="He init, GD")
    bx.axhline(1, color=style.muted, lw=_width(style, 0.8))
    bx.set_xlabel("width m")
    bx.set_title("small against He initialisation", fontsize="medium")
    bx.legend(fontsize="small")
    return fig
