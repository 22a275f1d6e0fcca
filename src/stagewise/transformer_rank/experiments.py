"""Experiment drivers of the transformer-rank chapter (Section 5 and Appendix B).

Runs the vision transformer (Adam at several initialization scales plus SGD, and their shuffled-label
controls, all replicas in one batched training loop) and the character-level GPT (on the text, or on its
characters in random order, the control), and returns their checkpointed spectra of Delta(W_K W_Q^T) and
Delta(W_V W_O^T) (Boix-Adsera et al. 2023, Section 5 and Appendix B; the chapter's observations
obs-transformer-rank-low, -growth and -scale). Each experiment draws its initialization and its minibatches from
its own random stream (a CPU ``torch.Generator``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
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
    first_batch: tuple | None = None  # the minibatch of the first step (patches, labels (B,) or (R, B))
    lrs: list[float] | None = None    # learning rate per replica
    warmup: int = 0             # warmup steps of the schedule
    shuffled: dict[int, int] = field(default_factory=dict)   # replica -> its shuffled-label copy (the control)
    labels: list[str] = field(default_factory=list)          # "true" / "shuffled" per replica
    y_shuffled: torch.Tensor | None = None   # the shuffled training labels (None: no controls)

    @property
    def scale_replicas(self) -> list[int]:
        """The Adam replicas of the scale sweep on the true labels, smallest scale first (without the twin)."""
        return [r for r, o in enumerate(self.optimizers)
                if o == "adam" and r != self.twin and self.labels[r] != "shuffled"]


def shuffled_labels(labels: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The training labels under one random permutation (drawn on the CPU from ``generator``): the images keep
    their order, so the labels carry no information about them (the control of every growth, scale and
    low-rank claim: a network that can only memorize)."""
    return labels[torch.randperm(len(labels), generator=generator)]


def _minibatches(x_train, y_train, y_shuffled, shuffled_mask, batch, generator, device):
    """The ViT's minibatch source: a reshuffle of the training set per epoch drawn from ``generator``; labels
    ``(R, B)`` when some replicas train on shuffled labels (``shuffled_mask``), else ``(B,)``."""
    n = len(x_train)
    state = {"perm": torch.randperm(n, generator=generator), "pos": 0}

    def batches(step: int):
        if state["pos"] + batch > n:   # new epoch: reshuffle (drawn on the CPU)
            state["perm"], state["pos"] = torch.randperm(n, generator=generator), 0
        idx = state["perm"][state["pos"]:state["pos"] + batch].to(device)
        state["pos"] += batch
        y = y_train[idx]
        if shuffled_mask is not None:
            y = torch.where(shuffled_mask[:, None], y_shuffled[idx][None], y[None])           # (R, B)
        state.setdefault("first", (x_train[idx], y))
        return x_train[idx], y
    return batches, state


def train_vit_replicas(settings: VitSettings, steps: int, cfg: Config, params: dict, optimizers: list[str],
                       labels: list[str], x_train, y_train, y_shuffled, generator: torch.Generator,
                       device: torch.device, progress: Callable | None = None) -> tuple[TrainResult, tuple]:
    """Train the ViT replicas ``params`` together for ``steps`` steps (warmup and one cosine cycle scaled to
    ``steps``) on shared minibatches drawn from ``generator``; replica r sees the true labels or, when
    ``labels[r] == "shuffled"``, ``y_shuffled``. Returns the checkpointed weights and the first minibatch."""
    s = settings
    lrs = [s.adam_lr if o == "adam" else s.sgd_lr for o in optimizers]
    opt = ReplicaOptimizer(params, [o == "adam" for o in optimizers], lrs)
    mask = torch.tensor([lab == "shuffled" for lab in labels], device=device)
    batches, state = _minibatches(x_train, y_train, y_shuffled, mask if bool(mask.any()) else None,
                                  min(s.batch, len(x_train)), generator, device)
    names = [("adam_lr" if o == "adam" else "sgd_lr") for o in optimizers]
    result = train(params, cfg, batches, opt, steps, checkpoint_steps(steps, s.checkpoints), names, lrs,
                   warmup=int(s.warmup_fraction * steps), decay=True, mixed_precision=s.mixed_precision,
                   progress=progress)
    return result, state.get("first")


def run_vit(settings: VitSettings, images_seed: int, generator: torch.Generator, device: torch.device,
            progress: Callable | None = None, label_generator: torch.Generator | None = None) -> VitRun:
    """Train Adam replicas at every scale in ``init_scales`` (plus 1.0), a second draw at scale 1 (the twin) and
    one SGD replica at scale 1, together, on the same minibatches; with ``label_generator``, also copies of the
    Adam replicas at the smallest scale, at 1 and at the largest scale and of the SGD replica, from the same
    initial weights, trained on shuffled labels (the controls). Return spectra at the checkpoints (claims (a)-(c)
    of the chapter's observations; paper Figs 1, 4-7, 12-15).

    ``images_seed`` fixes the dataset split (digits) or generation (shapes32); ``generator`` draws the
    initialization, then the minibatch order; ``label_generator`` the permutation of the shuffled labels.
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
    directions = [0] * len(scales) + [1, 0]
    labels = ["true"] * len(all_scales)
    shuffled: dict[int, int] = {}
    y_shuffled = None
    if label_generator is not None:                # the controls: same start, shuffled labels
        y_shuffled = shuffled_labels(images.y_train, label_generator).to(device)
        for r in sorted({0, scales.index(1.0), len(scales) - 1}) + [len(scales) + 1]:
            shuffled[r] = len(all_scales)
            all_scales.append(all_scales[r]); optimizers.append(optimizers[r]); directions.append(directions[r])
            labels.append("shuffled")
    params = init_params(cfg, all_scales, generator, device, directions=directions)
    initial = {k: v.detach().clone() for k, v in params.items()}
    result, first = train_vit_replicas(s, s.steps, cfg, params, optimizers, labels, x_train, y_train, y_shuffled,
                                       generator, device, progress)
    accuracy = vit_accuracy(params, cfg, data.patchify(images.x_test, s.patch).to(device), images.y_test.to(device))
    spectra = checkpoint_spectra(result, cfg.heads, cfg.head_dim, device)
    lrs = [s.adam_lr if o == "adam" else s.sgd_lr for o in optimizers]
    return VitRun(s, result, spectra, all_scales, optimizers, cfg, accuracy, scales.index(1.0), len(scales) + 1,
                  images, params, len(scales), initial, first, lrs, int(s.warmup_fraction * s.steps), shuffled,
                  labels, None if y_shuffled is None else y_shuffled.cpu())


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
            progress: Callable | None = None, shuffle_generator: torch.Generator | None = None) -> GptRun:
    """Train the char-level GPT on the pydoc topics (first 90 % train, last 10 % held out);
    the GPT-2 experiment of Appendix B (Fig 20; claim (b) of the chapter's observations).
    ``generator`` draws the initialization, then the training windows. With ``shuffle_generator`` the
    characters of the whole text are first put in a random order (the control: the same characters, no context
    to learn from; with the same ``generator`` state, the same initialization and window positions)."""
    s = settings
    text = data.load_pydoc_text()
    codes = text.codes
    if shuffle_generator is not None:
        codes = codes[torch.randperm(len(codes), generator=shuffle_generator)]
    codes = codes.to(device)
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
