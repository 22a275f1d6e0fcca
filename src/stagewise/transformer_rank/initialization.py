"""Initialization of the replica-batched transformers, with a per-replica scale (paper Section 5).

One initialization direction is drawn (seeded, on the CPU) and copied to every replica; every
parameter except the initial token mapper (and the LayerNorms) is multiplied by the replica's
scale, the "initialization scale" of Section 5 ("Effect of initialization scale", Figures 6 and 7:
"varying the initialization scale of all layers ... we fix the scale of the initial token mapper").
"""
from __future__ import annotations

import math

import torch

from stagewise.transformer_rank.model import Config, Params


def _uniform(gen: torch.Generator, shape: tuple[int, ...], fan_in: int) -> torch.Tensor:
    """PyTorch's default ``nn.Linear`` initialization, U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(fan_in)
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound


def _normal(gen: torch.Generator, shape: tuple[int, ...], std: float) -> torch.Tensor:
    return torch.randn(shape, generator=gen, dtype=torch.float64) * std


def init_params(cfg: Config, scales: list[float], rng: torch.Generator | int,
                device: torch.device | str = "cpu", directions: list[int] | None = None) -> Params:
    """One initialization direction (drawn on the CPU from ``rng``), scaled per replica (Section 5).

    ``directions`` (optional, one entry per replica): replica r starts from draw ``directions[r]`` of the
    directions, drawn one after another from ``rng`` (default: every replica from draw 0). The chapter's
    twin replica (a second draw at scale 1) is the noise control of the scale claim.

    ``rng`` is a CPU ``torch.Generator`` (the experiment's random stream, advanced by the
    draws) or an int seed (a fresh generator: the same seed gives the same direction).

    ViT: PyTorch defaults (lucidrains layout, ``to_qkv`` without bias). GPT: GPT-2's N(0, 0.02),
    residual projections N(0, 0.02 / sqrt(2 depth)), tied input/output embedding.
    Replica r multiplies every parameter by ``scales[r]`` except the initial token mapper
    (paper Section 5: "all layers ... we fix the scale of the initial token mapper"): the block
    weights and biases, the class token, the position embedding and the classification head are
    scaled; the patch embedding ``embed``/``embed_b`` (the token mapper) and the LayerNorm gains
    and biases (reconstructed: a normalization is not an initialized layer) keep their
    default values. Returns float32 leaf tensors
    ``(R, ...)`` on ``device`` that require gradients.
    """
    gen = torch.Generator().manual_seed(rng) if isinstance(rng, int) else rng
    directions = [0] * len(scales) if directions is None else list(directions)
    if len(directions) != len(scales):
        raise ValueError(f"init_params: {len(directions)} directions for {len(scales)} replicas")
    bases = [_direction(cfg, gen) for _ in range(max(directions) + 1)]
    s = torch.tensor(scales, dtype=torch.float64)
    params = {}
    for name in bases[0][0]:
        rep = torch.stack([bases[d][0][name] for d in directions])
        if name in bases[0][1]:
            rep = rep * s.view(-1, *([1] * (rep.dim() - 1)))
        params[name] = rep.to(device=device, dtype=torch.float32).requires_grad_(True)
    return params


def _direction(cfg: Config, gen: torch.Generator) -> tuple[Params, set[str]]:
    """One draw of the initial weights at scale 1 (float64) and the names of the scaled parameters."""
    D, I, M = cfg.width, cfg.inner, cfg.mlp_dim
    gpt = cfg.kind == "gpt"

    def w(shape, fan_in, resid=False):
        if gpt:
            return _normal(gen, shape, 0.02 / (math.sqrt(2 * cfg.depth) if resid else 1.0))
        return _uniform(gen, shape, fan_in)

    base: Params = {}
    scaled: set[str] = set()
    if gpt:
        base["embed"] = _normal(gen, (cfg.inputs, D), 0.02)
        base["pos"] = _normal(gen, (cfg.tokens, D), 0.01)
    else:
        base["embed"] = _uniform(gen, (D, cfg.inputs), cfg.inputs)
        base["embed_b"] = _uniform(gen, (D,), cfg.inputs)
        base["cls"] = _normal(gen, (1, D), 1.0)
        base["pos"] = _normal(gen, (cfg.tokens + 1, D), 1.0)
    for layer in range(cfg.depth):
        p = f"blocks.{layer}."
        base[p + "ln1_g"], base[p + "ln1_b"] = torch.ones(D, dtype=torch.float64), torch.zeros(D, dtype=torch.float64)
        base[p + "ln2_g"], base[p + "ln2_b"] = torch.ones(D, dtype=torch.float64), torch.zeros(D, dtype=torch.float64)
        base[p + "qkv"] = w((3 * I, D), D)
        base[p + "out"] = w((D, I), I, resid=True)
        base[p + "out_b"] = torch.zeros(D, dtype=torch.float64) if gpt else _uniform(gen, (D,), I)
        base[p + "mlp1"] = w((M, D), D)
        base[p + "mlp1_b"] = torch.zeros(M, dtype=torch.float64) if gpt else _uniform(gen, (M,), D)
        base[p + "mlp2"] = w((D, M), M, resid=True)
        base[p + "mlp2_b"] = torch.zeros(D, dtype=torch.float64) if gpt else _uniform(gen, (D,), M)
        scaled |= {p + "qkv", p + "out", p + "mlp1", p + "mlp2"}
    base["lnf_g"], base["lnf_b"] = torch.ones(D, dtype=torch.float64), torch.zeros(D, dtype=torch.float64)
    if not gpt:
        base["head"] = _uniform(gen, (cfg.classes, D), D)
        base["head_b"] = _uniform(gen, (cfg.classes,), D)
    fixed = {"embed", "embed_b"} | {n for n in base if "ln" in n.split(".")[-1]}
    scaled |= set(base) - fixed
    return base, scaled
