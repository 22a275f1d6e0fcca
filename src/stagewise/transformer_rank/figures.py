"""Figures of the transformer-rank chapter: normalized spectra, stable rank during training, the
initialization-scale sweep, the char-GPT and the teacher-student regime (our versions of the paper's Figures 1, 2,
4-7, 12-15 and 20). Pure render functions ``render(data, style) -> Figure`` of the data that
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


def _srank_panels(axes, title: str, row: dict, style, kq_name: str = KQ, vo_first: bool = False) -> None:
    """One panel per layer: stable rank of Delta KQ (first colour) and Delta VO (second colour), mean +- std over
    heads, with dotted lines at the ends of the transients (``row["references"]``: KQ's, then VO's)."""
    kq_colour, vo_colour = style.palette[0], style.palette[1]
    bands = [("kq", kq_colour, rf"$\Delta {kq_name}$"), ("vo", vo_colour, rf"$\Delta {VO}$")]
    for layer, ax in enumerate(axes):
        for which, colour, name in (bands[::-1] if vo_first else bands):
            _band(ax, row["steps"], row[f"{which}_mean"][:, layer], row[f"{which}_std"][:, layer], colour, name)
        for step, colour in zip(row["references"], (kq_colour, vo_colour)):
            ax.axvline(step, color=colour, ls=":")
        if len(row["references"]):      # a legend entry for both dotted lines (each in its curve's colour)
            ax.plot([], [], color=style.muted, ls=":", label="end of transient")
        ax.set_title(f"{title}, layer {layer + 1}", fontsize="medium")


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
    14; claim (a) of Assumption asm-transformer-rank-claims)."""
    rows, steps = data["rows"], data["steps"]
    depth = rows["kq"]["init"].shape[0]
    fig, axes = style.subplots(2, depth, size=(3.2 * depth + 1.6, 5.2), squeeze=False, sharey=True, sharex=True)
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


def srank(data: dict, style) -> plt.Figure:
    """``fig-transformer-rank-srank``: rows, runs (Adam, SGD); columns, layers. Mean +- std over heads of the
    stable rank of Delta KQ and Delta VO during training (paper Figs 4, 12, 15; claim (b)); dotted, the steps where
    the transients end."""
    rows = list(data["rows"].values())
    depth = rows[0]["kq_mean"].shape[1]
    fig, axes = style.subplots(len(rows), depth, size=(3.2 * depth + 1.8, 2.6 * len(rows)), squeeze=False)
    for r, row in enumerate(rows):
        _srank_panels(axes[r], row["label"], row, style)
        axes[r, 0].set_ylabel("stable rank")
    fig.supxlabel("step", fontsize=_label_size(style))
    _legend(fig, axes)
    return fig


def scale_svals(data: dict, style) -> plt.Figure:
    """``fig-transformer-rank-scale-svals``: the top singular values of Delta for one head against the step, one
    column per Adam initialization scale (paper Fig 6; claim (c))."""
    scales, steps = data["scales"], data["steps"]
    top = data["kq"].shape[-1]
    fig, axes = style.subplots(2, len(scales), size=(3.0 * len(scales) + 1.2, 5.0), squeeze=False, sharex=True)
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
    fig, axes = style.subplots(1, 2, size=(9, 3.2), squeeze=False)
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


def gpt(data: dict, style) -> plt.Figure:
    """``fig-transformer-rank-gpt``: stable rank of Delta W_V W_O^T and Delta W_Q W_K^T per layer, and the running
    mean of the training loss (paper Fig 20; claim (b)); dotted, the ends of the QK and VO transients."""
    depth = data["kq_mean"].shape[1]
    fig, axes = style.subplots(1, depth + 1, size=(3.2 * (depth + 1) + 1.8, 2.8), squeeze=False)
    _srank_panels(axes[0, :depth], "char-GPT", data, style, kq_name=r"W_QW_K^\top", vo_first=True)
    axes[0, 0].set_ylabel("stable rank")
    loss = axes[0, depth]
    loss.plot(data["loss_steps"], data["loss"], color=style.ink)
    loss.set_title("loss (running mean)", fontsize="medium")
    fig.supxlabel("step", fontsize=_label_size(style))
    _legend(fig, axes[0, :depth])
    return fig


def toy(data: dict, style) -> plt.Figure:
    """``fig-transformer-rank-toy``: teacher-student regime, srank of Delta(W_K W_Q^T) and Delta(W_V W_O^T) against
    the step, one thin line per seed, for the small scale, the default scale and the rank-one teacher; dotted: the
    teacher's own stable rank (paper Fig 2, full weights)."""
    fig, axes = style.subplots(1, 2, size=(10.5, 3.4), sharey=True, squeeze=False)
    variants = (("small", style.palette[0], "-", "small scale"), ("default", style.muted, "-", "default scale"),
                ("rank1", style.palette[1], "--", "teacher cut to rank one"))
    width = 0.7 * style.rc.get("lines.linewidth", 1.5)
    for ax, which, name in zip(axes[0], ("kq", "vo"), (KQ, VO)):
        for variant, colour, ls, label in variants:
            curves = data[which][variant]
            for k in range(curves.shape[1]):
                ax.plot(data["steps"], curves[:, k], color=colour, ls=ls, lw=width, alpha=0.7,
                        label=label if k == 0 else None)
        ax.axhline(data["teacher_srank"], color=style.ink, ls=":", lw=width, label="teacher")
        ax.set_title(rf"srank $\Delta({name})$", fontsize="medium")
    axes[0, 0].set_ylabel("stable rank")
    fig.supxlabel("gradient-descent step", fontsize=_label_size(style))
    _legend(fig, axes)
    return fig
