"""The replica-batched training loop that checkpoints the attention weights (Section 5, App. B).

All replicas train together on the same minibatches; the weights ``to_qkv`` / ``to_out`` of
every layer are saved at the checkpoint steps, so the spectra are computed afterwards in
batch (:func:`stagewise.transformer_rank.spectra.checkpoint_spectra`).
"""
from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from stagewise.numerics.flows import assert_finite
from stagewise.transformer_rank.model import Config, Params, replica_loss
from stagewise.transformer_rank.optimizer import ReplicaOptimizer, schedule


@dataclass
class TrainResult:
    """Losses per step and replica, and the attention weights at the checkpoint steps."""
    steps: list[int]
    qkv: torch.Tensor          # (C, R, L, 3 H d_h, D) float32 on the CPU
    out: torch.Tensor          # (C, R, L, D, H d_h)
    losses: torch.Tensor       # (steps, R)
    seconds_per_step: float = 0.0


def checkpoint_steps(steps: int, count: int) -> list[int]:
    """``count`` checkpoints from 0 to ``steps``, geometrically spaced early, then uniform (plus step 0,
    half of training and the end, and the steps just before the half and the end: the last step of the
    schedule and its control, Proposition prop-transformer-rank-adam-bound)."""
    uniform = torch.linspace(0, steps, count).round().long().tolist()
    early = torch.logspace(0, math.log10(max(2, steps // 8)), 6).round().long().tolist()
    return sorted(set(uniform) | set(early) | {0, max(0, steps // 2 - 1), steps // 2, steps - 1, steps})


def snapshot(params: Params, depth: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The fused attention weights ``(qkv, out)`` of every layer, stacked ``(R, L, ...)``, float32 CPU copies."""
    qkv = torch.stack([params[f"blocks.{l}.qkv"].detach() for l in range(depth)], 1)
    out = torch.stack([params[f"blocks.{l}.out"].detach() for l in range(depth)], 1)
    return qkv.float().cpu().clone(), out.float().cpu().clone()


def train(params: Params, cfg: Config, batches: Callable[[int], tuple[torch.Tensor, torch.Tensor]],
          optimizer: ReplicaOptimizer, steps: int, ckpt: list[int], lr_names: list[str], lr_values: list[float],
          warmup: int = 0, decay: bool = True, mixed_precision: bool = False,
          progress: Callable[[Iterator[int]], Iterator[int]] | None = None) -> TrainResult:
    """Train all replicas together; checkpoint attention weights at the steps in ``ckpt``.

    The training of Section 5 / Appendix B (cross-entropy, warmup + cosine schedule).
    ``batches(step)`` returns the minibatch (shared by the replicas). A non-finite loss of
    replica r stops training with a one-line error naming ``lr_names[r]`` (the learning rate
    to lower). ``mixed_precision`` enables bfloat16 autocast (CUDA only).
    """
    device = next(iter(params.values())).device
    amp = mixed_precision and device.type == "cuda"
    snaps = {0: snapshot(params, cfg.depth)} if 0 in ckpt else {}
    losses = []
    started = time.perf_counter()
    loop = range(steps) if progress is None else progress(range(steps))
    for step in loop:
        x, y = batches(step)
        ctx = torch.autocast("cuda", dtype=torch.bfloat16) if amp else contextlib.nullcontext()
        with ctx:
            loss = replica_loss(params, cfg, x, y)
        loss.sum().backward()
        value = loss.detach()
        if not bool(torch.isfinite(value).all()):
            r = int((~torch.isfinite(value)).nonzero()[0])
            assert_finite(lr_names[r], lr_values[r], step, value[r], hint=f"lower {lr_names[r]}")
        optimizer.step(schedule(step, steps, warmup, decay))
        losses.append(value)
        if step + 1 in ckpt:
            snaps[step + 1] = snapshot(params, cfg.depth)
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - started
    order = sorted(snaps)
    stack = (lambda i: torch.stack([snaps[s][i] for s in order])) if order else (lambda i: torch.empty(0))
    return TrainResult(order, stack(0), stack(1), torch.stack(losses).cpu(), elapsed / max(1, steps))
