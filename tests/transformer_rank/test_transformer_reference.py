"""Tests of stagewise.transformer_rank.reference: the one-at-a-time torch.optim loop agrees with the
batched training loop (Section 5 / App. B optimizers and schedule)."""
import torch

from stagewise.transformer_rank.initialization import init_params
from stagewise.transformer_rank.optimizer import ReplicaOptimizer
from stagewise.transformer_rank.reference import train_reference
from stagewise.transformer_rank.training import train
from transformer_problem import rand, tiny


def test_reference_matches_batched_training():
    """Adam at two scales and SGD: same losses per step from the batched loop and the reference."""
    cfg = tiny()
    batch = (rand(8, cfg.tokens, cfg.inputs), torch.arange(8) % 4)
    scales, adam, lrs, steps = [0.3, 1.0, 1.0], [True, True, False], [1e-2, 1e-2, 0.05], 10
    params = init_params(cfg, scales, 0)
    res = train(params, cfg, lambda s: batch, ReplicaOptimizer(params, adam, lrs), steps, [], ["lr"] * 3, lrs,
                warmup=2)
    ref = train_reference(cfg, batch, scales, adam, lrs, steps, warmup=2)
    assert ref.shape == res.losses.shape == (steps, 3)
    assert torch.allclose(ref, res.losses, atol=1e-5)
