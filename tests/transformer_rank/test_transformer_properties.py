"""Properties of the replica-batched transformers (Hypothesis, small random configurations).

The char-GPT is causal (a change at position t moves no logit before t; the ViT, bidirectional, is the control);
the fused multi-head attention equals a plain per-head loop of paper eq. (1), softmax(X W_Q W_K^T X^T / sqrt(d_h))
X W_V W_O^T summed over heads, written with the products head_matrices returns (so a transposed W_K W_Q^T or
W_V W_O^T fails it); permuting the heads changes nothing; and a batch of replicas computes each replica as if alone.
"""
import math

import torch
from hypothesis import given
from hypothesis import strategies as st

from properties import SCIENCE
from stagewise.transformer_rank.attention_heads import head_matrices
from stagewise.transformer_rank.initialization import init_params
from stagewise.transformer_rank.model import Config, attention, gpt_logits, replica_loss, vit_logits

CONFIGS = st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(2, 4), st.integers(0, 2**31 - 1))


def _gpt(depth, heads, head_dim, seed, scales=(1.0,)):
    cfg = Config("gpt", depth=depth, heads=heads, width=8, head_dim=head_dim, mlp_dim=16, tokens=6, inputs=5)
    return cfg, init_params(cfg, list(scales), seed)


def _vit(depth, heads, head_dim, seed, scales=(1.0,)):
    cfg = Config("vit", depth=depth, heads=heads, width=8, head_dim=head_dim, mlp_dim=16, tokens=4, inputs=3)
    return cfg, init_params(cfg, list(scales), seed)


@SCIENCE
@given(config=CONFIGS, cut=st.integers(1, 5))
@torch.no_grad()
def test_the_gpt_is_causal(config, cut):
    cfg, params = _gpt(*config)
    gen = torch.Generator().manual_seed(config[-1])
    codes = torch.randint(0, cfg.inputs, (2, cfg.tokens), generator=gen)
    changed = codes.clone()
    changed[:, cut:] = (codes[:, cut:] + 1) % cfg.inputs
    before, after = gpt_logits(params, cfg, codes), gpt_logits(params, cfg, changed)
    torch.testing.assert_close(after[:, :, :cut], before[:, :, :cut], rtol=1e-6, atol=1e-6)
    assert not torch.allclose(after[:, :, cut:], before[:, :, cut:])


@torch.no_grad()
def test_control_the_vit_sees_every_patch():
    """The same test on the bidirectional ViT: a change in the last patch moves the class token's logits."""
    cfg, params = _vit(1, 2, 4, 3)
    patches = torch.randn(2, cfg.tokens, cfg.inputs, generator=torch.Generator().manual_seed(0))
    changed = patches.clone()
    changed[:, -1] += 1.0
    assert not torch.allclose(vit_logits(params, cfg, changed), vit_logits(params, cfg, patches))


def _plain_attention(x, qkv, out, heads, head_dim):
    """Paper eq. (1) head by head in float64, from W_K W_Q^T and W_V W_O^T: sum_h softmax(X KQ_h^T X^T / sqrt(d_h))
    X VO_h (query rows, key columns)."""
    kq, vo = head_matrices(qkv, out, heads, head_dim)                   # (R, H, D, D)
    x = x.double()
    total = 0
    for h in range(heads):
        logits = x @ kq[:, h].transpose(-1, -2).unsqueeze(1) @ x.transpose(-1, -2) / math.sqrt(head_dim)
        total = total + torch.softmax(logits, dim=-1) @ x @ vo[:, h].unsqueeze(1)
    return total


@SCIENCE
@given(config=CONFIGS)
@torch.no_grad()
def test_fused_attention_equals_the_plain_per_head_formula(config):
    depth, heads, head_dim, seed = config
    cfg, params = _vit(depth, heads, head_dim, seed, scales=(1.0, 0.5))
    x = torch.randn(2, 3, 5, cfg.width, generator=torch.Generator().manual_seed(seed)).expand(2, 3, 5, cfg.width)
    qkv, out = params["blocks.0.qkv"], params["blocks.0.out"]
    fused = attention(x, qkv, out, None, heads, head_dim)
    torch.testing.assert_close(fused.double(), _plain_attention(x, qkv, out, heads, head_dim), rtol=1e-4, atol=1e-5)


@torch.no_grad()
def test_control_a_transposed_key_query_product_fails_the_formula():
    cfg, params = _vit(1, 2, 4, 1)
    x = torch.randn(1, 2, 5, cfg.width, generator=torch.Generator().manual_seed(1))
    qkv, out = params["blocks.0.qkv"], params["blocks.0.out"]
    D, d_h = cfg.width, 4
    swapped = qkv.reshape(1, 3, 2 * d_h, D)[:, [1, 0, 2]].reshape(1, 3 * 2 * d_h, D)   # W_Q and W_K exchanged
    fused = attention(x, swapped, out, None, 2, d_h)
    assert not torch.allclose(fused.double(), _plain_attention(x, qkv, out, 2, d_h), rtol=1e-4, atol=1e-5)


def _permute_heads(qkv, out, heads, head_dim, perm):
    R, _, D = qkv.shape
    qkv = qkv.reshape(R, 3, heads, head_dim, D)[:, :, perm].reshape(R, 3 * heads * head_dim, D)
    out = out.reshape(R, D, heads, head_dim)[:, :, perm].reshape(R, D, heads * head_dim)
    return qkv, out


@SCIENCE
@given(config=CONFIGS)
@torch.no_grad()
def test_permuting_the_heads_changes_nothing(config):
    depth, heads, head_dim, seed = config
    cfg, params = _vit(depth, heads, head_dim, seed)
    x = torch.randn(1, 2, 5, cfg.width, generator=torch.Generator().manual_seed(seed))
    qkv, out = params["blocks.0.qkv"], params["blocks.0.out"]
    perm = torch.randperm(heads, generator=torch.Generator().manual_seed(seed + 1))
    torch.testing.assert_close(attention(x, *_permute_heads(qkv, out, heads, head_dim, perm), None, heads, head_dim),
                               attention(x, qkv, out, None, heads, head_dim), rtol=1e-5, atol=1e-6)


@SCIENCE
@given(config=CONFIGS, scales=st.lists(st.sampled_from([0.01, 0.1, 0.5, 1.0, 2.0]), min_size=2, max_size=3))
@torch.no_grad()
def test_a_batch_of_replicas_computes_each_replica_alone(config, scales):
    depth, heads, head_dim, seed = config
    cfg, params = _vit(depth, heads, head_dim, seed, scales=scales)
    gen = torch.Generator().manual_seed(seed)
    patches = torch.randn(3, cfg.tokens, cfg.inputs, generator=gen)
    labels = torch.randint(0, cfg.classes, (3,), generator=gen)
    batched = replica_loss(params, cfg, patches, labels)
    for r in range(len(scales)):
        alone = {name: p[r:r + 1] for name, p in params.items()}
        torch.testing.assert_close(replica_loss(alone, cfg, patches, labels), batched[r:r + 1], rtol=1e-5, atol=1e-6)
