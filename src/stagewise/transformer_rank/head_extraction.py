"""The extraction checks of Proposition prop-transformer-rank-bound and eq. (1) on the trained ViT (the sanity rows
of the per-head matrices): the per-head ``W_K W_Q^T``, ``W_V W_O^T`` rebuild the model's own attention logits and
output, the final ``W_K W_Q^T`` has rank at most d_h, and the wrong extraction (factors swapped) is caught."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from stagewise.numerics.datasets import patchify
from stagewise.transformer_rank.attention_heads import attention_output_error, extraction_error, rank_tail
from stagewise.transformer_rank.experiments import VitRun


@dataclass
class Extraction:
    """Checks of Proposition prop-transformer-rank-bound and eq. (1) on the trained ViT, with the
    same measures for the wrong extraction (factors swapped: W_Q W_K^T, W_O W_V^T)."""
    error: float                 # relative error of rebuilt first-layer logits
    rank_tail: float             # largest sigma_{d_h+1} / sigma_1 of the final W_K W_Q^T
    output_error: float          # relative error of the rebuilt first-layer attention output (KQ and VO)
    error_swapped: float         # ``error`` with W_Q W_K^T in place of W_K W_Q^T
    output_error_swapped: float  # ``output_error`` with both products' factors swapped


def extraction_checks(vit: VitRun, device: torch.device | str = "cpu", count: int = 64) -> Extraction:
    """Extraction errors on ``count`` test images and the rank tail of the final W_K W_Q^T (Adam, scale 1)."""
    a, cfg = vit.adam_default, vit.cfg
    patches = patchify(vit.images.x_test[:count], vit.settings.patch).to(device)
    errors = [f(vit.params, cfg, patches, replica=a, transpose=t)
              for t in (False, True) for f in (extraction_error, attention_output_error)]
    return Extraction(errors[0], rank_tail(vit.result.qkv[-1, a], vit.result.out[-1, a], cfg.heads, cfg.head_dim),
                      errors[1], errors[2], errors[3])


def swapped_extraction_error(vit: VitRun, device: torch.device | str = "cpu", output: bool = False,
                             count: int = 64) -> float:
    """Control of the extraction rows: the same error with the factors swapped (``W_Q W_K^T``, ``W_O W_V^T``)."""
    patches = patchify(vit.images.x_test[:count], vit.settings.patch).to(device)
    f = attention_output_error if output else extraction_error
    return f(vit.params, vit.cfg, patches, replica=vit.adam_default, transpose=True)
