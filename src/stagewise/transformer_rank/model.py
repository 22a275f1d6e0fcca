"""The replica-batched transformers: architecture and forward pass (paper Section 5, App. B).

Implements the models of Boix-Adsera et al., *Transformers learn through gradual rank
increase* (NeurIPS 2023), Section 5 and Appendix B: a pre-LayerNorm vision transformer
(patches, class token, lucidrains ``vit-pytorch`` layout) and a GPT-style character-level
causal language model, with multi-head self-attention as in paper eq. (1).

Every weight carries a leading *replica* axis ``R``: R independent models (different
initialization scales, optimizers or learning rates) train in one batched computation on the
same minibatches. Initialization lives in :mod:`stagewise.transformer_rank.initialization`.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

Params = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Config:
    """Architecture of one replica. ``kind`` is ``"vit"`` or ``"gpt"``."""
    kind: str
    depth: int
    heads: int
    width: int
    head_dim: int
    mlp_dim: int
    tokens: int            # ViT: patches (the class token is added); GPT: context length
    inputs: int            # ViT: flattened patch size; GPT: vocabulary size
    classes: int = 10      # ViT only

    @property
    def inner(self) -> int:
        return self.heads * self.head_dim


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """Replica-batched ``x W^T + b``: x ``(R or 1, ..., in)``, weight ``(R, out, in)``, bias ``(R, out)``."""
    lead = x.shape[1:-1]
    flat = x.reshape(x.shape[0], -1, x.shape[-1])
    y = torch.matmul(flat, weight.transpose(1, 2))
    if bias is not None:
        y = y + bias.unsqueeze(1)
    return y.reshape(y.shape[0], *lead, weight.shape[1])


def layer_norm(x: torch.Tensor, gain: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Replica-batched LayerNorm over the last axis, gain and bias ``(R, D)`` (pre-LN blocks, App. B)."""
    shape = (x.shape[0],) + (1,) * (x.dim() - 2) + (x.shape[-1],)
    return F.layer_norm(x, x.shape[-1:]) * gain.view(shape) + bias.view(shape)


def attention(x: torch.Tensor, qkv: torch.Tensor, out: torch.Tensor, out_b: torch.Tensor | None,
              heads: int, head_dim: int, causal: bool = False) -> torch.Tensor:
    """Multi-head self-attention, paper eq. (1) summed over heads, with the usual 1/sqrt(d_h).

    x ``(R, B, T, D)``; ``qkv`` ``(R, 3 H d_h, D)`` ordered q, k, v; ``out`` ``(R, D, H d_h)``.
    """
    R, B, T, _ = x.shape
    q, k, v = linear(x, qkv).view(R * B, T, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # (R B, H, T, d_h)
    o = o.transpose(1, 2).reshape(R, B, T, heads * head_dim)
    return linear(o, out, out_b)


def blocks(params: Params, cfg: Config, z: torch.Tensor, causal: bool) -> torch.Tensor:
    """Pre-LayerNorm residual blocks: z + Attn(LN z) (eq. (1)), then z + MLP(LN z) with GELU; final LN."""
    for layer in range(cfg.depth):
        p = f"blocks.{layer}."
        z = z + attention(layer_norm(z, params[p + "ln1_g"], params[p + "ln1_b"]), params[p + "qkv"],
                          params[p + "out"], params[p + "out_b"], cfg.heads, cfg.head_dim, causal)
        h = F.gelu(linear(layer_norm(z, params[p + "ln2_g"], params[p + "ln2_b"]), params[p + "mlp1"],
                          params[p + "mlp1_b"]))
        z = z + linear(h, params[p + "mlp2"], params[p + "mlp2_b"])
    return layer_norm(z, params["lnf_g"], params["lnf_b"])


def vit_tokens(params: Params, cfg: Config, patches: torch.Tensor) -> torch.Tensor:
    """ViT input tokens ``(R, B, T + 1, D)``: class token and embedded patches plus position
    embeddings (the "initial token mapper" of Section 5)."""
    R, B = params["embed"].shape[0], patches.shape[0]
    z = linear(patches.unsqueeze(0), params["embed"], params["embed_b"])            # (R, B, T, D)
    cls = params["cls"].unsqueeze(1).expand(R, B, 1, cfg.width)
    return torch.cat([cls, z], dim=2) + params["pos"].unsqueeze(1)


def vit_logits(params: Params, cfg: Config, patches: torch.Tensor) -> torch.Tensor:
    """ViT (App. B.2): patches ``(B, T, inputs)`` -> class logits ``(R, B, classes)`` read from the class token."""
    z = blocks(params, cfg, vit_tokens(params, cfg, patches), causal=False)
    return linear(z[:, :, 0], params["head"], params["head_b"])


def gpt_logits(params: Params, cfg: Config, codes: torch.Tensor) -> torch.Tensor:
    """Char-GPT (App. B, GPT-2 analogue): codes ``(B, T)`` -> next-character logits ``(R, B, T, V)`` (tied embedding)."""
    T = codes.shape[1]
    z = params["embed"][:, codes] + params["pos"][:, :T].unsqueeze(1)                # (R, B, T, D)
    z = blocks(params, cfg, z, causal=True)
    return torch.matmul(z.flatten(1, 2), params["embed"].transpose(1, 2)).view(*z.shape[:3], -1)


def replica_loss(params: Params, cfg: Config, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy per replica, shape ``(R,)`` (the training loss of App. B). ViT labels ``y`` are ``(B,)``,
    shared by the replicas, or ``(R, B)``, one row per replica (the shuffled-label controls train beside the
    replicas that see the true labels)."""
    logits = vit_logits(params, cfg, x) if cfg.kind == "vit" else gpt_logits(params, cfg, x)
    R, C = logits.shape[0], logits.shape[-1]
    per_replica = cfg.kind == "vit" and y.dim() == 2
    target = y.reshape(-1) if per_replica else y.reshape(1, -1).expand(R, -1).reshape(-1)
    return F.cross_entropy(logits.reshape(-1, C).float(), target, reduction="none").view(R, -1).mean(1)
