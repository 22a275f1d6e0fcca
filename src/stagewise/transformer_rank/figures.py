"""Figures of the transformer-rank chapter: the stable rank of the learned changes during training against its
shuffled-label control (the signature figure, our version of the paper's Figures 4, 12, 15 and 20), the verdict
against the budget, normalized spectra (Figures 1, 5, 14), the initialization-scale sweep (Figures 6, 7) and the
teacher-student regime (ours). Pure render functions ``render(data, style) -> Figure`` of the data that
:mod:`stagewise.transformer_rank.figure_data` takes out of the experiments (no torch, no computation), so that
``stagewise figure`` draws them again in any style from the run's sidecars."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

KQ = r"W_KW_Q^\top"
VO = r"W_VW_O^\top"


def _label_size(style):
    return style.rc.get("axes.labelsize", "medium")


def _band(ax, steps, mean, std, colour, label):
    ax.plot(steps, mean, color=colour, label=label)
    ax.fill_between(steps, mean - std, mean + std, color=colour, alpha=0.25, lw=0)


def _legend(fig, axes, **kwargs):
    """One figure legend of the distinct labels of ``axes`` (none when there is nothing to show)."""
    seen = {}
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    if seen:
        fig.legend(seen.values(), seen.keys(), loc="outside right upper", fontsize="small", **kwargs)


def spectra(data: dict, style) -> plt.Figure:
    """``fig-transformer-rank-spectra``: normalized spectra sigma_i / sigma_1 of W_K W_Q^T (top) and W_V W_O^T
    (bottom) of one head per layer at initialization and of their change at several checkpoints (paper Figs 1, 5,
    14; observation obs-transformer-rank-low)."""
    rows, steps = data["rows"], data["steps"]
    depth = rows["kq"]["init"].shape[0]
    fig, axes = style.subplots(2, depth, size=(3.0 * depth + 1.6, 3.6), squeeze=False, sharey=True, sharex=True)
    init_colour, ramp = style.palette[3], style.sequence(len(steps))
    for r, (which, name) in enumerate((("kq", KQ), ("vo", VO))):
        for layer in range(depth):
            ax = axes[r, layer]
            s0 = rows[which]["init"][layer]
            idx = np.arange(1, len(s0) + 1)
            ax.semilogy(idx, s0, color=init_colour, lw=2 * style.rc.get("lines.linewidth", 1.5) / 1.5,
                        label="init")
            for colour, step, s in zip(ramp, steps, rows[which]["delta"]):
                ax.semilogy(idx, s[layer], color=colour, label=rf"$\Delta$, step {step}")
            ax.set_ylim(1e-4, 1.5)
            ax.set_xlim(1, data["xmax"])
            if r == 0:
                ax.set_title(f"layer {layer + 1}", fontsize="medium")
        axes[r, 0].set_ylabel(rf"${name}$: $\sigma_i/\sigma_1$")
    fig.supxlabel(f"index $i$ (head {data['head'] + 1})", fontsize=_label_size(style))
    _legend(fig, axes)
    return fig


def growth(data: dict, style) -> plt.Figure:
    """``fig-transformer-rank-signature``: rows Delta KQ and Delta VO, columns the runs (ViT with Adam, with SGD,
    char-GPT). Stable rank of the learned change, mean +- std over heads and layers (band), and the same run on
    shuffled labels or characters (dashed), the control (paper Figs 4, 12, 15, 20; claim (b))."""
    cols = list(data["columns"].values())
    fig, axes = style.subplots(2, len(cols), size=(3.1 * len(cols) + 1.6, 3.7), squeeze=False, sharex="col")
    for c, col in enumerate(cols):
        for r, (which, name) in enumerate((("kq", KQ), ("vo", VO))):
            ax = axes[r, c]
            _band(ax, col["steps"], col[f"{which}_mean"], col[f"{which}_std"], style.palette[r], "learning the task")
            ax.plot(col["steps"], col[f"{which}_control"], color=style.muted, ls="--", label="control (shuffled)")
            if r == 0:
                ax.set_title(col["label"], fontsize="medium")
            if c == 0:
                ax.set_ylabel(rf"srank $\Delta {name}$")
    fig.supxlabel("training step", fontsize=_label_size(style))
    _legend(fig, axes)
    return fig


def budget(data: dict, style) -> plt.Figure:
    """``fig-transformer-rank-budget``: the fitted change of the stable rank over training (with its interval) of
    each growth claim of the ViT against the budget, on the true labels and on shuffled labels (claim (b))."""
    keys, steps = data["keys"], data["steps"]
    names = {"adam_kq": rf"Adam, $\Delta {KQ}$", "adam_vo": rf"Adam, $\Delta {VO}$",
             "sgd_kq": rf"SGD, $\Delta {KQ}$", "sgd_vo": rf"SGD, $\Delta {VO}$"}
    fig, axes = style.subplots(1, len(keys), size=(2.7 * len(keys) + 1.6, 2.8), squeeze=False, sharey=False)
    shift = 0.03 * (steps.max() - steps.min() + 1)
    for ax, key in zip(axes[0], keys):
        ax.axhline(0, color=style.ink, lw=0.6)
        ax.errorbar(steps - shift, data[f"{key}_true"], yerr=data[f"{key}_true_hw"], marker="o", capsize=3,
                    color=style.palette[0], label="true labels")
        ax.errorbar(steps + shift, data[f"{key}_shuffled"], yerr=data[f"{key}_shuffled_hw"], marker="s",
                    capsize=3, color=style.muted, ls="--", label="shuffled labels")
        hits = [i for i, ok in enumerate(data["reproduced"][key]) if ok]     # ringed: reproduced at that budget
        ax.plot(steps[hits] - shift, data[f"{key}_true"][hits], "o", ms=14, mfc="none", mec=style.palette[0],
                label="reproduced")
        ax.set_xticks(steps)
        ax.set_title(names.get(key, key), fontsize="medium")
    axes[0, 0].set_ylabel("fitted change of srank")
    fig.supxlabel("training budget (steps)", fontsize=_label_size(style))
    _legend(fig, axes)
    return fig


def scale_svals(data: dict, style) -> plt.Figure:
    """``fig-transformer-rank-scale-svals``: the top singular values of Delta for one head against the step, one
    column per Adam initialization scale (paper Fig 6; claim (c))."""
    scales, steps = data["scales"], data["steps"]
    top = data["kq"].shape[-1]
    fig, axes = style.subplots(2, len(scales), size=(3.0 * len(scales) + 1.6, 3.8), squeeze=False, sharex=True)
    colours = style.sequence(top)
    for col, scale in enumerate(scales):
        for r, (which, name) in enumerate((("kq", KQ), ("vo", VO))):
            ax = axes[r, col]
            for i in range(top):
                ax.semilogy(steps, data[which][col, :, i], color=colours[i], label=rf"$\sigma_{{{i + 1}}}$")
            low, high = ax.get_ylim()
            ax.set_ylim(bottom=max(low, 1e-4 * high))
            if r == 0:
                ax.set_title(f"scale {scale:g}", fontsize="medium")
            if col == 0:
                ax.set_ylabel(rf"$\sigma_i$ of $\Delta {name}$")
    fig.supxlabel(f"step (layer {data['layer'] + 1}, head {data['head'] + 1})", fontsize=_label_size(style))
    _legend(fig, axes)
    return fig


def scale_srank(data: dict, style) -> plt.Figure:
    """``fig-transformer-rank-scale-srank``: final stable rank against the initialization scale, per layer (mean
    +- std over heads), of Delta KQ (left) and Delta VO (right) (paper Fig 7; claim (c))."""
    fig, axes = style.subplots(1, 2, size=(9, 2.5), squeeze=False)
    for ax, which, name in zip(axes[0], ("kq", "vo"), (KQ, VO)):
        mean, std = data[f"{which}_mean"], data[f"{which}_std"]
        for layer in range(mean.shape[1]):
            ax.errorbar(data["scales"], mean[:, layer], yerr=std[:, layer], marker="o", capsize=3,
                        color=style.palette[layer % len(style.palette)], label=f"layer {layer + 1}")
        ax.set_xscale("log")
        ax.set_xticks(data["scales"], [f"{scale:g}" for scale in data["scales"]])
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_title(rf"$\Delta {name}$", fontsize="medium")
    axes[0, 0].set_ylabel("final stable rank")
    fig.supxlabel("initialization scale", fontsize=_label_size(style))
    _legend(fig, axes)
    return fig


def toy(data: dict, style) -> plt.Figure:
    """``fig-transformer-rank-toy``: teacher-student regime (ours), singular values of Delta(W_K W_Q^T) (top) and
    Delta(W_V W_O^T) (bottom) of one seed against the step, from the small scale (left) and from the default scale
    1 (middle), with the switch-on threshold dotted; right, every seed's one-at-a-time statistic at both scales."""
    fig, axes = style.subplots(2, 3, size=(11.5, 4.0), squeeze=False, sharex=False)
    steps = data["steps"]
    for r, (which, name) in enumerate((("kq", KQ), ("vo", VO))):
        for c, (variant, title) in enumerate((("small", "small initialization"), ("default", "scale 1 (control)"))):
            ax = axes[r, c]
            svals = data[f"{which}_{variant}"]
            colours = style.sequence(svals.shape[1])
            for i in range(svals.shape[1]):
                ax.plot(steps, svals[:, i], color=colours[i], label=rf"$\sigma_{{{i + 1}}}$")
            ax.axhline(data["threshold"], color=style.muted, ls=":", lw=0.8)
            if r == 0:
                ax.set_title(f"{title}, seed {data['seed'] + 1}", fontsize="medium")
            if c == 0:
                ax.set_ylabel(rf"$\sigma_i$ of $\Delta {name}$")
        ax = axes[r, 2]
        for c, (variant, label, colour) in enumerate((("small", "small", style.palette[0]),
                                                      ("default", "scale 1", style.muted))):
            values = data[f"{which}_{variant}_settled"]
            ax.plot(np.full(len(values), c), values, "o", color=colour, alpha=0.8)
        ax.axhline(data["settled"], color=style.ink, ls=":", lw=0.8)
        ax.set_xticks([0, 1], ["small", "scale 1"])
        ax.set_xlim(-0.6, 1.6)
        ax.set_ylim(-0.05, 1.2)
        if r == 0:
            ax.set_title("one at a time? (per seed)", fontsize="medium")
    axes[1, 0].set_xlabel("gradient-descent step")
    axes[1, 1].set_xlabel("gradient-descent step")
    _legend(fig, axes[:, :2])
    return fig
