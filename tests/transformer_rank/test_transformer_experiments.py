"""Tests of stagewise.transformer_rank.experiments on a tiny setting (the drivers of the claims of
Assumption asm-transformer-rank-claims)."""
import pytest
import torch

from stagewise.transformer_rank.experiments import run_vit
from transformer_problem import TINY_VIT, tiny_runs as _tiny_runs


@pytest.fixture(scope="module")
def tiny_runs():
    return _tiny_runs()


def test_run_vit_replicas_and_spectra(tiny_runs):
    """Claims (a)-(c) setup: Adam at every scale (plus 1), the twin (Adam, scale 1, a second draw) and one SGD
    replica at scale 1; spectra per checkpoint; the initial weights and the first minibatch are kept."""
    vit, _ = tiny_runs
    assert vit.scales == [0.1, 1.0, 1.0, 1.0] and vit.optimizers == ["adam", "adam", "adam", "sgd"]
    assert (vit.adam_default, vit.twin, vit.sgd) == (1, 2, 3) and len(vit.accuracy) == 4
    assert vit.scale_replicas == [0, 1]
    assert vit.spectra.delta_kq.shape == (len(vit.result.steps), 4, 1, 2, 8)
    assert vit.spectra.full_kq.shape == vit.spectra.delta_kq.shape
    assert vit.result.steps[-1] == TINY_VIT.steps
    qkv0 = vit.initial["blocks.0.qkv"]
    assert torch.equal(qkv0, vit.result.qkv[0, :, 0])                     # the recorded initial weights
    assert not torch.equal(qkv0[2], qkv0[1]) and torch.equal(qkv0[3], qkv0[1])   # the twin is another draw
    assert vit.first_batch[0].shape[0] == TINY_VIT.batch


def test_run_vit_is_a_function_of_its_stream():
    """The same random stream gives the same run; another stream gives another."""
    again = [run_vit(TINY_VIT, 0, torch.Generator().manual_seed(k), torch.device("cpu")).result.losses
             for k in (0, 0, 1)]
    assert torch.equal(again[0], again[1]) and not torch.equal(again[0], again[2])


def test_run_gpt(tiny_runs):
    """Claim (b), GPT-2 analogue: one replica, finite held-out loss, spectra per checkpoint."""
    _, gpt = tiny_runs
    assert gpt.spectra.delta_vo.shape[:4] == (len(gpt.result.steps), 1, 1, 2)
    assert 0 < gpt.test_loss < 10
