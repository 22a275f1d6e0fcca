"""Checkpointed spectra of the per-head matrices and of their change since initialization
(paper Section 5, Appendix B); their stable rank (Definition def-transformer-rank-srank) is
:func:`stagewise.numerics.spectra.stable_rank_from_svals`."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from stagewise.numerics.spectra import stable_rank_from_svals
from stagewise.transformer_rank.attention_heads import head_factors
from stagewise.transformer_rank.training import TrainResult

#: Machine epsilon of the float32 weights that the stable ranks are computed from.
EPS32 = float(torch.finfo(torch.float32).eps)
#: From this model width on, the singular values of a product ``P^T Q`` of thin factors (``k x D`` each, k < D) are
#: computed from the factors (:func:`product_svdvals`): at the paper's ViT (D = 512, d_h = 128) that is a 256 x 256
#: SVD per change and a 128 x 128 one per matrix instead of 512 x 512 ones, about 12 times fewer operations. Below it,
#: the direct SVD of the D x D product, as the chapter's default runs have always computed it.
FACTORED_WIDTH = 256


def product_svdvals(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Singular values of ``P^T Q`` (descending, ``D`` of them) for ``p``, ``q`` of shape ``(..., k, D)``.

    With the reduced QR factorizations ``P^T = U_p R_p`` and ``Q^T = U_q R_q``, ``P^T Q = U_p (R_p R_q^T) U_q^T`` with
    orthonormal columns in ``U_p`` and ``U_q``: the nonzero singular values are those of the ``min(k, D)``-square
    ``R_p R_q^T``. The remaining ``D - k`` are exactly zero (the rank is at most k), where a direct SVD returns
    rounding noise of order ``eps * s_1``."""
    D = p.shape[-1]
    if p.shape[-2] >= D:
        return torch.linalg.svdvals(p.transpose(-1, -2) @ q)
    rp = torch.linalg.qr(p.transpose(-1, -2), mode="r").R
    rq = torch.linalg.qr(q.transpose(-1, -2), mode="r").R
    sv = torch.linalg.svdvals(rp @ rq.transpose(-1, -2))
    return torch.cat([sv, sv.new_zeros(*sv.shape[:-1], D - sv.shape[-1])], -1)


def _svdvals(pair: tuple[torch.Tensor, torch.Tensor], pair0: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
    """Singular values of ``P^T Q`` (``pair0`` None) or of its change ``P^T Q - P0^T Q0``, on the CPU."""
    (p, q), D = pair, pair[0].shape[-1]
    if D < FACTORED_WIDTH:
        product = p.transpose(-1, -2) @ q
        if pair0 is not None:
            product = product - pair0[0].transpose(-1, -2) @ pair0[1]
        return torch.linalg.svdvals(product).cpu()
    if pair0 is None:
        return product_svdvals(p, q).cpu()
    # P^T Q - P0^T Q0 = [P; -P0]^T [Q; Q0]; an unchanged head is an exact zero matrix, as the direct difference gives
    unchanged = ((p == pair0[0]).flatten(-2).all(-1) & (q == pair0[1]).flatten(-2).all(-1)).unsqueeze(-1)
    sv = product_svdvals(torch.cat([p, -pair0[0]], -2), torch.cat([q, pair0[1]], -2))
    return torch.where(unchanged, torch.zeros_like(sv), sv).cpu()


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
    kq0, vo0 = head_factors(result.qkv[reference].to(device), result.out[reference].to(device), heads, head_dim)
    dkq, dvo, fkq, fvo = [], [], [], []
    for c in range(len(result.steps)):
        kq, vo = head_factors(result.qkv[c].to(device), result.out[c].to(device), heads, head_dim)
        dkq.append(_svdvals(kq, kq0))
        dvo.append(_svdvals(vo, vo0))
        fkq.append(_svdvals(kq, None))
        fvo.append(_svdvals(vo, None))
    return Spectra(fkq[0], fvo[0], torch.stack(dkq), torch.stack(dvo), torch.stack(fkq), torch.stack(fvo))
