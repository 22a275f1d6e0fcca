"""Tests of stagewise.transformer_rank.spectra: stable rank (Definition def-transformer-rank-srank)
and the checkpointed spectra of the change (Proposition prop-transformer-rank-bound)."""
import math

import pytest
import torch

from stagewise.numerics.spectra import stable_rank
from stagewise.transformer_rank.spectra import checkpoint_spectra
from transformer_problem import rand as _rand, train_tiny


def test_stable_rank_closed_forms():
    """Definition def-transformer-rank-srank: srank(I_7) = 7, rank one -> 1, diag(2,1,1) -> 1.5, zero -> NaN."""
    assert float(stable_rank(torch.eye(7))) == pytest.approx(7.0)
    assert float(stable_rank(torch.outer(_rand(5), _rand(6, seed=1)))) == pytest.approx(1.0, abs=1e-12)
    assert float(stable_rank(torch.diag(torch.tensor([2.0, 1.0, 1.0])))) == pytest.approx(1.5)
    assert math.isnan(float(stable_rank(torch.zeros(3, 3))))
    batch = stable_rank(torch.stack([torch.eye(4), torch.diag(torch.tensor([3.0, 0, 0, 0]))]))
    assert batch.tolist() == pytest.approx([4.0, 1.0])


def test_checkpoint_spectra_of_the_change():
    """Proposition prop-transformer-rank-bound: 1 <= srank(Delta) <= 2 d_h; no change at step 0 (NaN)."""
    cfg, res = train_tiny(1e-2)
    sp = checkpoint_spectra(res, cfg.heads, cfg.head_dim)
    assert sp.delta_kq.shape == (len(res.steps), 2, cfg.depth, cfg.heads, cfg.width)
    assert torch.isnan(sp.srank("delta_kq")[0]).all()                # no change at step 0
    sr = sp.srank("delta_vo")[1:]
    assert (sr >= 1 - 1e-9).all() and (sr <= 2 * cfg.head_dim + 1e-9).all()


def test_product_svdvals_from_thin_factors():
    """The singular values of P^T Q from the QR factors of P^T and Q^T equal the direct SVD's; the tail beyond the rank
    is exactly zero. Control: dropping the QR (the SVD of P Q^T, k x k, the wrong product) does not match."""
    from stagewise.transformer_rank.spectra import product_svdvals
    g = torch.Generator().manual_seed(3)
    p, q = torch.randn(2, 3, 5, 40, generator=g, dtype=torch.float64), torch.randn(2, 3, 5, 40, generator=g, dtype=torch.float64)
    direct = torch.linalg.svdvals(p.transpose(-1, -2) @ q)
    fact = product_svdvals(p, q)
    assert fact.shape == direct.shape
    assert torch.allclose(fact[..., :5], direct[..., :5], rtol=1e-10, atol=0)
    assert (fact[..., 5:] == 0).all() and (direct[..., 5:] < 1e-12 * direct[..., :1]).all()
    wrong = torch.linalg.svdvals(p @ q.transpose(-1, -2))
    assert not torch.allclose(wrong, direct[..., :5], rtol=1e-3)


def test_factored_spectra_equal_the_direct_ones(monkeypatch):
    """checkpoint_spectra through the factors (the paper-sized path, forced here at the tiny width) gives the direct
    path's stable ranks, and an unchanged head still has a zero change (NaN stable rank at the reference)."""
    import stagewise.transformer_rank.spectra as spectra
    cfg, res = train_tiny(1e-2)
    direct = checkpoint_spectra(res, cfg.heads, cfg.head_dim)
    monkeypatch.setattr(spectra, "FACTORED_WIDTH", 1)
    fact = checkpoint_spectra(res, cfg.heads, cfg.head_dim)
    for field in ("delta_kq", "delta_vo", "full_kq", "full_vo"):
        a, b = direct.srank(field), fact.srank(field)
        assert torch.equal(torch.isnan(a), torch.isnan(b)), field
        ok = ~torch.isnan(a)
        assert torch.allclose(a[ok], b[ok], rtol=1e-8), field
    assert torch.isnan(fact.srank("delta_kq")[0]).all()
