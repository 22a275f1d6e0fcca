"""The chapter's three figures: pure render functions ``render(data, style) -> Figure`` of the data that
:mod:`stagewise.conservation_laws.figure_data` takes out of the experiments (no torch, no computation), so that
``stagewise figure`` draws them again in any style from the run's sidecars."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def drift_vs_time(data: dict, style) -> plt.Figure:
    """``fig-conservation-laws-drift-vs-time``: largest change of an invariant since initialization against
    time, GD per step size run (first seed), gradient flow (dashed) and, where given, the first-order prediction
    ``eta C(t)`` read off the flow (dotted)."""
    panels = list(data["panels"].values())
    every = list(data["all_etas"])
    colors = style.sequence(len(every))
    ncols = 3                                     # two rows of three: legible at a laptop's width
    nrows = -(-(len(panels) + 1) // ncols)        # one slot left for the legend
    fig, grid = style.subplots(nrows, ncols, size=(9.6, 1.8 * nrows), sharey=True, sharex=True, squeeze=False)
    axes = grid.flatten()
    legend = {}
    for ax, panel in zip(axes, panels):
        for eta, change in zip(panel["etas"], panel.get("change", [])):
            line, = ax.semilogy(panel["times"], change, color=colors[every.index(eta)])
            legend.setdefault(f"GD, $\\eta$={eta:g}", line)
        for predicted in panel.get("predicted", []):
            line, = ax.semilogy(panel["times"], predicted, ":", color=style.ink, linewidth=1.0)
            legend.setdefault("$\\eta\\,C(t)$ from the flow", line)
        if "flow_change" in panel:
            line, = ax.semilogy(panel["flow_times"], panel["flow_change"], "--", color=style.ink)
            legend.setdefault("gradient flow (ODE)", line)
        ax.set_title(panel["name"])
    for i, ax in enumerate(axes):
        if i >= len(panels):
            ax.axis("off")
        elif i + ncols >= len(panels):             # no panel below: this one shows the time axis
            ax.tick_params(labelbottom=True)
    fig.supxlabel("time $t = \\eta \\times$ step", fontsize=plt.rcParams["axes.labelsize"])
    fig.supylabel("max$_j$ |I$_j$(t) − I$_j$(0)|", fontsize=plt.rcParams["axes.labelsize"])
    if legend:     # a legend without artists warns (with a path of the machine) in the notebook
        axes[-1].legend(legend.values(), legend.keys(), loc="center", fontsize="small", frameon=False)
    return fig


def drift_vs_eta(data: dict, style) -> plt.Figure:
    """``fig-conservation-laws-drift-vs-eta``: drift over the horizon against the step size (seed average,
    log-log) for the step sizes each family ran, with the per-seed mean slopes (over the step sizes with
    ``eta lambda_max <= 1/2``; "n/a" when fewer than three qualify) and a slope-1 line."""
    fig, ax = style.subplots(size=(6.6, 3.0))
    marks = ["o-", "s--", "^-.", "D:", "v-"]   # distinct markers and dashes: overlapping curves stay visible
    width = style.rc.get("lines.linewidth", 1.5)
    size = style.rc.get("lines.markersize", 6)
    for fam in data["families"].values():
        i = fam["index"]
        slope = "n/a" if fam["slope"] is None else f"{fam['slope']:.2f}"
        color = style.palette[i % len(style.palette)]
        ax.loglog(fam["etas"], fam["drift"], marks[i % len(marks)], color=color,
                  label=f"{fam['name']} (slope {slope})", markersize=size * (1.5 - 0.25 * i),
                  markerfacecolor="none" if i % 2 else color, linewidth=width * (1.6 - 0.27 * i))
    if "reference" in data:
        ax.loglog(data["etas"], data["reference"], ":", color=style.ink, label="slope 1")
    ax.set_xticks(data["etas"], [f"{eta:g}" for eta in data["etas"]])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel("step size $\\eta$")
    ax.set_ylabel(f"drift over $T$ = {data['horizon']:g}")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    return fig


def layer_norms(data: dict, style) -> plt.Figure:
    """``fig-conservation-laws-layer-norms``: growth of each layer's squared Frobenius norm (a note in place of
    the curves when no step size could run)."""
    fig, ax = style.subplots(size=(4.8, 2.8))
    if not data["ran"]:
        ax.text(0.5, 0.5, "not run: no step size with eta lambda_max <= 1", ha="center", va="center",
                transform=ax.transAxes)
        return fig
    growth = np.asarray(data["growth"])
    for layer in range(growth.shape[1]):
        ax.plot(data["times"], growth[:, layer], label=f"layer {layer + 1}")
    ax.set_xlabel("time $t$")
    ax.set_ylabel("$\\|W_l(t)\\|_F^2 - \\|W_l(0)\\|_F^2$")
    ax.legend(fontsize="small")
    return fig
