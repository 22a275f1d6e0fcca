"""Tests of stagewise.transformer_rank.training: the batched loop of Section 5 / App. B with checkpoints."""
import pytest

from stagewise.numerics.flows import DivergenceError
from stagewise.transformer_rank.training import checkpoint_steps
from transformer_problem import train_tiny as _train_tiny


def test_training_checkpoints():
    """Checkpoints start at step 0 and end at the last step; the training loss decreases."""
    cfg, res = _train_tiny(1e-2)
    assert res.steps[0] == 0 and res.steps[-1] == 12 and res.qkv.shape[:3] == (len(res.steps), 2, cfg.depth)
    assert res.losses[-1].mean() < res.losses[0].mean()


def test_checkpoints_hold_the_end_of_the_transient_window():
    """The window of the early transient (claim (b)) ends at half of training, which is always a checkpoint."""
    for steps, count in ((8, 4), (300, 20), (401, 7)):
        ckpt = checkpoint_steps(steps, count)
        assert ckpt[0] == 0 and ckpt[-1] == steps and steps // 2 in ckpt and ckpt == sorted(set(ckpt))
        assert {steps - 1, steps // 2 - 1} <= set(ckpt)      # the last step and its control (adam-bound row)


def test_nan_loss_names_learning_rate():
    """Divergence stops training with a one-line error naming the learning rate to lower."""
    with pytest.raises(DivergenceError, match=r"parameter adam_lr=1e\+30: .*diverged.*lower adam_lr"):
        _train_tiny(1e30, steps=50)
