"""Plain reference loops that the benchmark compares the batched code against.

:func:`train_reference` trains the same replicas one after another, each with its own
``torch.optim`` optimizer (Adam, or SGD with momentum 0.9) and the same learning-rate
schedule: what :func:`stagewise.transformer_rank.training.train` batches into one computation.
"""
from __future__ import annotations

import torch

from stagewise.transformer_rank.initialization import init_params
from stagewise.transformer_rank.model import Config, replica_loss
from stagewise.transformer_rank.optimizer import schedule


def train_reference(cfg: Config, batch: tuple[torch.Tensor, torch.Tensor], scales: list[float], use_adam: list[bool],
                    lrs: list[float], steps: int, seed: int = 0, device: torch.device | str = "cpu",
                    warmup: int = 0, decay: bool = True, momentum: float = 0.9) -> torch.Tensor:
    """Losses ``(steps, R)`` of the replicas trained one at a time on the fixed ``batch`` with
    ``torch.optim`` (the optimizers of Section 5 / Appendix B; reference for the batched loop)."""
    losses = []
    for scale, is_adam, lr in zip(scales, use_adam, lrs):
        params = init_params(cfg, [scale], seed, device)
        opt = (torch.optim.Adam(params.values(), lr=lr) if is_adam
               else torch.optim.SGD(params.values(), lr=lr, momentum=momentum))
        mine = []
        for step in range(steps):
            for group in opt.param_groups:
                group["lr"] = lr * schedule(step, steps, warmup, decay)
            opt.zero_grad()
            loss = replica_loss(params, cfg, *batch).sum()
            loss.backward()
            opt.step()
            mine.append(loss.detach())
        losses.append(torch.stack(mine))
    return torch.stack(losses, 1).cpu()
