"""Claim (a) (observation obs-transformer-rank-low), the learned change is low rank: its threshold (a fraction of
the initialization's stable rank), the ratio :func:`low_rank_ratio` of a replica (of the default Adam replica for
the row, of its shuffled-label copy for the row's control), and a reference for the reader, the same ratio for a
change of the learned size in a random direction."""
from __future__ import annotations

import torch

from stagewise.numerics.spectra import stable_rank_from_svals
from stagewise.transformer_rank.attention_heads import head_matrices
from stagewise.transformer_rank.experiments import VitRun

#: The learned change is "low rank" when its stable rank is below this fraction of the initial one.
LOW_RANK_FRACTION = 0.5


def low_rank_ratio(vit: VitRun, replica: int) -> float:
    """``srank(Delta KQ at the end) / srank(KQ at init)`` of ``replica``, head and layer means (claim (a))."""
    sr = vit.spectra.srank("delta_kq")[-1, replica]
    return float(sr.mean() / vit.spectra.srank("init_kq")[replica].mean())


def random_change_ratio(vit: VitRun, generator: torch.Generator) -> float:
    """Reference for claim (a): the ratio ``srank(Delta KQ) / srank(KQ init)`` (Adam, scale 1, head
    and layer means) for a change of the learned size in a random direction: the initial
    ``to_qkv`` / ``to_out`` of each layer plus Gaussian matrices scaled to the Frobenius norm of
    the learned change of that layer. A change without learned structure has a stable rank
    comparable to the initialization's, so the low-rank criterion rejects it."""
    a, cfg, res = vit.adam_default, vit.cfg, vit.result
    q0, o0 = res.qkv[0, a].double(), res.out[0, a].double()

    def random_like(w0: torch.Tensor, w1: torch.Tensor) -> torch.Tensor:
        e = torch.randn(w0.shape, generator=generator, dtype=torch.float64)
        return e * ((w1.double() - w0).flatten(1).norm(dim=1) / e.flatten(1).norm(dim=1)).view(-1, 1, 1)

    kq0, _ = head_matrices(q0, o0, cfg.heads, cfg.head_dim)
    kq1, _ = head_matrices(q0 + random_like(q0, res.qkv[-1, a]), o0 + random_like(o0, res.out[-1, a]),
                           cfg.heads, cfg.head_dim)
    delta = stable_rank_from_svals(torch.linalg.svdvals(kq1 - kq0))
    return float(delta.mean() / stable_rank_from_svals(torch.linalg.svdvals(kq0)).mean())
