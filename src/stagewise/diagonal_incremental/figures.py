"""The chapter's eight figures: pure render functions ``render(data, style) -> Figure`` of the data that
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
    fig, ax = style.subplots(size=(7, 2.75))
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
    flow at the smallest alpha (top; dashed: Algorithm 1's times) and, below each, the rank staircase: the number
    of entries above the support threshold (line) and Algorithm 1's support size on each plateau (markers)."""
    fig, axes = style.subplots(2, 2, size=(8, 3.5), sharex=True, sharey="row",
                               gridspec_kw={"height_ratios": [2.3, 1]})
    palette = style.palette
    panels = ((0, "kq", "diag(w_K) diag(w_Q)", palette[0]), (1, "vo", "diag(w_V) diag(w_O)", palette[1]))
    for col, key, title, color in panels:
        ax, low = axes[0, col], axes[1, col]
        ax.plot(data["tau"], data[key], lw=0.8 * _width(style))
        for t_k in data["T"]:
            ax.axvline(t_k, color=style.ink, ls="--", lw=0.4 * _width(style))
            low.axvline(t_k, color=style.ink, ls="--", lw=0.4 * _width(style))
        ax.set_title(title)
        low.step(data["tau"], data["ranks"][:, col], where="post", color=color)
        low.plot(data["mids"], data["ranks_alg"][:, col], "o", mfc="none", color=style.ink,
                 label="Algorithm 1" if col == 0 else None)
    axes[0, 0].set_ylabel(f"entries, α={data['alpha']:.0e}")
    axes[1, 0].set_ylabel("rank")
    axes[1, 0].legend(fontsize="small", loc="upper left")
    _supxlabel(fig, RESCALED)
    return fig


def times(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-times``: measured transition times (dots) against ``1/log(1/alpha)``, the
    quadratic fits (lines) and Algorithm 1's ``T_k`` (stars at 0)."""
    fig, ax = style.subplots(size=(6, 2.4))
    palette = style.palette
    size = float(style.rc.get("lines.markersize", 6))
    for k, t_k in enumerate(data["T"]):
        color = palette[k % len(palette)]
        ax.plot(data["x"], data["times"][:, k], "o", color=color)
        ax.plot(data["grid"], data["fit"][:, k], color=color, lw=0.55 * _width(style))
        ax.plot([0], [t_k], "*", color=style.ink, ms=1.5 * size)
    ax.set(xlabel="1 / log(1/α)", ylabel="transition time τ_k(α)")
    return fig


def logscale(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-logscale``: ``b = log_alpha(u + v)`` along the flow (first colour key-query,
    second value-output) and Algorithm 1's bookkeeping through the ``b^k`` (dashed)."""
    fig, ax = style.subplots(size=(6.5, 2.9))
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
    fig, ax = style.subplots(size=(6.5, 2.5))
    for i in range(data["beta"].shape[1]):
        ax.plot(data["tau"], data["beta"][:, i], label=f"β_{i + 1}")
    for t_k in data["T"]:
        ax.axvline(t_k, color=style.ink, ls="--", lw=0.4 * _width(style))
    ax.set(xscale="log", xlabel=RESCALED, ylabel=f"β, α = {data['alpha']:.0e}",
           xlim=(data["tau_start"], data["tau"][-1]))
    ax.legend(fontsize="small")
    return fig


def perturb(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-perturb``: distance between perturbed and unperturbed GD, the paper's two
    protocols: on each plateau (left, its Fig. 10) and when a coordinate becomes non-negligible (right, its
    Fig. 11); dots end each window."""
    fig, axes = style.subplots(1, 2, size=(8, 2.5), sharey=True)
    palette = style.palette
    for ax, key, title, what in ((axes[0], "plateau", "on a plateau (Assumption 4.4)", "plateau after stage"),
                                 (axes[1], "stage_b", "at a new coordinate (Assumption 4.5)", "stage")):
        part = data[key]
        for q in range(part["dist"].shape[0]):
            color = palette[q % len(palette)]
            ax.semilogy(part["t"], part["dist"][q], color=color, label=f"{what} {q + 1}")
            ax.plot(part["stop_t"][q], part["stop_dist"][q], "o", color=color)
        ax.set_title(title)
        if part["dist"].shape[0]:      # a legend without artists warns
            ax.legend(fontsize="small")
    axes[0].set_ylabel("max |β_pert − β|")
    _supxlabel(fig, "training time t after the perturbation")
    return fig


def fullhead(data: dict, style) -> plt.Figure:
    """``fig-diagonal-incremental-fullhead``: singular values of ``W_K W_Q^T`` and ``W_V W_O^T`` (left) and
    the loss (right) of the full attention head."""
    fig, axes = style.subplots(1, 2, size=(8, 2.4))
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
