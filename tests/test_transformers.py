"""Unit tests of stagewise.transformer_rank.model: per-head extraction, stable rank, batched models, optimizer."""
import math

import pytest
import torch
import torch.nn.functional as F

from stagewise.transformer_rank import model as T
from stagewise.core.parameters import ParameterError
from stagewise.numerics.flows import DivergenceError

torch.set_num_threads(1)


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_rank_of_head_matrices_at_most_head_dim():
    H, dh, D = 3, 5, 24
    kq, vo = T.head_matrices(_rand(2, 3 * H * dh, D), _rand(2, D, H * dh, seed=1), H, dh)
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
        fused = T.attention(x, qkv, out, b, H, dh, causal=causal)[0]
        kq, vo = T.head_matrices(qkv[0], out[0], H, dh)
        logits = torch.einsum("bid,hed,bje->bhij", x[0], kq, x[0]) / math.sqrt(dh)
        if causal:
            logits = logits.masked_fill(torch.ones(Tn, Tn, dtype=torch.bool).triu(1), float("-inf"))
        direct = torch.einsum("bhij,bjd,hde->bie", logits.softmax(-1), x[0], vo) + b[0]
        assert torch.allclose(fused, direct, atol=1e-10, rtol=1e-10)


def test_stable_rank_closed_forms():
    assert float(T.stable_rank(torch.eye(7))) == pytest.approx(7.0)
    assert float(T.stable_rank(torch.outer(_rand(5), _rand(6, seed=1)))) == pytest.approx(1.0, abs=1e-12)
    assert float(T.stable_rank(torch.diag(torch.tensor([2.0, 1.0, 1.0])))) == pytest.approx(1.5)
    assert math.isnan(float(T.stable_rank(torch.zeros(3, 3))))
    batch = T.stable_rank(torch.stack([torch.eye(4), torch.diag(torch.tensor([3.0, 0, 0, 0]))]))
    assert batch.tolist() == pytest.approx([4.0, 1.0])


def _tiny(kind="vit"):
    if kind == "vit":
        return T.Config("vit", depth=2, heads=2, width=8, head_dim=4, mlp_dim=16, tokens=5, inputs=3, classes=4)
    return T.Config("gpt", depth=2, heads=2, width=8, head_dim=4, mlp_dim=32, tokens=6, inputs=11)


def test_init_scale_multiplies_block_weights_only():
    cfg = _tiny()
    p = T.init_params(cfg, [1.0, 0.1], seed=3)
    assert torch.allclose(p["blocks.0.qkv"][1], 0.1 * p["blocks.0.qkv"][0])
    assert torch.allclose(p["blocks.1.mlp2"][1], 0.1 * p["blocks.1.mlp2"][0])
    assert torch.equal(p["embed"][1], p["embed"][0]) and torch.equal(p["head"][1], p["head"][0])
    q = T.init_params(cfg, [1.0], seed=3)
    assert torch.equal(q["blocks.0.qkv"][0], p["blocks.0.qkv"][0])            # same seed, same direction


@pytest.mark.parametrize("kind", ["vit", "gpt"])
def test_replicas_are_independent(kind):
    cfg = _tiny(kind)
    both = T.init_params(cfg, [1.0, 0.3], seed=0)
    alone = T.init_params(cfg, [0.3], seed=0)
    if kind == "vit":
        x, y = _rand(3, cfg.tokens, cfg.inputs), torch.tensor([0, 1, 3])
    else:
        x = torch.randint(0, cfg.inputs, (3, cfg.tokens), generator=torch.Generator().manual_seed(0))
        y = torch.roll(x, -1, 1)
    lb, la = T.replica_loss(both, cfg, x, y), T.replica_loss(alone, cfg, x, y)
    assert torch.allclose(lb[1], la[0], atol=1e-6)
    lb.sum().backward(); la.sum().backward()
    assert torch.allclose(both["blocks.0.qkv"].grad[1], alone["blocks.0.qkv"].grad[0], atol=1e-6)


def test_gpt_is_causal():
    cfg = _tiny("gpt")
    p = T.init_params(cfg, [1.0], seed=1)
    x = torch.randint(0, cfg.inputs, (2, cfg.tokens), generator=torch.Generator().manual_seed(0))
    x2 = x.clone(); x2[:, -1] = (x[:, -1] + 1) % cfg.inputs
    with torch.no_grad():
        a, b = T.gpt_logits(p, cfg, x), T.gpt_logits(p, cfg, x2)
    assert torch.allclose(a[..., :-1, :], b[..., :-1, :], atol=1e-6)
    assert not torch.allclose(a[..., -1, :], b[..., -1, :])


def test_replica_optimizer_matches_torch_adam_and_sgd():
    torch.manual_seed(0)
    w0 = torch.randn(2, 3, 4)
    target = torch.randn(3, 4)
    mine = {"w": w0.clone().requires_grad_(True)}
    opt = T.ReplicaOptimizer(mine, [True, False], [0.01, 0.05], momentum=0.9)
    ref_a, ref_s = w0[0].clone().requires_grad_(True), w0[1].clone().requires_grad_(True)
    adam, sgd = torch.optim.Adam([ref_a], lr=0.01), torch.optim.SGD([ref_s], lr=0.05, momentum=0.9)
    for step in range(20):
        factor = T.schedule(step, 20, 5)
        (((mine["w"] - target) ** 2).sum() + mine["w"].sin().sum()).backward()
        opt.step(factor)
        for ref, o in ((ref_a, adam), (ref_s, sgd)):
            o.param_groups[0]["lr"] = (0.01 if o is adam else 0.05) * factor
            o.zero_grad(); (((ref - target) ** 2).sum() + ref.sin().sum()).backward(); o.step()
    assert torch.allclose(mine["w"][0], ref_a, atol=1e-6)
    assert torch.allclose(mine["w"][1], ref_s, atol=1e-6)


def test_schedule_warmup_then_cosine():
    assert T.schedule(0, 100, 10) == pytest.approx(0.1)
    assert T.schedule(9, 100, 10) == pytest.approx(1.0)
    assert T.schedule(10, 100, 10) == pytest.approx(1.0)
    assert T.schedule(55, 100, 10) == pytest.approx(0.5)
    assert T.schedule(80, 100, 10, decay=False) == 1.0


def _train_tiny(lr, steps=12):
    cfg = _tiny()
    p = T.init_params(cfg, [1.0, 0.1], seed=0)
    opt = T.ReplicaOptimizer(p, [True, True], [lr, lr])
    x, y = _rand(8, cfg.tokens, cfg.inputs), torch.arange(8) % 4
    ckpt = T.checkpoint_steps(steps, 4)
    return cfg, T.train(p, cfg, lambda s: (x, y), opt, steps, ckpt, ["adam_lr"] * 2, [lr, lr])


def test_training_checkpoints_and_spectra():
    cfg, res = _train_tiny(1e-2)
    assert res.steps[0] == 0 and res.steps[-1] == 12 and res.qkv.shape[:3] == (len(res.steps), 2, cfg.depth)
    assert res.losses[-1].mean() < res.losses[0].mean()
    sp = T.checkpoint_spectra(res, cfg.heads, cfg.head_dim)
    assert sp.delta_kq.shape == (len(res.steps), 2, cfg.depth, cfg.heads, cfg.width)
    assert torch.isnan(sp.srank("delta_kq")[0]).all()                # no change at step 0
    sr = sp.srank("delta_vo")[1:]
    assert (sr >= 1 - 1e-9).all() and (sr <= 2 * cfg.head_dim + 1e-9).all()


def test_nan_loss_names_learning_rate():
    with pytest.raises(DivergenceError, match=r"parameter adam_lr=1e\+30: .*diverged.*lower adam_lr"):
        _train_tiny(1e30, steps=50)


def test_check_parameters_messages(tmp_path):
    base = dict(preset="tiny", dataset="digits", data_dir=str(tmp_path), vit_width=64, vit_head_dim=16,
                gpt_width=64, gpt_head_dim=16, vit_patch=2, init_scales=[0.1, 1.0])
    T.check_parameters(base)
    with pytest.raises(ParameterError, match="parameter vit_head_dim: 12 does not divide vit_width=64"):
        T.check_parameters({**base, "vit_head_dim": 12})
    with pytest.raises(ParameterError, match="parameter gpt_head_dim"):
        T.check_parameters({**base, "gpt_head_dim": 24})
    with pytest.raises(ParameterError, match="parameter vit_patch: 3 does not divide the 8x8"):
        T.check_parameters({**base, "vit_patch": 3})
    with pytest.raises(ParameterError, match="parameter init_scales"):
        T.check_parameters({**base, "init_scales": [1.0]})
    with pytest.raises(ParameterError, match=f"parameter data_dir: cifar10 not found in '{tmp_path}'"):
        T.check_parameters({**base, "dataset": "cifar10"})
    T.check_parameters({**base, "preset": "paper", "vit_head_dim": 12})   # the preset overrides the sizes


def test_paper_preset_and_helpers():
    from stagewise.transformer_rank import experiments as rx
    P = rx.resolve_preset({"preset": "paper", "vit_depth": 2, "vit_steps": 7})
    assert (P["vit_depth"], P["vit_heads"], P["vit_width"], P["vit_head_dim"], P["vit_mlp"], P["vit_patch"]) == \
        (6, 8, 512, 128, 512, 4)
    assert P["vit_batch"] == 512 and P["adam_lr"] == 1e-4 and P["vit_steps"] == 7
    assert rx.resolve_preset({"preset": "tiny", "vit_depth": 2})["vit_depth"] == 2
    assert rx.quarter_index([0, 1, 5, 24, 50, 100]) == 3
    cfg = _tiny()
    p = T.init_params(cfg, [1.0, 0.5], seed=0)
    assert rx.extraction_error(p, cfg, _rand(3, cfg.tokens, cfg.inputs), replica=1) < 1e-5
