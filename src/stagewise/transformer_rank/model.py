"""Small transformers batched over replicas, per-head attention matrices and stable rank.

Implements the objects of Boix-Adsera et al., *Transformers learn through gradual rank
increase* (NeurIPS 2023), Section 5 and Appendix B:

* a pre-LayerNorm vision transformer (patches, class token, lucidrains ``vit-pytorch`` layout)
  and a GPT-style character-level causal language model (GPT-2 initialization);
* the per-head matrices ``W_K W_Q^T`` and ``W_V W_O^T`` of paper eq. (1), extracted from the
  fused ``to_qkv`` / ``to_out`` weights (:func:`head_matrices`);
* the stable rank ``||W||_F^2 / ||W||_2^2`` (paper Section 5, Appendix B);
* a training loop that checkpoints the attention weights, so spectra are computed afterwards
  in batch (:func:`checkpoint_spectra`).

Every weight carries a leading *replica* axis ``R``: R independent models (different
initialization scales, optimizers or learning rates) train in one batched computation on the
same minibatches. Adam and SGD act element-wise, so the replicas do not interact.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch
import torch.nn.functional as F

from stagewise.core.parameters import ParameterError
from stagewise.numerics.flows import DivergenceError

Params = dict[str, torch.Tensor]

#: The paper's CIFAR ViT (Section 5 "Effect of initialization scale", App. B.2).
PRESETS: dict[str, dict[str, int]] = {
    "paper": dict(depth=6, heads=8, width=512, head_dim=128, mlp_dim=512, patch=4),
}


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


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the transformer-rank chapter (one-line errors)."""
    from stagewise.numerics.datasets import find_cifar_folder
    if values.get("dataset") in ("cifar10", "cifar100"):
        find_cifar_folder(values["dataset"], values.get("data_dir", ""))
    if values.get("preset", "tiny") == "paper":
        return
    for prefix in ("vit_", "gpt_"):
        width, head_dim = values.get(prefix + "width"), values.get(prefix + "head_dim")
        if width is not None and head_dim is not None and width % head_dim:
            raise ParameterError(f"parameter {prefix}head_dim: {head_dim} does not divide {prefix}width={width}; "
                                 f"allowed: a divisor of {prefix}width")
    patch, dataset = values.get("vit_patch"), values.get("dataset", "digits")
    side = 8 if dataset == "digits" else 32
    if patch is not None and side % patch:
        raise ParameterError(f"parameter vit_patch: {patch} does not divide the {side}x{side} images of "
                             f"dataset {dataset}; allowed: a divisor of {side}")
    scales = values.get("init_scales")
    if scales is not None and len(set(scales) | {1.0}) < 2:
        raise ParameterError("parameter init_scales: needs a scale other than 1 to compare with the default; "
                             "allowed: a list with a value != 1")


# --------------------------------------------------------------------------------------
# Initialization
# --------------------------------------------------------------------------------------
def _uniform(gen: torch.Generator, shape: tuple[int, ...], fan_in: int) -> torch.Tensor:
    """PyTorch's default ``nn.Linear`` initialization, U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(fan_in)
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound


def _normal(gen: torch.Generator, shape: tuple[int, ...], std: float) -> torch.Tensor:
    return torch.randn(shape, generator=gen, dtype=torch.float64) * std


def init_params(cfg: Config, scales: list[float], seed: int, device: torch.device | str = "cpu") -> Params:
    """One initialization direction (seeded, drawn on the CPU), scaled per replica.

    ViT: PyTorch defaults (lucidrains layout, ``to_qkv`` without bias). GPT: GPT-2's N(0, 0.02),
    residual projections N(0, 0.02 / sqrt(2 depth)), tied input/output embedding.
    Replica r multiplies the weight matrices inside the transformer blocks by ``scales[r]``
    (paper Section 5: "all layers ... except the initial token mapper"); embeddings, class
    token, LayerNorms and biases keep their default values.
    """
    gen = torch.Generator().manual_seed(seed)
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
    s = torch.tensor(scales, dtype=torch.float64)
    params = {}
    for name, value in base.items():
        rep = value.unsqueeze(0).repeat(len(scales), *([1] * value.dim()))
        if name in scaled:
            rep = rep * s.view(-1, *([1] * value.dim()))
        params[name] = rep.to(device=device, dtype=torch.float32).requires_grad_(True)
    return params


# --------------------------------------------------------------------------------------
# Forward pass
# --------------------------------------------------------------------------------------
def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """Replica-batched ``x W^T + b``: x ``(R or 1, ..., in)``, weight ``(R, out, in)``, bias ``(R, out)``."""
    lead = x.shape[1:-1]
    flat = x.reshape(x.shape[0], -1, x.shape[-1])
    y = torch.matmul(flat, weight.transpose(1, 2))
    if bias is not None:
        y = y + bias.unsqueeze(1)
    return y.reshape(y.shape[0], *lead, weight.shape[1])


def layer_norm(x: torch.Tensor, gain: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
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
    """Pre-LayerNorm residual blocks: z + Attn(LN z), then z + MLP(LN z) with GELU."""
    for layer in range(cfg.depth):
        p = f"blocks.{layer}."
        z = z + attention(layer_norm(z, params[p + "ln1_g"], params[p + "ln1_b"]), params[p + "qkv"],
                          params[p + "out"], params[p + "out_b"], cfg.heads, cfg.head_dim, causal)
        h = F.gelu(linear(layer_norm(z, params[p + "ln2_g"], params[p + "ln2_b"]), params[p + "mlp1"],
                          params[p + "mlp1_b"]))
        z = z + linear(h, params[p + "mlp2"], params[p + "mlp2_b"])
    return layer_norm(z, params["lnf_g"], params["lnf_b"])


def vit_logits(params: Params, cfg: Config, patches: torch.Tensor) -> torch.Tensor:
    """ViT: patches ``(B, T, inputs)`` -> class logits ``(R, B, classes)`` read from the class token."""
    R, B = params["embed"].shape[0], patches.shape[0]
    z = linear(patches.unsqueeze(0), params["embed"], params["embed_b"])            # (R, B, T, D)
    cls = params["cls"].unsqueeze(1).expand(R, B, 1, cfg.width)
    z = torch.cat([cls, z], dim=2) + params["pos"].unsqueeze(1)
    z = blocks(params, cfg, z, causal=False)
    return linear(z[:, :, 0], params["head"], params["head_b"])


def gpt_logits(params: Params, cfg: Config, codes: torch.Tensor) -> torch.Tensor:
    """Char-GPT: codes ``(B, T)`` -> next-character logits ``(R, B, T, V)`` (tied embedding)."""
    T = codes.shape[1]
    z = params["embed"][:, codes] + params["pos"][:, :T].unsqueeze(1)                # (R, B, T, D)
    z = blocks(params, cfg, z, causal=True)
    return torch.matmul(z.flatten(1, 2), params["embed"].transpose(1, 2)).view(*z.shape[:3], -1)


def replica_loss(params: Params, cfg: Config, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy per replica, shape ``(R,)``."""
    logits = vit_logits(params, cfg, x) if cfg.kind == "vit" else gpt_logits(params, cfg, x)
    R, C = logits.shape[0], logits.shape[-1]
    target = y.reshape(1, -1).expand(R, -1).reshape(-1)
    return F.cross_entropy(logits.reshape(-1, C).float(), target, reduction="none").view(R, -1).mean(1)


# --------------------------------------------------------------------------------------
# Per-head matrices and stable rank
# --------------------------------------------------------------------------------------
def head_matrices(qkv: torch.Tensor, out: torch.Tensor, heads: int, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-head ``W_K W_Q^T`` and ``W_V W_O^T`` (paper eq. (1)) from fused weights, in float64.

    ``qkv`` ``(..., 3 H d_h, D)`` (rows q, k, v; head h owns rows ``h d_h:(h+1) d_h`` of each),
    ``out`` ``(..., D, H d_h)`` (head h owns columns ``h d_h:(h+1) d_h``). With
    ``W_Q^h = qkv_q[h].T`` etc. in ``R^{D x d_h}`` and ``W_O^h = out[:, h]``, returns
    ``KQ[..., h] = W_K^h W_Q^h^T`` and ``VO[..., h] = W_V^h W_O^h^T``, both ``(..., H, D, D)``.
    Row i / column j of KQ pair key token i with query token j, so the attention logits of
    head h are ``X KQ_h^T X^T / sqrt(d_h)`` (query rows); the rank of each is at most ``d_h``.
    """
    lead, D = qkv.shape[:-2], qkv.shape[-1]
    w = qkv.double().reshape(*lead, 3, heads, head_dim, D)
    wq, wk, wv = w.unbind(-4)                                                        # (..., H, d_h, D)
    wo = out.double().reshape(*lead, D, heads, head_dim).movedim(-3, -1)             # (..., H, d_h, D)
    return wk.transpose(-1, -2) @ wq, wv.transpose(-1, -2) @ wo


def stable_rank_from_svals(svals: torch.Tensor) -> torch.Tensor:
    """``sum_i s_i^2 / s_1^2`` from singular values sorted descending (NaN for a zero matrix)."""
    top = svals[..., 0]
    ratio = (svals ** 2).sum(-1) / top ** 2
    return torch.where(top > 0, ratio, torch.full_like(ratio, float("nan")))


def stable_rank(matrix: torch.Tensor) -> torch.Tensor:
    """Stable rank ``||W||_F^2 / ||W||_2^2`` of a batch of matrices (Appendix B)."""
    return stable_rank_from_svals(torch.linalg.svdvals(matrix.double()))


# --------------------------------------------------------------------------------------
# Optimizer and training loop
# --------------------------------------------------------------------------------------
class ReplicaOptimizer:
    """Element-wise Adam or SGD with momentum, chosen per replica (leading axis of every tensor).

    Identical to ``torch.optim.Adam`` (no weight decay) on Adam replicas and to
    ``torch.optim.SGD(momentum=...)`` on SGD replicas; ``lr`` is per replica and is multiplied
    by the schedule factor passed to :meth:`step`.
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
    with a linear warmup"; one cycle) or, with ``decay=False``, a constant rate."""
    if step < warmup:
        return (step + 1) / warmup
    if not decay:
        return 1.0
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


@dataclass
class TrainResult:
    """Losses per step and replica, and the attention weights at the checkpoint steps."""
    steps: list[int]
    qkv: torch.Tensor          # (C, R, L, 3 H d_h, D) float32 on the CPU
    out: torch.Tensor          # (C, R, L, D, H d_h)
    losses: torch.Tensor       # (steps, R)
    seconds_per_step: float = 0.0
    extra: dict = field(default_factory=dict)


def checkpoint_steps(steps: int, count: int) -> list[int]:
    """``count`` checkpoints from 0 to ``steps``, geometrically spaced early, then uniform."""
    uniform = torch.linspace(0, steps, count).round().long().tolist()
    early = torch.logspace(0, math.log10(max(2, steps // 8)), 6).round().long().tolist()
    return sorted(set(uniform) | set(early) | {0, steps // 4, steps})


def snapshot(params: Params, depth: int) -> tuple[torch.Tensor, torch.Tensor]:
    qkv = torch.stack([params[f"blocks.{l}.qkv"].detach() for l in range(depth)], 1)
    out = torch.stack([params[f"blocks.{l}.out"].detach() for l in range(depth)], 1)
    return qkv.float().cpu().clone(), out.float().cpu().clone()


def train(params: Params, cfg: Config, batches: Callable[[int], tuple[torch.Tensor, torch.Tensor]],
          optimizer: ReplicaOptimizer, steps: int, ckpt: list[int], lr_names: list[str], lr_values: list[float],
          warmup: int = 0, decay: bool = True, mixed_precision: bool = False,
          progress: Callable[[Iterator[int]], Iterator[int]] | None = None) -> TrainResult:
    """Train all replicas together; checkpoint attention weights at the steps in ``ckpt``.

    ``batches(step)`` returns the minibatch (shared by the replicas). A non-finite loss of
    replica r stops training with a one-line error naming ``lr_names[r]`` (the learning rate
    to lower). ``mixed_precision`` enables bfloat16 autocast (CUDA only).
    """
    import time
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
            raise DivergenceError(f"parameter {lr_names[r]}={lr_values[r]}: training diverged (NaN/overflow) "
                                  f"at step {step}; lower {lr_names[r]}")
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


@dataclass
class Spectra:
    """Singular values per checkpoint, replica, layer and head (descending), float64 on the CPU."""
    init_kq: torch.Tensor      # (R, L, H, D) of W_K W_Q^T at step 0
    init_vo: torch.Tensor
    delta_kq: torch.Tensor     # (C, R, L, H, D) of Delta(W_K W_Q^T) = W_K W_Q^T (t) - W_K W_Q^T (0)
    delta_vo: torch.Tensor

    def srank(self, which: str) -> torch.Tensor:
        return stable_rank_from_svals(getattr(self, which))


def checkpoint_spectra(result: TrainResult, heads: int, head_dim: int,
                       device: torch.device | str = "cpu") -> Spectra:
    """Spectra of the per-head matrices and of their change since initialization, batched per
    checkpoint over replicas, layers and heads (the difference of products, not the product of
    differences)."""
    kq0, vo0 = head_matrices(result.qkv[0].to(device), result.out[0].to(device), heads, head_dim)
    dkq, dvo = [], []
    for c in range(len(result.steps)):
        kq, vo = head_matrices(result.qkv[c].to(device), result.out[c].to(device), heads, head_dim)
        dkq.append(torch.linalg.svdvals(kq - kq0).cpu())
        dvo.append(torch.linalg.svdvals(vo - vo0).cpu())
    return Spectra(torch.linalg.svdvals(kq0).cpu(), torch.linalg.svdvals(vo0).cpu(),
                   torch.stack(dkq), torch.stack(dvo))
