"""Tests of stagewise.transformer_rank.initialization (the initialization scale of paper Section 5)."""
import torch

from stagewise.transformer_rank.initialization import init_params
from transformer_problem import tiny as _tiny


def test_init_scale_multiplies_block_weights_only():
    """Section 5: the scale multiplies the block weights, not the token mapper or the head;
    one seed gives one initialization direction."""
    cfg = _tiny()
    p = init_params(cfg, [1.0, 0.1], 3)
    assert torch.allclose(p["blocks.0.qkv"][1], 0.1 * p["blocks.0.qkv"][0])
    assert torch.allclose(p["blocks.1.mlp2"][1], 0.1 * p["blocks.1.mlp2"][0])
    assert torch.equal(p["embed"][1], p["embed"][0]) and torch.equal(p["head"][1], p["head"][0])
    q = init_params(cfg, [1.0], 3)
    assert torch.equal(q["blocks.0.qkv"][0], p["blocks.0.qkv"][0])            # same seed, same direction


def test_init_from_a_generator_equals_init_from_its_seed():
    """A random stream (CPU generator) gives the same direction as its seed, and advances."""
    cfg = _tiny()
    gen = torch.Generator().manual_seed(5)
    p = init_params(cfg, [1.0], gen)
    assert torch.equal(p["blocks.0.qkv"], init_params(cfg, [1.0], 5)["blocks.0.qkv"])
    assert not torch.equal(init_params(cfg, [1.0], gen)["blocks.0.qkv"], p["blocks.0.qkv"])
