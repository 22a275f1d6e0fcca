"""Tests of stagewise.transformer_rank.experiments on a tiny setting (the drivers of the claims of
the chapter's observations)."""
import pytest
import torch

from stagewise.transformer_rank.experiments import run_vit, shuffled_labels
from transformer_problem import TINY_VIT, tiny_gpt_control, tiny_runs as _tiny_runs


@pytest.fixture(scope="module")
def tiny_runs():
    return _tiny_runs()


def test_run_vit_replicas_and_spectra(tiny_runs):
    """Claims (a)-(c) setup: Adam at every scale (plus 1), the twin (Adam, scale 1, a second draw), one SGD
    replica at scale 1, and the shuffled-label copies of Adam at the smallest and largest scale and of SGD, from
    the same initial weights; spectra per checkpoint; the initial weights and the first minibatch are kept."""
    vit, _ = tiny_runs
    assert vit.scales == [0.1, 1.0, 1.0, 1.0, 0.1, 1.0, 1.0]
    assert vit.optimizers == ["adam", "adam", "adam", "sgd", "adam", "adam", "sgd"]
    assert vit.labels == ["true"] * 4 + ["shuffled"] * 3 and vit.shuffled == {0: 4, 1: 5, 3: 6}
    assert (vit.adam_default, vit.twin, vit.sgd) == (1, 2, 3) and len(vit.accuracy) == 7
    assert vit.scale_replicas == [0, 1]
    assert vit.spectra.delta_kq.shape == (len(vit.result.steps), 7, 1, 2, 8)
    assert vit.spectra.full_kq.shape == vit.spectra.delta_kq.shape
    assert vit.result.steps[-1] == TINY_VIT.steps
    qkv0 = vit.initial["blocks.0.qkv"]
    assert torch.equal(qkv0, vit.result.qkv[0, :, 0])                     # the recorded initial weights
    assert not torch.equal(qkv0[2], qkv0[1]) and torch.equal(qkv0[3], qkv0[1])   # the twin is another draw
    for r, c in vit.shuffled.items():                                     # a control starts where its replica does
        assert torch.equal(qkv0[c], qkv0[r]) and not torch.equal(vit.result.qkv[-1, c], vit.result.qkv[-1, r])
    x, y = vit.first_batch
    assert x.shape[0] == TINY_VIT.batch and y.shape == (7, TINY_VIT.batch)
    assert torch.equal(y[1], y[0]) and not torch.equal(y[4], y[0])        # shuffled labels for the controls only


def test_shuffled_labels_are_a_permutation():
    """The control's labels: the same multiset of labels in another order."""
    y = torch.arange(100) % 7
    z = shuffled_labels(y, torch.Generator().manual_seed(0))
    assert torch.equal(torch.sort(z).values, torch.sort(y).values) and not torch.equal(z, y)


def test_run_vit_is_a_function_of_its_stream():
    """The same random stream gives the same run; another stream gives another."""
    again = [run_vit(TINY_VIT, 0, torch.Generator().manual_seed(k), torch.device("cpu")).result.losses
             for k in (0, 0, 1)]
    assert torch.equal(again[0], again[1]) and not torch.equal(again[0], again[2])


def test_run_gpt(tiny_runs):
    """Claim (b), GPT-2 analogue: one replica, finite held-out loss, spectra per checkpoint. The control trains
    from the same initial weights on the same characters in random order."""
    _, gpt = tiny_runs
    assert gpt.spectra.delta_vo.shape[:4] == (len(gpt.result.steps), 1, 1, 2)
    assert 0 < gpt.test_loss < 10
    control = tiny_gpt_control()
    assert torch.equal(control.initial["blocks.0.qkv"], gpt.initial["blocks.0.qkv"])
    x, x_control = gpt.first_batch[0], control.first_batch[0]
    assert x.shape == x_control.shape and not torch.equal(x, x_control)
