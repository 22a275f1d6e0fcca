"""The chapter's three figures, drawn from the experiments' results."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from stagewise.conservation_laws.experiments import DescentResult, FlowResult, LayerGrowth


def drift_vs_time(descent: DescentResult, flow: FlowResult) -> plt.Figure:
    """``fig-conservation-laws-drift-vs-time``: largest change of an invariant since
    initialization against time, GD per step size (first seed) and gradient flow (dashed)."""
    etas = descent.etas
    fig, axes = plt.subplots(1, len(descent.trajectories), figsize=(13, 3.0), sharey=True)
    for ax, (name, tr) in zip(axes, descent.trajectories.items()):
        for e, eta in enumerate(etas):
            change = (tr.invariants[:, e, 0] - tr.invariants[:1, e, 0]).abs().amax(-1).cpu()
            ax.semilogy(tr.times[1:], change[1:], label=f"GD, $\\eta$={eta:g}", color=plt.cm.viridis(e / len(etas)))
        if name in flow.trajectories:
            ftr = flow.trajectories[name]
            change = (ftr.invariants[:, 0, 0] - ftr.invariants[:1, 0, 0]).abs().amax(-1).cpu()
            ax.semilogy(ftr.times[1:], change[1:].clamp(min=1e-17), "k--", label="gradient flow (ODE)")
        ax.set_title(name.replace("_", " "))
        ax.set_xlabel("time $t = \\eta \\times$ step")
    axes[0].set_ylabel("max$_j$ |I$_j$(t) − I$_j$(0)|")
    axes[0].legend(fontsize=7)
    return fig


def drift_vs_eta(descent: DescentResult, horizon: float) -> plt.Figure:
    """``fig-conservation-laws-drift-vs-eta``: drift over the horizon against the step size
    (seed average, log-log), with the per-seed mean slopes and a slope-1 line."""
    etas = descent.etas
    fig, ax = plt.subplots(figsize=(7.4, 3.6))
    styles = ["o-", "s--", "^-.", "D:", "v-"]   # distinct markers and dashes: overlapping curves stay visible
    for i, (name, values) in enumerate(descent.drift.items()):
        label = f"{name.replace('_', ' ')} (slope {np.mean(descent.slopes[name]):.2f})"
        ax.loglog(etas, values.mean(1), styles[i % len(styles)], color=f"C{i}", label=label,
                  markersize=9 - 1.5 * i, markerfacecolor="none" if i % 2 else f"C{i}", linewidth=2.4 - 0.4 * i)
    reference = 0.3 * descent.drift["relu"].mean(1)[-1] * np.asarray(etas) / etas[-1]   # below the curves
    ax.loglog(etas, reference, "k:", label="slope 1")
    ax.set_xticks(etas, [f"{eta:g}" for eta in etas])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel("step size $\\eta$")
    ax.set_ylabel(f"drift over $T$ = {horizon:g}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    fig.tight_layout()
    return fig


def layer_norms(growth: LayerGrowth) -> plt.Figure:
    """``fig-conservation-laws-layer-norms``: growth of each layer's squared Frobenius norm."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for l in range(growth.growth.shape[1]):
        ax.plot(growth.times, growth.growth[:, l], label=f"layer {l + 1}")
    ax.set_xlabel("time $t$")
    ax.set_ylabel("$\\|W_l(t)\\|_F^2 - \\|W_l(0)\\|_F^2$")
    ax.legend(fontsize=8)
    return fig
