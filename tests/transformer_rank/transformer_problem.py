"""Tiny problems shared by the transformer-rank tests (not a test module)."""
import torch

from stagewise.transformer_rank.initialization import init_params
from stagewise.transformer_rank.model import Config
from stagewise.transformer_rank.optimizer import ReplicaOptimizer
from stagewise.transformer_rank.training import checkpoint_steps, train


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def tiny(kind="vit"):
    if kind == "vit":
        return Config("vit", depth=2, heads=2, width=8, head_dim=4, mlp_dim=16, tokens=5, inputs=3, classes=4)
    return Config("gpt", depth=2, heads=2, width=8, head_dim=4, mlp_dim=32, tokens=6, inputs=11)


def train_tiny(lr, steps=12):
    cfg = tiny()
    p = init_params(cfg, [1.0, 0.1], seed=0)
    opt = ReplicaOptimizer(p, [True, True], [lr, lr])
    x, y = rand(8, cfg.tokens, cfg.inputs), torch.arange(8) % 4
    ckpt = checkpoint_steps(steps, 4)
    return cfg, train(p, cfg, lambda s: (x, y), opt, steps, ckpt, ["adam_lr"] * 2, [lr, lr])
