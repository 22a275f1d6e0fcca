"""The chapter's three figures, drawn from the experiments' results."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from stagewise.conservation_laws.experiments import DescentResult, FlowResult, LayerGrowth


def drift_vs_time(descent: DescentResult, flow: FlowResult) -> plt.Figure:
    """``fig-conservation-laws-drift-vs-time``: largest change of an invariant since
    initialization against time, GD per step size run (first seed) and gradient flow (dashed)."""
    every = sorted(set(descent.etas), reverse=True)
    fig, axes = plt.subplots(1, len(descent.families), figsize=(13, 3.0), sharey=True)
    for ax, (name, result) in zip(axes, descent.families.items()):
        tr = result.trajectory
        for e, eta in enumerate(result.etas):
            change = (tr.invariants[:, e, 0] - tr.invariants[:1, e, 0]).abs().amax(-1).cpu()
            ax.semilogy(tr.times[1:], change[1:], label=f"GD, $\\eta$={eta:g}",
                        color=plt.cm.viridis(every.index(eta) / len(every)))
        if name in flow.trajectories:
            ftr = flow.trajectories[name]
            change = (ftr.invariants[:, 0, 0] - ftr.invariants[:1, 0, 0]).abs().amax(-1).cpu()
            ax.semilogy(ftr.times[1:], change[1:].clamp(min=1e-17), "k--", label="gradient flow (ODE)")
        ax.set_title(name.replace("_", " "))
        ax.set_xlabel("time $t = \\eta \\times$ step")
    axes[0].set_ylabel("max$_j$ |I$_j$(t) − I$_j$(0)|")
    labelled = [ax for ax in axes if ax.get_legend_handles_labels()[0]]
    if labelled:   # a legend without artists warns (with a path of the machine) in the notebook
        labelled[0].legend(fontsize=7)
    return fig


def drift_vs_eta(descent: DescentResult, horizon: float) -> plt.Figure:
    """``fig-conservation-laws-drift-vs-eta``: drift over the horizon against the step size
    (seed average, log-log) for the step sizes each family ran, with the per-seed mean slopes (over
    the step sizes with ``eta lambda_max <= 1/2``; "n/a" when fewer than three qualify) and a slope-1 line."""
    etas = sorted(set(descent.etas), reverse=True)
    fig, ax = plt.subplots(figsize=(7.4, 3.6))
    styles = ["o-", "s--", "^-.", "D:", "v-"]   # distinct markers and dashes: overlapping curves stay visible
    for i, (name, result) in enumerate(descent.families.items()):
        if not result.etas:
            continue
        slopes = [s for s in result.slopes if np.isfinite(s)]
        slope = f"{np.mean(slopes):.2f}" if slopes else "n/a"
        ax.loglog(result.etas, result.drift.mean(1), styles[i % len(styles)], color=f"C{i}",
                  label=f"{name.replace('_', ' ')} (slope {slope})",
                  markersize=9 - 1.5 * i, markerfacecolor="none" if i % 2 else f"C{i}", linewidth=2.4 - 0.4 * i)
    base = next((r for r in (descent.families.get("relu"), *descent.families.values()) if r is not None and r.etas),
                None)
    if base is not None:
        reference = 0.3 * base.drift.mean(1)[-1] * np.asarray(etas) / base.etas[-1]   # below the curves
        ax.loglog(etas, reference, "k:", label="slope 1")
    ax.set_xticks(etas, [f"{eta:g}" for eta in etas])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel("step size $\\eta$")
    ax.set_ylabel(f"drift over $T$ = {horizon:g}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    fig.tight_layout()
    return fig


def layer_norms(growth: LayerGrowth | None) -> plt.Figure:
    """``fig-conservation-laws-layer-norms``: growth of each layer's squared Frobenius norm (a note
    in place of the curves when no step size could run, ``growth`` None)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    if growth is None:
        ax.text(0.5, 0.5, "not run: no step size with eta lambda_max <= 1", ha="center", va="center",
                transform=ax.transAxes)
        return fig
    for l in range(growth.growth.shape[1]):
        ax.plot(growth.times, growth.growth[:, l], label=f"layer {l + 1}")
    ax.set_xlabel("time $t$")
    ax.set_ylabel("$\\|W_l(t)\\|_F^2 - \\|W_l(0)\\|_F^2$")
    ax.legend(fontsize=8)
    return fig
