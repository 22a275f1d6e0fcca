"""Tests of stagewise.transformer_rank.initialization (the initialization scale of paper Section 5)."""
import torch

from stagewise.transformer_rank.initialization import init_params
from transformer_problem import tiny as _tiny


def test_init_scale_multiplies_all_but_the_token_mapper():
    """Section 5: the scale multiplies every layer except the initial token mapper (and the
    LayerNorms, reconstructed); one seed gives one initialization direction."""
    cfg = _tiny()
    p = init_params(cfg, [1.0, 0.1], 3)
    for name in ("blocks.0.qkv", "blocks.1.mlp2", "blocks.0.out_b", "head", "head_b", "cls", "pos"):
        assert torch.allclose(p[name][1], 0.1 * p[name][0]), name
    for name in ("embed", "embed_b", "blocks.0.ln1_g", "lnf_g"):
        assert torch.equal(p[name][1], p[name][0]), name
    q = init_params(cfg, [1.0], 3)
    assert torch.equal(q["blocks.0.qkv"][0], p["blocks.0.qkv"][0])            # same seed, same direction


def test_init_from_a_generator_equals_init_from_its_seed():
    """A random stream (CPU generator) gives the same direction as its seed, and advances."""
    cfg = _tiny()
    gen = torch.Generator().manual_seed(5)
    p = init_params(cfg, [1.0], gen)
    assert torch.equal(p["blocks.0.qkv"], init_params(cfg, [1.0], 5)["blocks.0.qkv"])
    assert not torch.equal(init_params(cfg, [1.0], gen)["blocks.0.qkv"], p["blocks.0.qkv"])


def test_directions_draw_one_direction_per_index():
    """The twin replica: ``directions`` picks which draw each replica starts from, the draws in order."""
    cfg = _tiny()
    p = init_params(cfg, [1.0, 0.5, 1.0], 3, directions=[0, 0, 1])
    assert torch.equal(p["blocks.0.qkv"][0], init_params(cfg, [1.0], 3)["blocks.0.qkv"][0])
    assert torch.allclose(p["blocks.0.qkv"][1], 0.5 * p["blocks.0.qkv"][0])
    assert not torch.allclose(p["blocks.0.qkv"][2], p["blocks.0.qkv"][0])
    assert torch.equal(p["embed"][2], p["embed"][2]) and not torch.equal(p["embed"][2], p["embed"][0])
