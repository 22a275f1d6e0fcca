"""The escape-speed chapter's seven figures: pure render functions ``render(data, style) -> Figure`` of the data
that :mod:`stagewise.escape_speed.figure_data` takes out of the experiments (no torch, no computation), so that
``stagewise figure`` draws them again in any style from the run's sidecars."""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

R1 = "$\\sqrt{2}-1$"


def _legend(fig, handles, labels):
    """The figure's legend outside, right of the panels (room for talk-sized text)."""
    if handles:      # a legend without artists warns (with a path of the machine) in the notebook
        fig.legend(handles, labels, loc="outside right upper", fontsize="small")


def rank_one(data: dict, style) -> plt.Figure:
    """``fig-escape-speed-rank-one`` (paper Fig. 5): the rank-one speed of Example 1 against the first-layer angle,
    direct and by Eq. (6), with the best rank-one speed and the rank-two construction's speed."""
    fig, ax = style.subplots(size=(6, 2.0))
    ax.plot(data["phi"], data["direct"], color=style.palette[0], label="direct: $|G\\,\\sigma(X^\\top w_\\phi)|$")
    ax.plot(data["phi_eq6"], data["eq6"], "o", color=style.palette[1], label="Eq. (6)")
    ax.axhline(data["rank_one_speed"], ls="--", color=style.muted, label=R1)
    ax.axhline(data["rank_two_speed"], ls=":", color=style.ink, label="rank-two construction")
    ax.set_xlabel("first-layer angle $\\phi$")
    ax.set_ylabel("rank-one speed")
    _legend(fig, *ax.get_legend_handles_labels())
    return fig


def _bars(ax, widths, f, fmt, color, label, style):
    """Fractions against width (log 2 axis) with their 95% Wilson intervals as error bars."""
    ax.errorbar(widths, f["p"], yerr=f["err"], fmt=fmt, color=color, label=label,
                capsize=0.5 * style.rc.get("lines.markersize", 6))
    ax.set_xscale("log", base=2)
    ax.set_ylim(-0.03, 1.03)


def success(data: dict, style) -> plt.Figure:
    """``fig-escape-speed-success`` (paper Figs 2 and 6): projected-ascent traces of every restart at every width
    (reached the rank-two speed: first colour; beyond rank one only: second; rank one: fourth), and per width the
    fraction of each kind with its 95% Wilson interval, for projected ascent and for gradient descent."""
    fig, axs = style.subplots(1, 3, size=(12, 2.7))
    colors = {2: style.palette[0], 1: style.palette[1], 0: style.palette[3]}
    width = 0.4 * style.rc.get("lines.linewidth", 1.5) / 1.5
    for run in data["runs"].values():
        for c, color in colors.items():
            axs[0].plot(run["trace"][:, run["cls"] == c], color=color, lw=width, alpha=0.4)
    thin = 0.7 * style.rc.get("lines.linewidth", 1.5)
    axs[0].axhline(data["rank_one_speed"], ls="--", color=style.ink, lw=thin)
    axs[0].axhline(data["rank_two_speed"], ls=":", color=style.ink, lw=thin)
    axs[0].set_ylim(*data["ylim"])
    axs[0].set_xlabel("ascent step")
    axs[0].set_ylabel("speed $-\\mathcal{L}_0$")
    for ax, pre, title in ((axs[1], "", "projected ascent"), (axs[2], "gd_", "gradient descent")):
        _bars(ax, data[f"{pre}widths"], data[f"{pre}beyond"], "s--", colors[1], None, style)
        _bars(ax, data[f"{pre}widths"], data[f"{pre}reached"], "o-", colors[2], None, style)
        ax.set_xlabel("hidden width")
        ax.set_title(title, fontsize="medium")
    axs[1].set_ylabel("fraction of runs")
    handles = [Line2D([], [], color=colors[2], marker="o"), Line2D([], [], color=colors[1], marker="s", ls="--"),
               Line2D([], [], color=colors[0]), Line2D([], [], ls="--", color=style.ink),
               Line2D([], [], ls=":", color=style.ink)]
    labels = ["reached 1/2", "beyond rank one", "rank-one run", R1, "1/2 (rank two)"]
    _legend(fig, handles, labels)
    return fig


def gd_success(data: dict, style) -> plt.Figure:
    """``fig-escape-speed-gd-success``: fractions of gradient descent (rank-two speed reached; beyond rank one) next
    to projected ascent (reached), with 95% Wilson intervals, and every gradient-descent run's speed at the 1% loss
    drop (positions jittered in the data, not here)."""
    fig, axs = style.subplots(1, 2, size=(9, 2.8))
    _bars(axs[0], data["gd_widths"], data["gd_beyond"], "s--", style.palette[2], "GD beyond rank one", style)
    _bars(axs[0], data["gd_widths"], data["gd"], "o-", style.palette[1], "GD reached 1/2", style)
    _bars(axs[0], data["pa_widths"], data["pa"], "^:", style.palette[0], "ascent reached 1/2", style)
    axs[0].set_ylabel("fraction of runs")
    size = 0.4 * style.rc.get("lines.markersize", 6)
    axs[1].plot(data["x"].T, data["speeds"].T, "o", ms=size, mew=0, alpha=0.6, color=style.palette[1])
    refs = ((data["rank_one_speed"], "--", R1 + " (rank one)"), (data["threshold"], ":", "reached (threshold)"),
            (data["rank_two_speed"], "-", "1/2 (rank two)"))
    for y, ls, label in refs:
        axs[1].axhline(y, color=style.muted, ls=ls, lw=0.55 * style.rc.get("lines.linewidth", 1.5), label=label)
    axs[1].set_xscale("log", base=2)
    axs[1].set_ylabel("speed at the 1% drop")
    fig.supxlabel("hidden width", fontsize=plt.rcParams["axes.labelsize"])
    handles, labels = axs[0].get_legend_handles_labels()
    more, names = axs[1].get_legend_handles_labels()
    _legend(fig, handles + more, labels + names)
    return fig


def depth(data: dict, style) -> plt.Figure:
    """``fig-escape-speed-depth``: the best speed known at each depth per dataset (solid; dashed: the depth
    continuation of Proposition 3.2 alone) and ``s2/s1`` of every layer of the fastest random restart of Example 1."""
    fig, axs = style.subplots(1, 2, size=(9, 2.5))
    handles, labels = [], []
    thin = 0.55 * style.rc.get("lines.linewidth", 1.5)
    for i, d in enumerate(data["datasets"].values()):
        color = style.palette[i % len(style.palette)]
        line, = axs[0].plot(d["depths"], d["speeds"], "o-", color=color)
        axs[0].plot(d["depths"], d["continuation"], "--", color=color, lw=thin)
        handles.append(line)
        labels.append(d["name"])
    handles.append(Line2D([], [], ls="--", color=style.muted, lw=thin))
    labels.append("continuation alone")
    axs[0].set_xlabel("depth $L$")
    axs[0].set_ylabel("best known speed $\\hat s(L)$")
    axs[0].set_xticks(data["depths"])
    im = axs[1].imshow(data["ratios"], aspect="auto", cmap="viridis", vmin=0, vmax=1, origin="lower",
                       extent=list(data["extent"]))
    axs[1].set_xticks(data["layers"])
    axs[1].set_yticks(data["depths"])
    axs[1].grid(False)
    axs[1].set_xlabel("layer $\\ell$ (Example 1, random restart)")
    axs[1].set_ylabel("depth $L$")
    fig.colorbar(im, ax=axs[1], label="$s_2/s_1(W_\\ell)$")
    _legend(fig, handles, labels)
    return fig


def explosion(data: dict, style) -> plt.Figure:
    """``fig-escape-speed-explosion`` (Proposition 2.2): per-layer scale on ``L0`` (solid), on the MSE loss
    (dashed) and the corrected ODE (dotted), one colour per depth."""
    fig, ax = style.subplots(size=(6, 2.6))
    thin = 0.55 * style.rc.get("lines.linewidth", 1.5)
    for i, c in enumerate(data["curves"].values()):
        color = style.palette[i % len(style.palette)]
        ax.semilogy(c["t"], c["u_localized"], "-", color=color, label=f"L={c['L']}, $\\mathcal{{L}}_0$")
        ax.semilogy(c["t"], c["u_full"], "--", color=color, label=f"L={c['L']}, MSE")
        ax.semilogy(c["t"], c["u_ode"], ":", color=style.ink, lw=thin, label="ODE" if i == 0 else None)
    ax.set_xlabel("time $\\times (L-1)$")
    ax.set_ylabel("per-layer scale $u$")
    _legend(fig, *ax.get_legend_handles_labels())
    return fig


def escape_time(data: dict, style) -> plt.Figure:
    """``fig-escape-speed-escape-time``: median escape time against ``alpha``; left ``L = 2`` (log-linear), right
    ``L >= 3`` (log-log, dotted: slope ``-(L-2)``)."""
    fig, axs = style.subplots(1, 2, size=(9, 2.4))
    thin = 0.55 * style.rc.get("lines.linewidth", 1.5)
    deeper = [d for d in data["depths"].values() if d["L"] >= 3]
    for d in data["depths"].values():
        if d["L"] == 2:
            axs[0].semilogx(d["alphas"], d["times"], "o-", color=style.palette[0])
            axs[0].set_ylabel("escape time ($L=2$)")
    for i, d in enumerate(deeper):
        color = style.palette[(i + 1) % len(style.palette)]
        axs[1].loglog(d["alphas"], d["times"], "o-", color=color, label=f"L={d['L']}, slope {d['slope']:.2f}")
        axs[1].loglog(d["alphas"], d["reference"], ":", color=style.ink, lw=thin,
                      label="slope $-(L-2)$" if i == 0 else None)
    axs[1].set_ylabel("escape time")
    fig.supxlabel("$\\alpha$", fontsize=plt.rcParams["axes.labelsize"])
    _legend(fig, *axs[1].get_legend_handles_labels())
    return fig


def digits(data: dict, style) -> plt.Figure:
    """``fig-escape-speed-digits`` (paper Figs 1, 3, 4): per depth (one row) the loss, ``s2/s1`` per layer with
    the escapes (dashed), and the top singular values of every layer over the largest after the first escape and
    at the end. One colour per layer index, the same in every panel."""
    rows = list(data["rows"].values())
    fig, axs = style.subplots(len(rows), 4, size=(13, 3.7), squeeze=False)
    colors = style.sequence(data["max_depth"])
    thin = 0.55 * style.rc.get("lines.linewidth", 1.5)
    small = 0.4 * style.rc.get("lines.markersize", 6)
    last = len(rows) - 1
    for r, row in enumerate(rows):
        L = row["L"]
        axs[r, 0].plot(row["loss"], color=style.palette[0], lw=thin)
        axs[r, 0].set_ylabel(f"depth {L}: loss")
        for l in range(L):
            axs[r, 1].semilogy(row["steps"], row["ratio"][:, l], color=colors[l], lw=thin, label=f"$W_{{{l + 1}}}$")
        axs[r, 1].set_ylabel("$s_2/s_1$")
        for e in row["escapes"]:
            for ax in axs[r, :2]:
                ax.axvline(e, color=style.muted, ls="--", lw=thin)
        for col, key in ((2, "first"), (3, "end")):
            mark = row[key]
            if not mark["ran"]:
                axs[r, col].set_title(f"{mark['label']}:\nnone", fontsize="medium")
                continue
            for l in range(L):
                axs[r, col].plot(mark["k"], mark["spectrum"][l], "o-", color=colors[l], ms=small, lw=thin)
            axs[r, col].set_title(f"{mark['label']}\n(it. {mark['iteration']})", fontsize="medium")
            axs[r, col].set_ylabel("$s_k/s_1$")
        if r == 0:
            axs[r, 0].set_title("training loss", fontsize="medium")
            axs[r, 1].set_title("$s_2/s_1$ per layer", fontsize="medium")
        if r == last:
            for col, label in ((0, "iteration"), (1, "iteration"), (2, "index $k$"), (3, "index $k$")):
                axs[r, col].set_xlabel(label)
    deepest = max(rows, key=lambda row: row["L"])
    handles = [Line2D([], [], color=colors[l]) for l in range(deepest["L"])]
    labels = [f"$W_{{{l + 1}}}$" for l in range(deepest["L"])]
    if any(len(row["escapes"]) for row in rows):
        handles.append(Line2D([], [], color=style.muted, ls="--", lw=thin))
        labels.append("escapes")
    _legend(fig, handles, labels)
    return fig
