"""Tests of stagewise.transformer_rank.optimizer: the replica optimizers and schedule of Appendix B."""
import pytest
import torch

from stagewise.transformer_rank.optimizer import ReplicaOptimizer, schedule


def test_replica_optimizer_matches_torch_adam_and_sgd():
    """Section 5 / App. B optimizers: the batched optimizer equals torch.optim.Adam / SGD(momentum 0.9) per replica."""
    torch.manual_seed(0)
    w0 = torch.randn(2, 3, 4)
    target = torch.randn(3, 4)
    mine = {"w": w0.clone().requires_grad_(True)}
    opt = ReplicaOptimizer(mine, [True, False], [0.01, 0.05], momentum=0.9)
    ref_a, ref_s = w0[0].clone().requires_grad_(True), w0[1].clone().requires_grad_(True)
    adam, sgd = torch.optim.Adam([ref_a], lr=0.01), torch.optim.SGD([ref_s], lr=0.05, momentum=0.9)
    for step in range(20):
        factor = schedule(step, 20, 5)
        (((mine["w"] - target) ** 2).sum() + mine["w"].sin().sum()).backward()
        opt.step(factor)
        for ref, o in ((ref_a, adam), (ref_s, sgd)):
            o.param_groups[0]["lr"] = (0.01 if o is adam else 0.05) * factor
            o.zero_grad(); (((ref - target) ** 2).sum() + ref.sin().sum()).backward(); o.step()
    assert torch.allclose(mine["w"][0], ref_a, atol=1e-6)
    assert torch.allclose(mine["w"][1], ref_s, atol=1e-6)


def test_schedule_warmup_then_cosine():
    """App. B schedule: linear warmup, then one cosine cycle (or constant with decay=False)."""
    assert schedule(0, 100, 10) == pytest.approx(0.1)
    assert schedule(9, 100, 10) == pytest.approx(1.0)
    assert schedule(10, 100, 10) == pytest.approx(1.0)
    assert schedule(55, 100, 10) == pytest.approx(0.5)
    assert schedule(80, 100, 10, decay=False) == 1.0
