"""The initialization-scale sweep of the ViT's Adam replicas (Section 5): claim (c) (observation
obs-transformer-rank-scale), the final stable rank at the smallest minus at the largest scale against its noise
(two standard errors over heads, and the draw-to-draw noise of two draws at one scale), its control (the same gap
for the replicas trained on shuffled labels), and the sanity row of the sweep's set-up (every replica starts from
one direction times its scale)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from stagewise.numerics.roundoff import roundoff
from stagewise.transformer_rank.experiments import VitRun
from stagewise.transformer_rank.rank_growth import GROWTH_SE
from stagewise.transformer_rank.spectra import EPS32


@dataclass
class ScaleGap:
    """Claim (c): final stable rank at the smallest minus at the largest scale, mean over heads, against
    its noise: ``GROWTH_SE`` standard errors of the per-head gaps; ``GROWTH_SE`` times the root-mean-square
    difference between two initialization draws at the same scale (the twin and the default replica, per head)
    over the square root of the number of heads, the draw-to-draw noise of a head mean; and at least ``floor``,
    the rounding level of stable ranks of float32 weights (``64 eps32 srank d_emb``)."""
    gap: float
    spread: float
    floor: float
    draw: float = 0.0            # GROWTH_SE x RMS over heads of (twin - default) / sqrt(heads); 0 without a twin

    @property
    def threshold(self) -> float:
        return -max(self.spread, self.draw, self.floor)

    @property
    def significant(self) -> bool:
        return self.gap < self.threshold


def scale_gap(small: torch.Tensor, large: torch.Tensor, size: float, width: int,
              draws: torch.Tensor | None = None) -> ScaleGap:
    """:class:`ScaleGap` of per-head stable ranks ``small`` and ``large`` (same shape, heads); ``draws``: the
    per-head differences between two initialization draws at one scale (twin minus default), if any."""
    d = (small - large).flatten().double()
    spread = GROWTH_SE * float(d.std() / d.numel() ** 0.5) if d.numel() > 1 else float("inf")
    draw = 0.0 if draws is None else GROWTH_SE * float((draws.flatten().double() ** 2).mean().sqrt()
                                                      / draws.numel() ** 0.5)
    return ScaleGap(float(d.mean()), spread, roundoff(size, width, EPS32), draw)


def twin_gap(vit: VitRun, which: str) -> float:
    """The final stable-rank gap (mean over heads) between the twin replica (Adam, scale 1, a second
    initialization draw) and the default replica: what two draws at the *same* scale give (the draw noise)."""
    sr = vit.spectra.srank(f"delta_{which}")
    twin = vit.twin if vit.twin >= 0 else vit.adam_default
    return float((sr[-1, twin] - sr[-1, vit.adam_default]).double().mean())


def shuffled_gap(vit: VitRun, which: str) -> float:
    """Control of claim (c): the final stable-rank gap (mean over heads) between the shuffled-label copies of the
    smallest- and the largest-scale Adam replicas: the same gap for networks that cannot learn the task (the
    replicas themselves when the run has no shuffled copies)."""
    sr = vit.spectra.srank(f"delta_{which}")
    sweep = vit.scale_replicas
    small, large = (vit.shuffled.get(r, r) for r in (sweep[0], sweep[-1]))
    return float((sr[-1, small] - sr[-1, large]).double().mean())


def half_steps(svals: torch.Tensor, steps: list[int], top: int = 4) -> list[int]:
    """For singular values ``svals`` ``(checkpoint, index)`` of one head's learned change, the first checkpoint step
    at which each of the ``top`` largest reaches half its final value (do they rise together or one after another?
    the caption of the scale figure, paper Fig 6)."""
    s = svals[:, :top].double()
    reached = s >= 0.5 * s[-1]
    return [int(steps[int(reached[:, i].nonzero()[0])]) for i in range(s.shape[1])]


def scale_error(vit: VitRun, ignore_scale: bool = False) -> float:
    """Sanity row of the experiment's set-up (Section 5): at initialization the attention weights of the Adam
    replica with the scale alpha farthest from 1 are the default replica's times alpha:
    ``max |W(alpha) - alpha W(1)| / (alpha max |W(1)|)`` over to_qkv and to_out. ``ignore_scale=True`` compares
    with the default replica's weights themselves (the set-up that ignores the scale), the row's control."""
    res, a = vit.result, vit.adam_default
    small = max(vit.scale_replicas, key=lambda r: abs(math.log(vit.scales[r])))
    alpha = vit.scales[small]
    scaled = a if ignore_scale else small

    def err(w_small: torch.Tensor, w_default: torch.Tensor) -> float:
        w1 = w_default.double()
        return float((w_small.double() - alpha * w1).abs().max() / (abs(alpha) * w1.abs().max()))

    return max(err(res.qkv[0, scaled], res.qkv[0, a]), err(res.out[0, scaled], res.out[0, a]))


#: Tolerance of :func:`scale_error`: two float32 roundings, 64 eps32.
SCALE_TOLERANCE = roundoff(1.0, 1, EPS32)
