"""Figures of the transformer-rank chapter: normalized spectra, stable rank during training,
and the initialization-scale sweep (our versions of the paper's Figures 1, 4-7, 12-15 and 20)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from stagewise.transformer_rank.experiments import GptRun, VitRun

KQ_COLOUR, VO_COLOUR = "tab:blue", "tab:orange"


def head_stats(srank: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation over heads (last axis)."""
    return srank.mean(-1).cpu().numpy(), srank.std(-1, unbiased=False).cpu().numpy()


def _band(ax, steps, srank, colour, label):
    mean, std = head_stats(srank)
    ax.plot(steps, mean, color=colour, label=label)
    ax.fill_between(steps, mean - std, mean + std, color=colour, alpha=0.25, lw=0)


def fig_spectra(vit: VitRun, replica: int, head: int = 0, picks: int = 4) -> plt.Figure:
    """Normalized spectra s_i / s_1 of W_K W_Q^T (W_V W_O^T) at init against Delta at checkpoints
    (paper Figs 1, 5, 14; claim (a) of Assumption asm-transformer-rank-claims)."""
    sp, steps = vit.spectra, vit.result.steps
    L = vit.cfg.depth
    fig, axes = plt.subplots(2, L, figsize=(3.2 * L, 5.2), squeeze=False, sharey=True)
    chosen = np.unique(np.linspace(1, len(steps) - 1, picks).round().astype(int))
    greens = plt.cm.Greens(np.linspace(0.4, 1.0, len(chosen)))
    for row, (init, delta, name) in enumerate([(sp.init_kq, sp.delta_kq, r"W_KW_Q^\top"),
                                               (sp.init_vo, sp.delta_vo, r"W_VW_O^\top")]):
        for layer in range(L):
            ax = axes[row, layer]
            s0 = init[replica, layer, head].cpu().numpy()
            idx = np.arange(1, len(s0) + 1)
            ax.semilogy(idx, s0 / s0[0], color="tab:red", lw=2, label="init")
            for colour, c in zip(greens, chosen):
                s = delta[c, replica, layer, head].cpu().numpy()
                ax.semilogy(idx, s / s[0], color=colour, label=rf"$\Delta$, step {steps[c]}")
            ax.set_ylim(1e-4, 1.5)
            ax.set_xlim(1, 3 * vit.cfg.head_dim)
            ax.set_title(f"${name}$, layer {layer + 1}, head {head + 1}", fontsize=9)
            ax.set_xlabel("index $i$")
        axes[row, 0].set_ylabel(r"$\sigma_i/\sigma_1$")
    axes[0, -1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def _srank_panels(axes, label: str, steps, kq: torch.Tensor, vo: torch.Tensor, kq_name: str = r"W_KW_Q^\top",
                  vo_first: bool = False) -> None:
    """One panel per layer: stable rank of Delta KQ and Delta VO (mean +- std over heads) from step 1 on."""
    bands = [(kq, KQ_COLOUR, rf"$\Delta {kq_name}$"), (vo, VO_COLOUR, r"$\Delta W_VW_O^\top$")]
    for layer, ax in enumerate(axes):
        for sr, colour, name in (bands[::-1] if vo_first else bands):
            _band(ax, steps[1:], sr[1:, layer], colour, name)
        ax.set_title(f"{label}, layer {layer + 1}", fontsize=9)
        ax.set_xlabel("step")


def fig_srank(runs: list[tuple[str, list[int], torch.Tensor, torch.Tensor]], depth: int,
              references: list[list[int]] | None = None) -> plt.Figure:
    """Rows: runs (label, steps, srank KQ (C, L, H), srank VO); columns: layers. Mean +- std over heads
    of the stable rank during training (paper Figs 4, 12, 15; claim (b)). ``references[row]`` holds the
    steps where the transients of the KQ and VO curves end, drawn as dotted lines in their colours."""
    fig, axes = plt.subplots(len(runs), depth, figsize=(3.2 * depth, 2.6 * len(runs)), squeeze=False)
    for row, (label, steps, kq, vo) in enumerate(runs):
        _srank_panels(axes[row], label, steps, kq, vo)
        for step, colour in zip(references[row] if references else [], (KQ_COLOUR, VO_COLOUR)):
            for ax in axes[row]:
                ax.axvline(step, color=colour, ls=":", lw=1)
        axes[row, 0].set_ylabel("stable rank")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def fig_scale_svals(vit: VitRun, layer: int, head: int = 0, top: int = 8) -> plt.Figure:
    """Top singular values of Delta for one head against step, one column per Adam scale
    (paper Fig 6; claim (c))."""
    adam = vit.scale_replicas
    steps = vit.result.steps
    fig, axes = plt.subplots(2, len(adam), figsize=(3.0 * len(adam), 5.0), squeeze=False, sharex=True)
    colours = plt.cm.viridis(np.linspace(0, 0.9, top))
    for col, r in enumerate(adam):
        for row, (delta, name) in enumerate([(vit.spectra.delta_kq, r"\Delta W_KW_Q^\top"),
                                             (vit.spectra.delta_vo, r"\Delta W_VW_O^\top")]):
            ax = axes[row, col]
            s = delta[1:, r, layer, head, :top].cpu().numpy()
            for i in range(top):
                ax.semilogy(steps[1:], s[:, i], color=colours[i], lw=1.2, label=rf"$\sigma_{i + 1}$")
            ax.set_title(f"${name}$, scale {vit.scales[r]:g}", fontsize=9)
            if row == 1:
                ax.set_xlabel("step")
        for ax in axes[:, col]:
            low, high = ax.get_ylim()
            ax.set_ylim(bottom=max(low, 1e-4 * high))
    for ax in axes[:, 0]:
        ax.set_ylabel("singular value")
    axes[0, -1].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig


def fig_scale_srank(vit: VitRun) -> plt.Figure:
    """Final stable rank against init scale, per layer (mean +- std over heads), KQ and VO
    (paper Fig 7; claim (c))."""
    adam = vit.scale_replicas
    scales = [vit.scales[r] for r in adam]
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for ax, which, name in [(axes[0], "delta_kq", r"$\Delta W_KW_Q^\top$"), (axes[1], "delta_vo", r"$\Delta W_VW_O^\top$")]:
        final = vit.spectra.srank(which)[-1][adam]                              # (S, L, H)
        for layer in range(vit.cfg.depth):
            mean, std = head_stats(final[:, layer])
            ax.errorbar(scales, mean, yerr=std, marker="o", capsize=3, label=f"layer {layer + 1}")
        ax.set_xscale("log")
        ax.set_xlabel("initialization scale")
        ax.set_ylabel("final stable rank")
        ax.set_title(name, fontsize=10)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def fig_gpt(gpt: GptRun, references: list[int] | None = None) -> plt.Figure:
    """Stable rank of Delta W_V W_O^T and Delta W_Q W_K^T per layer, and the running mean of the
    training loss (paper Fig 20; claim (b)). ``references``: the steps where the transients of the
    QK and VO curves end (dotted lines)."""
    steps = gpt.result.steps
    L = gpt.cfg.depth
    fig, axes = plt.subplots(1, L + 1, figsize=(3.2 * (L + 1), 2.8), squeeze=False)
    kq, vo = gpt.spectra.srank("delta_kq")[:, 0], gpt.spectra.srank("delta_vo")[:, 0]
    _srank_panels(axes[0, :L], "char-GPT", steps, kq, vo, kq_name=r"W_QW_K^\top", vo_first=True)
    for step, colour in zip(references or [], (KQ_COLOUR, VO_COLOUR)):
        for ax in axes[0, :L]:
            ax.axvline(step, color=colour, ls=":", lw=1)
    axes[0, 0].set_ylabel("stable rank")
    axes[0, 0].legend(fontsize=7)
    loss = gpt.result.losses[:, 0].cpu().numpy()
    k = max(1, len(loss) // 50)
    axes[0, L].plot(np.convolve(loss, np.ones(k) / k, mode="valid"), color="black")
    axes[0, L].set_title("training loss (running mean)", fontsize=9)
    axes[0, L].set_xlabel("step")
    fig.tight_layout()
    return fig


def fig_toy(toy) -> plt.Figure:
    """Teacher-student regime (:mod:`stagewise.transformer_rank.teacher`): srank of Delta(W_K W_Q^T) and
    Delta(W_V W_O^T) against the step, one thin line per seed, for the small scale, the default scale and the
    rank-one teacher; dotted: the teacher's own stable rank (paper Fig 2, full weights)."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    styles = (("small", "tab:blue", "-", "small scale"), ("default", "tab:gray", "-", "default scale"),
              ("rank1", "tab:orange", "--", "teacher cut to rank one"))
    for ax, (which, name) in zip(axes, (("kq", r"W_KW_Q^\top"), ("vo", r"W_VW_O^\top"))):
        curves = getattr(toy, which)
        for variant, colour, ls, label in styles:
            c = curves[variant].cpu().numpy()
            for k in range(c.shape[1]):
                ax.plot(toy.steps[1:], c[1:, k], color=colour, ls=ls, lw=1, alpha=0.7,
                        label=label if k == 0 else None)
        ax.axhline(toy.teacher_srank, color="k", ls=":", lw=1, label="teacher")
        ax.set_title(rf"srank $\Delta({name})$")
        ax.set_xlabel("gradient-descent step")
    axes[0].set_ylabel("stable rank")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig
