"""Experiment drivers of the transformer-rank chapter (Section 5 and Appendix B).

Runs the vision transformer (Adam at several initialization scales plus SGD, all replicas in
one batched training loop) and the character-level GPT, and returns their checkpointed
spectra of Delta(W_K W_Q^T) and Delta(W_V W_O^T) (Boix-Adsera et al. 2023, Section 5 and
Appendix B; the claims of Assumption asm-transformer-rank-claims). Each experiment draws its
initialization and its minibatches from its own random stream (a CPU ``torch.Generator``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from stagewise.numerics import datasets as data
from stagewise.transformer_rank.initialization import init_params
from stagewise.transformer_rank.model import Config, replica_loss, vit_logits
from stagewise.transformer_rank.optimizer import ReplicaOptimizer
from stagewise.transformer_rank.settings import GptSettings, VitSettings
from stagewise.transformer_rank.spectra import Spectra, checkpoint_spectra
from stagewise.transformer_rank.training import TrainResult, checkpoint_steps, train


@dataclass
class VitRun:
    settings: VitSettings
    result: TrainResult
    spectra: Spectra
    scales: list[float]
    optimizers: list[str]       # "adam" / "sgd" per replica
    cfg: Config
    accuracy: list[float]
    adam_default: int           # replica index: Adam at scale 1
    sgd: int                    # replica index: SGD at scale 1
    images: data.ImageData
    params: dict                # final weights, (R, ...) per tensor
    twin: int = -1              # replica index: Adam at scale 1 from a second initialization draw
    initial: dict | None = None     # initial weights (detached copies), (R, ...) per tensor
    first_batch: tuple | None = None  # the minibatch of the first step (patches, labels)
    lrs: list[float] | None = None    # learning rate per replica
    warmup: int = 0             # warmup steps of the schedule

    @property
    def scale_replicas(self) -> list[int]:
        """The Adam replicas of the scale sweep, smallest scale first (without the twin)."""
        return [r for r, o in enumerate(self.optimizers) if o == "adam" and r != self.twin]


def run_vit(settings: VitSettings, images_seed: int, generator: torch.Generator, device: torch.device,
            progress: Callable | None = None) -> VitRun:
    """Train Adam replicas at every scale in ``init_scales`` (plus 1.0) and one SGD replica at
    scale 1, together, on the same minibatches; return spectra at the checkpoints
    (claims (a)-(c) of Assumption asm-transformer-rank-claims; paper Figs 1, 4-7, 12-15).

    ``images_seed`` fixes the dataset split (digits) or generation (shapes32); ``generator``
    draws the initialization, then the minibatch order.
    """
    s = settings
    images = data.load_images(s.dataset, s.data_dir, images_seed, s.n_images)
    x_train = data.patchify(images.x_train, s.patch).to(device)
    y_train = images.y_train.to(device)
    cfg = Config("vit", s.depth, s.heads, s.width, s.head_dim, s.mlp,
                 tokens=x_train.shape[1], inputs=x_train.shape[2], classes=images.classes)
    scales = sorted(set(s.init_scales) | {1.0})
    optimizers = ["adam"] * (len(scales) + 1) + ["sgd"]
    all_scales = scales + [1.0, 1.0]               # Adam at every scale, the twin (Adam, scale 1, draw 1), SGD
    params = init_params(cfg, all_scales, generator, device, directions=[0] * len(scales) + [1, 0])
    initial = {k: v.detach().clone() for k, v in params.items()}
    lrs = [s.adam_lr if o == "adam" else s.sgd_lr for o in optimizers]
    opt = ReplicaOptimizer(params, [o == "adam" for o in optimizers], lrs)
    batch, n = min(s.batch, len(x_train)), len(x_train)
    state = {"perm": torch.randperm(n, generator=generator), "pos": 0}

    def batches(step: int):
        if state["pos"] + batch > n:   # new epoch: reshuffle (drawn on the CPU)
            state["perm"], state["pos"] = torch.randperm(n, generator=generator), 0
        idx = state["perm"][state["pos"]:state["pos"] + batch].to(device)
        state["pos"] += batch
        state.setdefault("first", (x_train[idx], y_train[idx]))
        return x_train[idx], y_train[idx]

    ckpt = checkpoint_steps(s.steps, s.checkpoints)
    names = [("adam_lr" if o == "adam" else "sgd_lr") for o in optimizers]
    warmup = int(s.warmup_fraction * s.steps)
    result = train(params, cfg, batches, opt, s.steps, ckpt, names, lrs, warmup=warmup,
                   decay=True, mixed_precision=s.mixed_precision, progress=progress)
    accuracy = vit_accuracy(params, cfg, data.patchify(images.x_test, s.patch).to(device), images.y_test.to(device))
    spectra = checkpoint_spectra(result, cfg.heads, cfg.head_dim, device)
    return VitRun(s, result, spectra, all_scales, optimizers, cfg, accuracy, scales.index(1.0), len(scales) + 1,
                  images, params, len(scales), initial, state.get("first"), lrs, warmup)


@torch.no_grad()
def vit_accuracy(params, cfg: Config, x: torch.Tensor, y: torch.Tensor, chunk: int = 256) -> list[float]:
    """Test accuracy of every replica (a list of R floats)."""
    hits = sum((vit_logits(params, cfg, x[i:i + chunk]).argmax(-1) == y[i:i + chunk]).float().sum(1)
               for i in range(0, len(x), chunk))
    return (hits / len(x)).tolist()


@dataclass
class GptRun:
    settings: GptSettings
    result: TrainResult
    spectra: Spectra
    cfg: Config
    text: data.TextData
    test_loss: float
    initial: dict | None = None       # initial weights (detached copies)
    first_batch: tuple | None = None  # the windows of the first step (inputs, targets)
    test_windows: tuple | None = None # the held-out windows of ``test_loss`` (inputs, targets)
    warmup: int = 0


def run_gpt(settings: GptSettings, generator: torch.Generator, device: torch.device,
            progress: Callable | None = None) -> GptRun:
    """Train the char-level GPT on the pydoc topics (first 90 % train, last 10 % held out);
    the GPT-2 experiment of Appendix B (Fig 20; claim (b) of Assumption asm-transformer-rank-claims).
    ``generator`` draws the initialization, then the training windows."""
    s = settings
    text = data.load_pydoc_text()
    codes = text.codes.to(device)
    cfg = Config("gpt", s.depth, s.heads, s.width, s.head_dim, 4 * s.width, tokens=s.block, inputs=len(text.alphabet))
    params = init_params(cfg, [1.0], generator, device)
    initial = {k: v.detach().clone() for k, v in params.items()}
    opt = ReplicaOptimizer(params, [True], [s.lr])
    n_train = int(0.9 * len(codes))
    offsets = torch.arange(s.block + 1)

    def windows(starts: torch.Tensor):
        w = codes[(starts[:, None] + offsets).to(device)]
        return w[:, :-1], w[:, 1:]

    first: list = []

    def batches(step: int):
        pair = windows(torch.randint(0, n_train - s.block - 1, (s.batch,), generator=generator))
        first[:] = first or [pair]
        return pair

    warmup = int(s.warmup_fraction * s.steps)
    result = train(params, cfg, batches, opt, s.steps, checkpoint_steps(s.steps, s.checkpoints), ["gpt_lr"],
                   [s.lr], warmup=warmup, decay=False, mixed_precision=s.mixed_precision, progress=progress)
    with torch.no_grad():
        starts = torch.linspace(n_train, len(codes) - s.block - 2, 64).long()
        test = windows(starts)
        test_loss = float(replica_loss(params, cfg, *test)[0])
    return GptRun(s, result, checkpoint_spectra(result, cfg.heads, cfg.head_dim, device), cfg, text, test_loss,
                  initial, first[0] if first else None, test, warmup)
