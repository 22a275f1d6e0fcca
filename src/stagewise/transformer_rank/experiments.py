"""Experiment drivers and figures of the transformer-rank chapter.

Runs the vision transformer (Adam at several initialization scales plus SGD, all replicas in
one batched training loop) and the character-level GPT, then summarizes the per-head
stable ranks of Delta(W_K W_Q^T) and Delta(W_V W_O^T) from the saved checkpoints
(Boix-Adsera et al. 2023, Section 5 and Appendix B).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import matplotlib.pyplot as plt
import numpy as np
import torch

from stagewise.numerics import datasets as data
from stagewise.transformer_rank.model import (PRESETS, Config, ReplicaOptimizer, Spectra, TrainResult, checkpoint_spectra,
                           checkpoint_steps, head_matrices, init_params, layer_norm, linear, train)

#: GPT preset meant for a GPU (a 6-layer GPT, cf. the paper's GPT-2 run in App. B, block 256).
GPT_PAPER = dict(gpt_depth=6, gpt_heads=8, gpt_head_dim=64, gpt_width=512, gpt_block=256, gpt_lr=3e-4)


def resolve_preset(values: dict[str, Any]) -> dict[str, Any]:
    """Apply ``preset``: ``tiny`` keeps the parameters, ``paper`` swaps in the paper's CIFAR ViT
    (6 layers, 8 heads, width 512, head dim 128, MLP 512, patch 4, Adam 1e-4, SGD 0.3, batch 512)
    and a 6-layer width-512 GPT; step counts stay as given."""
    out = dict(values)
    if values.get("preset") == "paper":
        vit = PRESETS["paper"]
        out.update(vit_depth=vit["depth"], vit_heads=vit["heads"], vit_width=vit["width"],
                   vit_head_dim=vit["head_dim"], vit_mlp=vit["mlp_dim"], vit_patch=vit["patch"],
                   vit_batch=512, adam_lr=1e-4, sgd_lr=0.3, **GPT_PAPER)
    return out


def quarter_index(steps: list[int]) -> int:
    """Index of the checkpoint closest to a quarter of training."""
    target = steps[-1] / 4
    return int(np.argmin([abs(s - target) for s in steps]))


def head_stats(srank: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation over heads (last axis)."""
    return srank.mean(-1).numpy(), srank.std(-1, unbiased=False).numpy()


@dataclass
class VitRun:
    result: TrainResult
    spectra: Spectra
    scales: list[float]
    optimizers: list[str]       # "adam" / "sgd" per replica
    cfg: Config
    accuracy: list[float]
    adam_default: int           # replica index: Adam at scale 1
    sgd: int                    # replica index: SGD at scale 1
    images: data.ImageData


def run_vit(P: dict[str, Any], device: torch.device, progress: Callable | None = None) -> VitRun:
    """Train Adam replicas at every scale in ``init_scales`` (plus 1.0) and one SGD replica at
    scale 1, together, on the same minibatches; return spectra at the checkpoints."""
    images = data.load_images(P["dataset"], P["data_dir"], P["seed"], P["n_images"])
    x_train = data.patchify(images.x_train, P["vit_patch"]).to(device)
    y_train = images.y_train.to(device)
    cfg = Config("vit", P["vit_depth"], P["vit_heads"], P["vit_width"], P["vit_head_dim"], P["vit_mlp"],
                 tokens=x_train.shape[1], inputs=x_train.shape[2], classes=images.classes)
    scales = sorted(set(P["init_scales"]) | {1.0})
    optimizers = ["adam"] * len(scales) + ["sgd"]
    all_scales = scales + [1.0]
    params = init_params(cfg, all_scales, P["seed"], device)
    lrs = [P["adam_lr"] if o == "adam" else P["sgd_lr"] for o in optimizers]
    opt = ReplicaOptimizer(params, [o == "adam" for o in optimizers], lrs)
    gen = torch.Generator().manual_seed(P["seed"] + 1)
    batch, n = min(P["vit_batch"], len(x_train)), len(x_train)
    state = {"perm": torch.randperm(n, generator=gen), "pos": 0}

    def batches(step: int):
        if state["pos"] + batch > n:   # new epoch: reshuffle (drawn on the CPU)
            state["perm"], state["pos"] = torch.randperm(n, generator=gen), 0
        idx = state["perm"][state["pos"]:state["pos"] + batch].to(device)
        state["pos"] += batch
        return x_train[idx], y_train[idx]

    steps = P["vit_steps"]
    ckpt = checkpoint_steps(steps, P["checkpoints"])
    names = [("adam_lr" if o == "adam" else "sgd_lr") for o in optimizers]
    result = train(params, cfg, batches, opt, steps, ckpt, names, lrs, warmup=int(P["warmup_fraction"] * steps),
                   decay=True, mixed_precision=P["mixed_precision"], progress=progress)
    accuracy = vit_accuracy(params, cfg, data.patchify(images.x_test, P["vit_patch"]).to(device),
                            images.y_test.to(device))
    spectra = checkpoint_spectra(result, cfg.heads, cfg.head_dim, device)
    result.extra["params"] = params
    return VitRun(result, spectra, all_scales, optimizers, cfg, accuracy, scales.index(1.0), len(scales), images)


@torch.no_grad()
def vit_accuracy(params, cfg: Config, x: torch.Tensor, y: torch.Tensor, chunk: int = 1024) -> list[float]:
    from stagewise.transformer_rank.model import vit_logits
    hits = sum((vit_logits(params, cfg, x[i:i + chunk]).argmax(-1) == y[i:i + chunk]).float().sum(1)
               for i in range(0, len(x), chunk))
    return (hits / len(x)).tolist()


@dataclass
class GptRun:
    result: TrainResult
    spectra: Spectra
    cfg: Config
    text: data.TextData
    test_loss: float


def run_gpt(P: dict[str, Any], device: torch.device, progress: Callable | None = None) -> GptRun:
    """Train the char-level GPT on the pydoc topics (first 90 % train, last 10 % held out)."""
    text = data.load_pydoc_text()
    codes = text.codes.to(device)
    block, batch = P["gpt_block"], P["gpt_batch"]
    cfg = Config("gpt", P["gpt_depth"], P["gpt_heads"], P["gpt_width"], P["gpt_head_dim"], 4 * P["gpt_width"],
                 tokens=block, inputs=len(text.alphabet))
    params = init_params(cfg, [1.0], P["seed"], device)
    opt = ReplicaOptimizer(params, [True], [P["gpt_lr"]])
    gen = torch.Generator().manual_seed(P["seed"] + 2)
    n_train = int(0.9 * len(codes))
    offsets = torch.arange(block + 1)

    def windows(starts: torch.Tensor):
        w = codes[(starts[:, None] + offsets).to(device)]
        return w[:, :-1], w[:, 1:]

    def batches(step: int):
        return windows(torch.randint(0, n_train - block - 1, (batch,), generator=gen))

    steps = P["gpt_steps"]
    result = train(params, cfg, batches, opt, steps, checkpoint_steps(steps, P["checkpoints"]), ["gpt_lr"],
                   [P["gpt_lr"]], warmup=int(P["warmup_fraction"] * steps), decay=False,
                   mixed_precision=P["mixed_precision"], progress=progress)
    from stagewise.transformer_rank.model import replica_loss
    with torch.no_grad():
        starts = torch.linspace(n_train, len(codes) - block - 2, 64).long()
        test_loss = float(replica_loss(params, cfg, *windows(starts))[0])
    return GptRun(result, checkpoint_spectra(result, cfg.heads, cfg.head_dim, device), cfg, text, test_loss)


@torch.no_grad()
def extraction_error(params, cfg: Config, patches: torch.Tensor, replica: int = 0) -> float:
    """Relative max error between the model's attention logits ``q_i . k_j`` of every head of
    the first layer and ``x_i^T (W_K W_Q^T)^T x_j`` built from :func:`head_matrices`, where
    X is the LayerNormed input of that layer in the ViT's own forward pass."""
    R = params["embed"].shape[0]
    z = linear(patches.unsqueeze(0), params["embed"], params["embed_b"])
    z = torch.cat([params["cls"].unsqueeze(1).expand(R, len(patches), 1, cfg.width), z], 2) + params["pos"].unsqueeze(1)
    x = layer_norm(z, params["blocks.0.ln1_g"], params["blocks.0.ln1_b"])[replica]      # (B, T, D)
    q, k, _ = linear(x.unsqueeze(0), params["blocks.0.qkv"][replica:replica + 1])[0].view(
        *x.shape[:2], 3, cfg.heads, cfg.head_dim).unbind(2)
    direct = torch.einsum("bihd,bjhd->bhij", q, k).double()
    kq, _ = head_matrices(params["blocks.0.qkv"][replica], params["blocks.0.out"][replica], cfg.heads, cfg.head_dim)
    xd = x.double()
    via = torch.einsum("bid,hed,bje->bhij", xd, kq, xd)   # x_i^T (W_Q W_K^T) x_j with KQ[e, d] = (W_K W_Q^T)[e, d]
    return float((direct - via).abs().max() / via.abs().max())


# --------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------
KQ_COLOUR, VO_COLOUR = "tab:blue", "tab:orange"


def _band(ax, steps, srank, colour, label):
    mean, std = head_stats(srank)
    ax.plot(steps, mean, color=colour, label=label)
    ax.fill_between(steps, mean - std, mean + std, color=colour, alpha=0.25, lw=0)


def fig_spectra(vit: VitRun, replica: int, head: int = 0, picks: int = 4) -> plt.Figure:
    """Normalized spectra s_i / s_1 of W_K W_Q^T (W_V W_O^T) at init against Delta at checkpoints."""
    sp, steps = vit.spectra, vit.result.steps
    L = vit.cfg.depth
    fig, axes = plt.subplots(2, L, figsize=(3.2 * L, 5.2), squeeze=False, sharey=True)
    chosen = np.unique(np.linspace(1, len(steps) - 1, picks).round().astype(int))
    greens = plt.cm.Greens(np.linspace(0.4, 1.0, len(chosen)))
    for row, (init, delta, name) in enumerate([(sp.init_kq, sp.delta_kq, r"W_KW_Q^\top"),
                                               (sp.init_vo, sp.delta_vo, r"W_VW_O^\top")]):
        for layer in range(L):
            ax = axes[row, layer]
            s0 = init[replica, layer, head].numpy()
            idx = np.arange(1, len(s0) + 1)
            ax.semilogy(idx, s0 / s0[0], color="tab:red", lw=2, label="init")
            for colour, c in zip(greens, chosen):
                s = delta[c, replica, layer, head].numpy()
                ax.semilogy(idx, s / s[0], color=colour, label=rf"$\Delta$, step {steps[c]}")
            ax.set_ylim(1e-4, 1.5)
            ax.set_xlim(1, 3 * vit.cfg.head_dim)
            ax.set_title(f"${name}$, layer {layer + 1}, head {head + 1}", fontsize=9)
            ax.set_xlabel("index $i$")
        axes[row, 0].set_ylabel(r"$\sigma_i/\sigma_1$")
    axes[0, -1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def fig_srank(runs: list[tuple[str, list[int], torch.Tensor, torch.Tensor]], depth: int) -> plt.Figure:
    """Rows: runs (label, steps, srank KQ (C, L, H), srank VO); columns: layers. Mean +- std over heads."""
    fig, axes = plt.subplots(len(runs), depth, figsize=(3.2 * depth, 2.6 * len(runs)), squeeze=False)
    for row, (label, steps, kq, vo) in enumerate(runs):
        for layer in range(depth):
            ax = axes[row, layer]
            _band(ax, steps[1:], kq[1:, layer], KQ_COLOUR, r"$\Delta W_KW_Q^\top$")
            _band(ax, steps[1:], vo[1:, layer], VO_COLOUR, r"$\Delta W_VW_O^\top$")
            ax.set_title(f"{label}, layer {layer + 1}", fontsize=9)
            ax.set_xlabel("step")
        axes[row, 0].set_ylabel("stable rank")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def fig_scale_svals(vit: VitRun, layer: int, head: int = 0, top: int = 8) -> plt.Figure:
    """Top singular values of Delta for one head against step, one column per Adam scale."""
    adam = [r for r, o in enumerate(vit.optimizers) if o == "adam"]
    steps = vit.result.steps
    fig, axes = plt.subplots(2, len(adam), figsize=(3.0 * len(adam), 5.0), squeeze=False, sharex=True)
    colours = plt.cm.viridis(np.linspace(0, 0.9, top))
    for col, r in enumerate(adam):
        for row, (delta, name) in enumerate([(vit.spectra.delta_kq, r"\Delta W_KW_Q^\top"),
                                             (vit.spectra.delta_vo, r"\Delta W_VW_O^\top")]):
            ax = axes[row, col]
            s = delta[1:, r, layer, head, :top].numpy()
            for i in range(top):
                ax.semilogy(steps[1:], s[:, i], color=colours[i], lw=1.2, label=rf"$\sigma_{i + 1}$")
            ax.set_title(f"${name}$, scale {vit.scales[r]:g}", fontsize=9)
            if row == 1:
                ax.set_xlabel("step")
        axes[0, col].set_ylim(bottom=max(axes[0, col].get_ylim()[0], 1e-4 * axes[0, col].get_ylim()[1]))
        axes[1, col].set_ylim(bottom=max(axes[1, col].get_ylim()[0], 1e-4 * axes[1, col].get_ylim()[1]))
    axes[0, 0].set_ylabel("singular value")
    axes[1, 0].set_ylabel("singular value")
    axes[0, -1].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig


def fig_scale_srank(vit: VitRun) -> plt.Figure:
    """Final stable rank against init scale, per layer (mean +- std over heads), KQ and VO."""
    adam = [r for r, o in enumerate(vit.optimizers) if o == "adam"]
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


def fig_gpt(gpt: GptRun) -> plt.Figure:
    """Stable rank of Delta W_V W_O^T and Delta W_Q W_K^T per layer, and the training loss."""
    steps = gpt.result.steps
    L = gpt.cfg.depth
    fig, axes = plt.subplots(1, L + 1, figsize=(3.2 * (L + 1), 2.8), squeeze=False)
    kq, vo = gpt.spectra.srank("delta_kq")[:, 0], gpt.spectra.srank("delta_vo")[:, 0]
    for layer in range(L):
        ax = axes[0, layer]
        _band(ax, steps[1:], vo[1:, layer], VO_COLOUR, r"$\Delta W_VW_O^\top$")
        _band(ax, steps[1:], kq[1:, layer], KQ_COLOUR, r"$\Delta W_QW_K^\top$")
        ax.set_title(f"char-GPT, layer {layer + 1}", fontsize=9)
        ax.set_xlabel("step")
    axes[0, 0].set_ylabel("stable rank")
    axes[0, 0].legend(fontsize=7)
    loss = gpt.result.losses[:, 0].numpy()
    k = max(1, len(loss) // 50)
    axes[0, L].plot(np.convolve(loss, np.ones(k) / k, mode="valid"), color="black")
    axes[0, L].set_title("training loss (running mean)", fontsize=9)
    axes[0, L].set_xlabel("step")
    fig.tight_layout()
    return fig
