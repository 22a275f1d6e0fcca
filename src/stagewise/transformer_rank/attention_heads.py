"""Per-head attention matrices ``W_K W_Q^T`` and ``W_V W_O^T`` (paper eq. (1)) from fused weights.

:func:`head_matrices` slices the fused ``to_qkv`` / ``to_out`` weights of a layer into the
per-head products of Proposition prop-transformer-rank-bound (rank at most ``d_h``);
:func:`extraction_error` checks the slicing against the model's own attention logits,
:func:`attention_output_error` against its attention output (both matrices), and
:func:`rank_tail` the rank bound on trained weights.
"""
from __future__ import annotations

import torch

from stagewise.transformer_rank.model import Config, attention, layer_norm, linear, vit_tokens


def head_matrices(qkv: torch.Tensor, out: torch.Tensor, heads: int, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-head ``W_K W_Q^T`` and ``W_V W_O^T`` (paper eq. (1)) from fused weights, in float64.

    ``qkv`` ``(..., 3 H d_h, D)`` (rows q, k, v; head h owns rows ``h d_h:(h+1) d_h`` of each),
    ``out`` ``(..., D, H d_h)`` (head h owns columns ``h d_h:(h+1) d_h``). With
    ``W_Q^h = qkv_q[h].T`` etc. in ``R^{D x d_h}`` and ``W_O^h = out[:, h]``, returns
    ``KQ[..., h] = W_K^h W_Q^h^T`` and ``VO[..., h] = W_V^h W_O^h^T``, both ``(..., H, D, D)``.
    Row i / column j of KQ pair key token i with query token j, so the attention logits of
    head h are ``X KQ_h^T X^T / sqrt(d_h)`` (query rows); the rank of each is at most ``d_h``
    (Proposition prop-transformer-rank-bound).
    """
    lead, D = qkv.shape[:-2], qkv.shape[-1]
    w = qkv.double().reshape(*lead, 3, heads, head_dim, D)
    wq, wk, wv = w.unbind(-4)                                                        # (..., H, d_h, D)
    wo = out.double().reshape(*lead, D, heads, head_dim).movedim(-3, -1)             # (..., H, d_h, D)
    return wk.transpose(-1, -2) @ wq, wv.transpose(-1, -2) @ wo


def head_factors(qkv: torch.Tensor, out: torch.Tensor, heads: int,
                 head_dim: int) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """The factors of :func:`head_matrices`, ``KQ = P_kq^T Q_kq`` and ``VO = P_vo^T Q_vo``, each ``(..., H, d_h, D)``
    in float64 (``P_kq = W_K^h^T``, ``Q_kq = W_Q^h^T``, ``P_vo = W_V^h^T``, ``Q_vo = W_O^h^T``)."""
    lead, D = qkv.shape[:-2], qkv.shape[-1]
    wq, wk, wv = qkv.double().reshape(*lead, 3, heads, head_dim, D).unbind(-4)
    wo = out.double().reshape(*lead, D, heads, head_dim).movedim(-3, -1)
    return (wk, wq), (wv, wo)


@torch.no_grad()
def extraction_error(params, cfg: Config, patches: torch.Tensor, replica: int = 0, transpose: bool = False) -> float:
    """Relative max error between the model's attention logits ``q_i . k_j`` of every head of
    the first layer and ``x_i^T (W_K W_Q^T)^T x_j`` built from :func:`head_matrices`, where
    X is the LayerNormed input of that layer in the ViT's own forward pass (paper eq. (1);
    the chapter's "Extraction" check). ``transpose=True`` uses ``W_Q W_K^T`` (the wrong extraction)."""
    z = vit_tokens(params, cfg, patches)
    x = layer_norm(z, params["blocks.0.ln1_g"], params["blocks.0.ln1_b"])[replica]      # (B, T, D)
    q, k, _ = linear(x.unsqueeze(0), params["blocks.0.qkv"][replica:replica + 1])[0].view(
        *x.shape[:2], 3, cfg.heads, cfg.head_dim).unbind(2)
    direct = torch.einsum("bihd,bjhd->bhij", q, k).double()
    kq, _ = head_matrices(params["blocks.0.qkv"][replica], params["blocks.0.out"][replica], cfg.heads, cfg.head_dim)
    kq = kq.transpose(-1, -2) if transpose else kq
    xd = x.double()
    via = torch.einsum("bid,hed,bje->bhij", xd, kq, xd)   # x_i^T (W_Q W_K^T) x_j with KQ[e, d] = (W_K W_Q^T)[e, d]
    return float((direct - via).abs().max() / via.abs().max())


@torch.no_grad()
def attention_output_error(params, cfg: Config, patches: torch.Tensor, replica: int = 0,
                           transpose: bool = False) -> float:
    """Relative max error between the first layer's attention output computed by the model
    (:func:`stagewise.transformer_rank.model.attention`, all heads, no output bias) and
    ``sum_h smax(X KQ_h^T X^T / sqrt(d_h)) X VO_h`` built from :func:`head_matrices` alone
    (paper eq. (1)): this tests the slicing of both ``W_K W_Q^T`` and ``W_V W_O^T``.

    ``transpose=True`` uses ``W_Q W_K^T`` and ``W_O W_V^T`` instead (factors swapped), the
    wrong extraction the check must reject.
    """
    z = vit_tokens(params, cfg, patches)
    x = layer_norm(z, params["blocks.0.ln1_g"], params["blocks.0.ln1_b"])[replica]      # (B, T, D)
    qkv, out = params["blocks.0.qkv"][replica], params["blocks.0.out"][replica]
    direct = attention(x.unsqueeze(0), qkv.unsqueeze(0), out.unsqueeze(0), None, cfg.heads, cfg.head_dim)[0]
    kq, vo = head_matrices(qkv, out, cfg.heads, cfg.head_dim)
    if transpose:
        kq, vo = kq.transpose(-1, -2), vo.transpose(-1, -2)
    xd = x.double()
    logits = torch.einsum("bid,hed,bje->bhij", xd, kq, xd) / cfg.head_dim ** 0.5     # query i, key j
    via = torch.einsum("bhij,bjd,hde->bie", torch.softmax(logits, -1), xd, vo)
    return float((direct.double() - via).abs().max() / via.abs().max())


def rank_tail(qkv: torch.Tensor, out: torch.Tensor, heads: int, head_dim: int) -> float:
    """Largest ``sigma_{d_h+1} / sigma_1`` of ``W_K W_Q^T`` over all heads (and leading axes) of the
    fused weights: round-off size by Proposition prop-transformer-rank-bound (0.0 when ``d_h >= D``)."""
    kq, _ = head_matrices(qkv, out, heads, head_dim)
    if head_dim >= kq.shape[-1]:
        return 0.0
    sv = torch.linalg.svdvals(kq)
    return float((sv[..., head_dim:].amax(-1) / sv[..., 0]).max())
