"""Shared spectra (stable rank, non-top fraction) and parameter packing."""
import numpy as np
import pytest
import torch

from stagewise.numerics import params, spectra


def test_stable_rank_of_known_matrices():
    eye = torch.eye(4, dtype=torch.float64)
    rank_one = torch.outer(torch.arange(1.0, 4.0), torch.arange(1.0, 3.0)).double()
    assert float(spectra.stable_rank(eye)) == pytest.approx(4.0)
    assert float(spectra.stable_rank(rank_one)) == pytest.approx(1.0)
    assert torch.isnan(spectra.stable_rank(torch.zeros(3, 3)))
    assert spectra.stable_rank_np([[3.0, 4.0], [1.0, 0.0]]) == pytest.approx([25 / 16, 1.0])
    assert spectra.nontop_fraction(rank_one) == pytest.approx(0.0, abs=1e-12)
    assert spectra.nontop_fraction(eye) == pytest.approx(0.75)
    assert spectra.nontop_fraction(torch.zeros(2, 2)) == 0.0


def test_flatten_and_pack_round_trip():
    g = torch.Generator().manual_seed(0)
    ps = [torch.randn(3, 4, 2, generator=g), torch.randn(3, 5, generator=g)]
    flat = params.flatten_batched(ps)
    assert flat.shape == (3, 13)
    assert all(torch.equal(a, b) for a, b in zip(params.unflatten_batched(flat, ps), ps))
    vec = params.pack(ps)
    assert vec.shape == (39,)
    assert all(torch.equal(a, b) for a, b in zip(params.unpacker(ps)(vec), ps))
