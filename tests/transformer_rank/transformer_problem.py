"""Tiny problems shared by the transformer-rank tests (not a test module)."""
import functools

import torch

from stagewise.transformer_rank.experiments import run_gpt, run_vit
from stagewise.transformer_rank.initialization import init_params
from stagewise.transformer_rank.model import Config
from stagewise.transformer_rank.optimizer import ReplicaOptimizer
from stagewise.transformer_rank.settings import GptSettings, VitSettings
from stagewise.transformer_rank.training import checkpoint_steps, train


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def tiny(kind="vit"):
    if kind == "vit":
        return Config("vit", depth=2, heads=2, width=8, head_dim=4, mlp_dim=16, tokens=5, inputs=3, classes=4)
    return Config("gpt", depth=2, heads=2, width=8, head_dim=4, mlp_dim=32, tokens=6, inputs=11)


def train_tiny(lr, steps=12):
    cfg = tiny()
    p = init_params(cfg, [1.0, 0.1], 0)
    opt = ReplicaOptimizer(p, [True, True], [lr, lr])
    x, y = rand(8, cfg.tokens, cfg.inputs), torch.arange(8) % 4
    ckpt = checkpoint_steps(steps, 4)
    return cfg, train(p, cfg, lambda s: (x, y), opt, steps, ckpt, ["adam_lr"] * 2, [lr, lr])


TINY_VIT = VitSettings(dataset="digits", data_dir="", n_images=0, depth=1, heads=2, head_dim=4, width=8, mlp=16,
                       patch=4, steps=8, batch=32, adam_lr=1e-2, sgd_lr=0.05, init_scales=(0.1,),
                       warmup_fraction=0.1, checkpoints=4, mixed_precision=False)
TINY_GPT = GptSettings(depth=1, heads=2, head_dim=4, width=8, block=8, steps=8, batch=4, lr=1e-2,
                       warmup_fraction=0.1, checkpoints=4, mixed_precision=False)


#: The seed of the label permutation of the tiny ViT's shuffled-label controls.
LABEL_SEED = 2


@functools.lru_cache(maxsize=None)
def tiny_runs():
    """One tiny ViT run with its shuffled-label controls (streams seeded 0, labels 2) and one tiny char-GPT run
    (seeded 1), shared by the tests."""
    return (run_vit(TINY_VIT, 0, torch.Generator().manual_seed(0), torch.device("cpu"),
                    label_generator=torch.Generator().manual_seed(LABEL_SEED)),
            run_gpt(TINY_GPT, torch.Generator().manual_seed(1), torch.device("cpu")))


@functools.lru_cache(maxsize=None)
def tiny_gpt_control():
    """The tiny char-GPT trained on the text's characters in random order (the control), same streams."""
    return run_gpt(TINY_GPT, torch.Generator().manual_seed(1), torch.device("cpu"),
                   shuffle_generator=torch.Generator().manual_seed(3))
