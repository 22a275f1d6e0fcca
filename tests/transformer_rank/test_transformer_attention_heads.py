"""Tests of stagewise.transformer_rank.attention_heads: per-head matrices of paper eq. (1) and
Proposition prop-transformer-rank-bound."""
import math

import torch

from stagewise.transformer_rank.attention_heads import attention_output_error, extraction_error, head_matrices, rank_tail
from stagewise.transformer_rank.initialization import init_params
from stagewise.transformer_rank.model import attention
from transformer_problem import rand as _rand, tiny as _tiny


def test_rank_of_head_matrices_at_most_head_dim():
    """Proposition prop-transformer-rank-bound: rank(W_K W_Q^T), rank(W_V W_O^T) <= d_h (and = d_h generically)."""
    H, dh, D = 3, 5, 24
    kq, vo = head_matrices(_rand(2, 3 * H * dh, D), _rand(2, D, H * dh, seed=1), H, dh)
    assert kq.shape == vo.shape == (2, H, D, D) and kq.dtype == torch.float64
    for m in (kq, vo):
        s = torch.linalg.svdvals(m)
        assert (s[..., dh:] / s[..., :1]).max() < 1e-12      # rank <= d_h
        assert (s[..., dh - 1] / s[..., 0]).min() > 1e-6     # and generically equal to d_h


def test_extraction_matches_direct_per_head_forward():
    """sum_h smax(X KQ_h^T X^T / sqrt(d_h)) X VO_h + b equals the fused attention (paper eq. (1))."""
    H, dh, D, B, Tn = 4, 6, 16, 3, 7
    x = _rand(1, B, Tn, D).double()
    qkv, out, b = _rand(1, 3 * H * dh, D, seed=2).double(), _rand(1, D, H * dh, seed=3).double(), _rand(1, D, seed=4).double()
    for causal in (False, True):
        fused = attention(x, qkv, out, b, H, dh, causal=causal)[0]
        kq, vo = head_matrices(qkv[0], out[0], H, dh)
        logits = torch.einsum("bid,hed,bje->bhij", x[0], kq, x[0]) / math.sqrt(dh)
        if causal:
            logits = logits.masked_fill(torch.ones(Tn, Tn, dtype=torch.bool).triu(1), float("-inf"))
        direct = torch.einsum("bhij,bjd,hde->bie", logits.softmax(-1), x[0], vo) + b[0]
        assert torch.allclose(fused, direct, atol=1e-10, rtol=1e-10)


def test_extraction_error_small():
    """Paper eq. (1): logits rebuilt from head_matrices match the ViT's own first-layer logits."""
    cfg = _tiny()
    p = init_params(cfg, [1.0, 0.5], 0)
    assert extraction_error(p, cfg, _rand(3, cfg.tokens, cfg.inputs), replica=1) < 1e-5


def test_attention_output_error_small_and_swapped_factors_caught():
    """Eq. (1) for both matrices: the first layer's output rebuilt from KQ and VO matches the model's;
    with the factors swapped (W_Q W_K^T, W_O W_V^T) it does not."""
    cfg = _tiny()
    p = init_params(cfg, [1.0, 0.5], 0)
    x = _rand(3, cfg.tokens, cfg.inputs)
    assert attention_output_error(p, cfg, x, replica=1) < 1e-5
    assert attention_output_error(p, cfg, x, replica=1, transpose=True) > 1e-2
    assert extraction_error(p, cfg, x, replica=1, transpose=True) > 1e-2


def test_rank_tail_is_round_off():
    """Proposition prop-transformer-rank-bound on fused weights: sigma_{d_h+1} / sigma_1 is round-off."""
    H, dh, D = 2, 3, 10
    assert rank_tail(_rand(2, 3 * H * dh, D), _rand(2, D, H * dh, seed=1), H, dh) < 1e-12
    assert rank_tail(_rand(3 * 2 * 8, 8), _rand(8, 2 * 8, seed=1), 2, 8) == 0.0     # d_h >= D: no tail
