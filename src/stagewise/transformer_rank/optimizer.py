"""Replica-batched element-wise optimizers (Adam or SGD with momentum per replica) and the
learning-rate schedule of Appendix B (linear warmup, then one cosine cycle)."""
from __future__ import annotations

import math

import torch

from stagewise.transformer_rank.model import Params


class ReplicaOptimizer:
    """Element-wise Adam or SGD with momentum, chosen per replica (leading axis of every tensor).

    Identical to ``torch.optim.Adam`` (no weight decay) on Adam replicas and to
    ``torch.optim.SGD(momentum=...)`` on SGD replicas; ``lr`` is per replica and is multiplied
    by the schedule factor passed to :meth:`step`. The optimizers of Section 5 and Appendix B.
    """

    def __init__(self, params: Params, use_adam: list[bool], lr: list[float], momentum: float = 0.9,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.params = list(params.values())
        device = self.params[0].device
        self.adam = torch.tensor(use_adam, device=device)
        self.lr = torch.tensor(lr, device=device, dtype=torch.float32)
        self.momentum, self.betas, self.eps, self.t = momentum, betas, eps, 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.buf = [torch.zeros_like(p) for p in self.params]
        self.any_adam, self.any_sgd = bool(self.adam.any()), bool((~self.adam).any())

    @torch.no_grad()
    def step(self, factor: float = 1.0) -> None:
        """One update of every replica with learning rate ``lr * factor``; clears the gradients."""
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        for p, m, v, buf in zip(self.params, self.m, self.v, self.buf):
            shape = (-1,) + (1,) * (p.dim() - 1)
            lr, adam, g = (self.lr * factor).view(shape), self.adam.view(shape), p.grad
            update = torch.zeros_like(p)
            if self.any_adam:
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                update = torch.where(adam, (m / c1) / ((v / c2).sqrt() + self.eps), update)
            if self.any_sgd:
                buf.copy_(torch.where(adam, buf, buf * self.momentum + g) if self.t > 1 else g)
                update = torch.where(adam, update, buf)
            p.sub_(lr * update)
            p.grad = None


def schedule(step: int, steps: int, warmup: int, decay: bool = True) -> float:
    """Linear warmup over ``warmup`` steps, then cosine decay to zero (paper: "cyclic decay
    with a linear warmup"; one cycle) or, with ``decay=False``, a constant rate (Appendix B)."""
    if step < warmup:
        return (step + 1) / warmup
    if not decay:
        return 1.0
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))
