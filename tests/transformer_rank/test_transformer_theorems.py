"""Tests of stagewise.transformer_rank.theorems: the measurements of the chapter's integrity rows
(Propositions prop-transformer-rank-first-step, -adam-bound, -init, -bound, -chance: the experiment-integrity rows)
on tiny runs, each with the broken version its control stands for."""
import math

import pytest
import torch

from stagewise.transformer_rank import theorems as th
from stagewise.transformer_rank.optimizer import ReplicaOptimizer, schedule
from stagewise.transformer_rank.spectra import checkpoint_spectra
from transformer_problem import LABEL_SEED, TINY_GPT, TINY_VIT, tiny_runs


@pytest.fixture(scope="module")
def runs():
    return tiny_runs()


def _vit_args(vit):
    use_adam = [o == "adam" for o in vit.optimizers]
    lrs = [TINY_VIT.adam_lr if a else TINY_VIT.sgd_lr for a in use_adam]
    warmup = int(TINY_VIT.warmup_fraction * TINY_VIT.steps)
    return use_adam, lrs, warmup, schedule(0, TINY_VIT.steps, warmup)


def test_first_step_follows_the_update_rule(runs):
    """Adam: -eta s0 g/(|g|+eps) and SGD: -eta s0 g from the recorded initialization, within the rounding bound;
    step 2 read as step 1, a wrong learning rate or a wrong warmup factor are far outside it."""
    vit, gpt = runs
    use_adam, lrs, warmup, s0 = _vit_args(vit)
    g = th.first_step_gradient(vit.initial, vit.cfg, vit.first_batch)
    assert th.first_step_error(vit.result, g, use_adam, lrs, s0) <= 1
    assert th.first_step_error(vit.result, g, use_adam, lrs, s0, step=2) > 100
    assert th.first_step_error(vit.result, g, use_adam, [10 * x for x in lrs], s0) > 100
    assert th.first_step_error(vit.result, g, use_adam, lrs, 2 * s0) > 100
    gg = th.first_step_gradient(gpt.initial, gpt.cfg, gpt.first_batch)
    s0g = schedule(0, TINY_GPT.steps, int(TINY_GPT.warmup_fraction * TINY_GPT.steps))
    assert th.first_step_error(gpt.result, gg, [True], [TINY_GPT.lr], s0g) <= 1


def test_stated_first_batch_is_the_recorded_one(runs):
    """The first minibatches recomputed from the stated dataset and the experiment's streams (seeds 0 and 1 in
    tiny_runs) are exactly the ones the training loop used; a tenth of the training set gives another batch,
    and the update rule checked on it fails."""
    vit, gpt = runs
    x, y = th.stated_vit_first_batch(TINY_VIT, 0, torch.Generator().manual_seed(0), vit.cfg, 2, labels=vit.labels,
                                     label_generator=torch.Generator().manual_seed(LABEL_SEED))
    assert torch.equal(x, vit.first_batch[0]) and torch.equal(y, vit.first_batch[1])
    _, y_true = th.stated_vit_first_batch(TINY_VIT, 0, torch.Generator().manual_seed(0), vit.cfg, 2)
    assert torch.equal(y_true, vit.first_batch[1][0])                     # the true labels, shared
    xg, yg = th.stated_gpt_first_batch(TINY_GPT, torch.Generator().manual_seed(1), gpt.cfg)
    assert torch.equal(xg, gpt.first_batch[0]) and torch.equal(yg, gpt.first_batch[1])
    gen = torch.Generator().manual_seed(0)
    th.init_params(vit.cfg, [1.0, 1.0], gen, directions=[0, 1])
    n = len(vit.images.x_train) // 10
    idx = torch.randperm(n, generator=gen)[:TINY_VIT.batch]
    subset = (th.data.patchify(vit.images.x_train, TINY_VIT.patch)[idx], vit.images.y_train[idx])
    use_adam, lrs, _, s0 = _vit_args(vit)
    g = th.first_step_gradient(vit.initial, vit.cfg, subset)
    assert th.first_step_error(vit.result, g, use_adam, lrs, s0) > 100


def test_first_step_srank_matches_the_measure(runs):
    """The chapter's stable ranks at step 1 agree with the definition applied to the predicted change; the
    square-root measure (a wrong exponent) does not."""
    vit, _ = runs
    use_adam, lrs, _, s0 = _vit_args(vit)
    g = th.first_step_gradient(vit.initial, vit.cfg, vit.first_batch)
    measured = {"kq": vit.spectra.srank("delta_kq"), "vo": vit.spectra.srank("delta_vo")}
    args = (vit.result, measured, g, use_adam, lrs, s0, vit.cfg.heads, vit.cfg.head_dim)
    assert th.first_step_srank_error(*args) <= 1
    assert th.first_step_srank_error(*args, exponent=0.5) > 1


def test_adam_step_bound_holds_and_is_nearly_attained():
    """B_t bounds |m_hat/sqrt(v_hat)| for any gradient sequence (checked on random and adversarial ones, through
    the optimizer itself) and is nearly attained by gradients growing like (beta_2 / beta_1)^t."""
    b1, b2 = th.BETAS
    assert th.adam_step_bound(1) == pytest.approx(1.0)
    for t, grads in ((50, torch.randn(50, 200, generator=torch.Generator().manual_seed(0))),
                     (30, (b1 / b2) ** -torch.arange(30.0)[:, None].repeat(1, 3))):
        p = {"w": torch.zeros(1, grads.shape[1], requires_grad=True)}
        opt = ReplicaOptimizer(p, [True], [1.0])
        for g in grads:
            before = p["w"].detach().clone()
            p["w"].grad = g[None].clone()
            opt.step()
        assert float((p["w"].detach() - before).abs().max()) <= th.adam_step_bound(t) * (1 + 1e-5)
    assert float((p["w"].detach() - before).abs().max()) >= 0.9 * th.adam_step_bound(30)


def test_last_step_ratio(runs):
    """The last step of the cosine cycle is tiny: within the bound; the mid-training step is not; a missing
    checkpoint (a run that stopped early) gives infinity."""
    vit, _ = runs
    use_adam, lrs, warmup, _ = _vit_args(vit)
    T = TINY_VIT.steps
    assert th.last_step_ratio(vit.result, use_adam, lrs, T, warmup) <= 1
    assert th.last_step_ratio(vit.result, use_adam, lrs, T, warmup, pair=(T // 2 - 1, T // 2)) > 1
    assert th.last_step_ratio(vit.result, use_adam, lrs, 2 * T, warmup) == math.inf


def test_initialization_deviation(runs):
    """The mean squares match PyTorch's default and GPT-2's within tau; the wrong fan and the missing residual
    scaling do not. tau shrinks like 1/sqrt(n)."""
    vit, gpt = runs
    assert th.vit_init_deviation(vit.result, vit.scales) <= 1
    assert th.vit_init_deviation(vit.result, vit.scales, fan="out") > 1
    wrong = list(vit.scales)
    wrong[0] = 1.0                                                    # the scale ignored in the theory
    assert th.vit_init_deviation(vit.result, wrong) > 1
    assert th.gpt_init_deviation(gpt.result, gpt.cfg.depth) <= 1
    # at the chapter's size (2 layers, width 64) the missing residual scaling is far outside tau
    from stagewise.transformer_rank.initialization import init_params
    from stagewise.transformer_rank.model import Config
    from stagewise.transformer_rank.training import TrainResult
    cfg = Config("gpt", depth=2, heads=4, width=64, head_dim=16, mlp_dim=256, tokens=8, inputs=11)
    p = init_params(cfg, [1.0], 0)
    res = TrainResult([0], torch.stack([p[f"blocks.{l}.qkv"].detach() for l in range(2)], 1)[None],
                      torch.stack([p[f"blocks.{l}.out"].detach() for l in range(2)], 1)[None], torch.zeros(0))
    assert th.gpt_init_deviation(res, 2) <= 1 < th.gpt_init_deviation(res, 2, residual_scaling=False)
    assert th.uniform_tau(4 * 1000) == pytest.approx(th.uniform_tau(1000) / 2)
    x = torch.rand(10 ** 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 2 - 1
    assert abs(float((x ** 2).mean()) * 3 - 1) < th.uniform_tau(10 ** 5)


def test_rank_bound_tail(runs):
    """Round-off tails on the measured spectra (the tiny model has d_h = 4, d_emb = 8: only rank <= d_h is
    testable); merging the heads of a layer gives an order-one tail."""
    vit, _ = runs
    assert th.rank_bound_tail(vit.spectra, vit.cfg.head_dim) < 1e-12
    merged = checkpoint_spectra(th.first_and_last(vit.result), 1, vit.cfg.inner)
    assert th.rank_bound_tail(merged, vit.cfg.head_dim) > 1e-3


def test_chance_level():
    """Hoeffding's chance bound and Gibbs' inequality: a context-free predictor's loss is at least the entropy."""
    labels = torch.arange(1000) % 10
    assert th.chance_accuracy(labels, 10) == pytest.approx(0.1 + math.sqrt(math.log(1e9) / 2000))
    targets = torch.randint(0, 5, (2000,), generator=torch.Generator().manual_seed(0))
    h = th.unigram_entropy(targets, 7)
    freq = torch.bincount(targets, minlength=7).double() / 2000
    for q in (torch.full((7,), 1 / 7, dtype=torch.float64), (freq + 0.01) / (freq + 0.01).sum()):
        assert float(-q[targets].log().mean()) >= h - 1e-12
    assert float(-freq[targets].log().mean()) == pytest.approx(h)


def test_held_out_loss_and_accuracy_of_untrained_networks(runs):
    """The controls of the chance rows: the untrained networks, measured as the trained ones."""
    vit, gpt = runs
    assert math.isfinite(th.held_out_loss(gpt.initial, gpt.cfg, gpt.test_windows))
    acc = th.replica_accuracy(vit.initial, vit.cfg, vit.images.x_test, vit.images.y_test, TINY_VIT.patch, 1)
    trained = th.replica_accuracy(vit.params, vit.cfg, vit.images.x_test, vit.images.y_test, TINY_VIT.patch, 1)
    assert 0 <= acc <= 1 and trained == pytest.approx(vit.accuracy[1])
