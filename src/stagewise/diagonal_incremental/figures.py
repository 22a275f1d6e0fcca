"""The chapter's nine figures: pure render functions ``render(data, style) -> Figure`` of the data that
:mod:`stagewise.diagonal_incremental.figure_data` takes out of the studies (no torch, no computation), so that
``stagewise figure`` draws them again in any style from the run's sidecars. Line widths are fractions of the
style's own, so that thin guides stay thin next to the heavier lines of a talk."""
from __future__ import annotations

import matplotlib.pyplot as plt

RESCALED = "rescaled time t / log(1/α)"


def _width(style) -> float:
    return float(style.rc.get("lines.linewidth", 1.5))


def _supxlabel(fig, text: str) -> None:
    fig.supxlabel(text, fontsize=plt.rcParams["axes.labelsize"])


def loss(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-loss``: loss against rescaled time, GD (dotted), exact flow (solid) and
    Algorithm 1's staircase (dashed); one colour per alpha on an ordered ramp."""
    fig, ax = style.subplots(size=(7, 3.6))
    colors = style.sequence(data["n_alphas"])
    for curve in data["descent"].values():
        ax.plot(curve["tau"], curve["loss"], color=colors[int(curve["index"])], ls=":",
                label=f"GD, α={curve['alpha']:.0e}")
    flow = data["flow"]
    for j, (alpha, index) in enumerate(zip(flow["alphas"], flow["index"])):
        ax.plot(flow["tau"], flow["loss"][:, j], color=colors[int(index)], label=f"GF, α={alpha:.0e}")
    ax.step(data["stairs"]["tau"], data["stairs"]["loss"], where="post", color=style.ink, ls="--",
            lw=0.7 * _width(style), label="Algorithm 1")
    ax.set(xlabel=RESCALED, ylabel="loss", xlim=(0, data["tau_end"]))
    ax.set_yscale("symlog", linthresh=data["linthresh"])
    ax.set_ylim(0, data["loss_top"])
    ax.axhspan(0, data["linthresh"], color=style.muted, alpha=0.15, lw=0, zorder=0)   # symlog: linear below
    ax.text(0.01, data["linthresh"] / 2, f"linear scale below {data['linthresh']:g}",
            transform=ax.get_yaxis_transform(), fontsize="small", va="center", color=style.muted)
    fig.legend(loc="outside right upper", fontsize="small")
    return fig


def entries(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-entries``: the diagonal entries of ``W_K W_Q^T`` and ``W_V W_O^T`` along the
    flow at the smallest alpha; dashed: Algorithm 1's times."""
    fig, axes = style.subplots(1, 2, size=(8, 3.2), sharey=True)
    for ax, key, title in ((axes[0], "kq", "diag(w_K) diag(w_Q)"), (axes[1], "vo", "diag(w_V) diag(w_O)")):
        ax.plot(data["tau"], data[key], lw=0.8 * _width(style))
        for t_k in data["T"]:
            ax.axvline(t_k, color=style.ink, ls="--", lw=0.4 * _width(style))
        ax.set_title(title)
    axes[0].set_ylabel(f"entries, α={data['alpha']:.0e}")
    _supxlabel(fig, RESCALED)
    return fig


def times(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-times``: measured transition times (dots) against ``1/log(1/alpha)``, the
    quadratic fits (lines) and Algorithm 1's ``T_k`` (stars at 0)."""
    fig, ax = style.subplots(size=(6, 3.4))
    palette = style.palette
    size = float(style.rc.get("lines.markersize", 6))
    for k, t_k in enumerate(data["T"]):
        color = palette[k % len(palette)]
        ax.plot(data["x"], data["times"][:, k], "o", color=color)
        ax.plot(data["grid"], data["fit"][:, k], color=color, lw=0.55 * _width(style))
        ax.plot([0], [t_k], "*", color=style.ink, ms=1.5 * size)
    ax.set(xlabel="1 / log(1/α)", ylabel="transition time τ_k(α)")
    return fig


def rank(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-rank``: the rank staircase along the flow (lines) and Algorithm 1's support
    sizes at the plateau midpoints (markers)."""
    fig, ax = style.subplots(size=(6, 3))
    kq, vo = style.palette[:2]
    ax.step(data["tau"], data["ranks"][:, 0], where="post", color=kq, label="rank W_K W_Q^T")
    ax.step(data["tau"], data["ranks"][:, 1], where="post", color=vo, label="rank W_V W_O^T")
    ax.plot(data["mids"], data["ranks_alg"][:, 0], "o", mfc="none", color=kq, label="Algorithm 1")
    ax.plot(data["mids"], data["ranks_alg"][:, 1], "s", mfc="none", color=vo)
    ax.set(xlabel=RESCALED, ylabel=f"rank (|entry| > {data['threshold']:g})")
    ax.legend(fontsize="small")
    return fig


def logscale(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-logscale``: ``b = log_alpha(u + v)`` along the flow (first colour key-query,
    second value-output) and Algorithm 1's bookkeeping through the ``b^k`` (dashed)."""
    fig, ax = style.subplots(size=(6.5, 3.4))
    kq, vo = style.palette[:2]
    d, b = data["d"], data["b"]
    for i in range(b.shape[1]):
        label = "key–query" if i == 0 else "value–output" if i == d else None
        ax.plot(data["tau"], b[:, i], lw=0.55 * _width(style), color=kq if i < d else vo, label=label)
    for i in range(data["b_knots"].shape[1]):
        ax.plot(data["knots"], data["b_knots"][:, i], "--", color=style.ink, lw=0.35 * _width(style),
                label="Algorithm 1" if i == 0 else None)
    ax.set(xlabel=RESCALED, ylabel="b = log_α(u+v)", ylim=(-0.3, 2.3))
    fig.legend(loc="outside right upper", fontsize="small")
    return fig


def conservation(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-conservation``: violation of ``u^2 - v^2`` conservation against the step
    size, with a slope-1 guide."""
    fig, ax = style.subplots(size=(5, 3))
    ax.loglog(data["etas"], data["drift"], "o-", label="max |c_n / c_0 − 1|")
    ax.loglog(data["etas"], data["reference"], "--", color=style.ink, lw=0.55 * _width(style), label="slope 1")
    ax.set(xlabel="step size η", ylabel="violation of u²−v² conservation")
    ax.legend(fontsize="small")
    return fig


def reenter(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-reenter``: ``beta`` along the exact flow at the smallest alpha of the
    correlated example (log time axis); dashed: Algorithm 1's times."""
    fig, ax = style.subplots(size=(6.5, 3))
    for i in range(data["beta"].shape[1]):
        ax.plot(data["tau"], data["beta"][:, i], label=f"β_{i + 1}")
    for t_k in data["T"]:
        ax.axvline(t_k, color=style.ink, ls="--", lw=0.4 * _width(style))
    ax.set(xscale="log", xlabel=RESCALED, ylabel=f"β, α = {data['alpha']:.0e}",
           xlim=(data["tau_start"], data["tau"][-1]))
    ax.legend(fontsize="small")
    return fig


def perturb(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-perturb``: distance between perturbed and unperturbed GD per plateau; dots
    end each plateau's window."""
    fig, ax = style.subplots(size=(5.5, 3))
    palette = style.palette
    for q in range(data["dist"].shape[0]):
        color = palette[q % len(palette)]
        ax.semilogy(data["t"], data["dist"][q], color=color, label=f"plateau after stage {q + 1}")
        ax.plot(data["stop_t"][q], data["stop_dist"][q], "o", color=color)
    ax.set(xlabel="training time t after the perturbation", ylabel="max |β_pert − β|")
    if data["dist"].shape[0]:      # a legend without artists warns
        ax.legend(fontsize="small")
    return fig


def fullhead(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-fullhead``: singular values of ``W_K W_Q^T`` and ``W_V W_O^T`` (left) and
    the loss (right) of the full attention head."""
    fig, axes = style.subplots(1, 2, size=(8, 3))
    kq, vo = style.palette[:2]
    lines_kq = axes[0].plot(data["tau"], data["s_kq"], color=kq, lw=0.7 * _width(style))
    lines_vo = axes[0].plot(data["tau"], data["s_vo"], color=vo, lw=0.7 * _width(style))
    axes[0].set_ylabel("singular values")
    if lines_kq and lines_vo:
        fig.legend([lines_kq[0], lines_vo[0]], ["W_K W_Q^T", "W_V W_O^T"], loc="outside right upper",
                   fontsize="small")
    axes[1].semilogy(data["tau"], data["loss"])
    axes[1].set_ylabel("loss")
    _supxlabel(fig, "t / log(1/α)")
    return fig
