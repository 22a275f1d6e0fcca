"""Checkpointed spectra of the per-head matrices and of their change since initialization
(paper Section 5, Appendix B); their stable rank (Definition def-transformer-rank-srank) is
:func:`stagewise.numerics.spectra.stable_rank_from_svals`."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from stagewise.numerics.spectra import stable_rank_from_svals
from stagewise.transformer_rank.attention_heads import head_matrices
from stagewise.transformer_rank.training import TrainResult

#: Machine epsilon of the float32 weights that the stable ranks are computed from.
EPS32 = float(torch.finfo(torch.float32).eps)


@dataclass
class Spectra:
    """Singular values per checkpoint, replica, layer and head (descending), float64 on the CPU."""
    init_kq: torch.Tensor      # (R, L, H, D) of W_K W_Q^T at step 0
    init_vo: torch.Tensor
    delta_kq: torch.Tensor     # (C, R, L, H, D) of Delta(W_K W_Q^T) = W_K W_Q^T (t) - W_K W_Q^T (0)
    delta_vo: torch.Tensor
    full_kq: torch.Tensor | None = None   # (C, R, L, H, D) of W_K W_Q^T (t) itself (the change's control)
    full_vo: torch.Tensor | None = None

    def srank(self, which: str) -> torch.Tensor:
        """Stable rank (Definition def-transformer-rank-srank) of the field ``which``, one axis fewer."""
        return stable_rank_from_svals(getattr(self, which))


def checkpoint_spectra(result: TrainResult, heads: int, head_dim: int,
                       device: torch.device | str = "cpu", reference: int = 0) -> Spectra:
    """Spectra of the per-head matrices and of their change since initialization, batched per
    checkpoint over replicas, layers and heads (the difference of products, not the product of
    differences; Proposition prop-transformer-rank-bound, the observations obs-transformer-rank-*).
    The change is measured from the checkpoint of index ``reference``: by default the first checkpoint of
    ``result``, taken as the initialization (``init_kq`` / ``init_vo`` are always the first checkpoint's)."""
    kq0, vo0 = head_matrices(result.qkv[reference].to(device), result.out[reference].to(device), heads, head_dim)
    dkq, dvo, fkq, fvo = [], [], [], []
    for c in range(len(result.steps)):
        kq, vo = head_matrices(result.qkv[c].to(device), result.out[c].to(device), heads, head_dim)
        dkq.append(torch.linalg.svdvals(kq - kq0).cpu())
        dvo.append(torch.linalg.svdvals(vo - vo0).cpu())
        fkq.append(torch.linalg.svdvals(kq).cpu())
        fvo.append(torch.linalg.svdvals(vo).cpu())
    return Spectra(fkq[0], fvo[0], torch.stack(dkq), torch.stack(dvo), torch.stack(fkq), torch.stack(fvo))
