"""The scalar observables of the chapter's claims (Assumption asm-transformer-rank-claims):
head- and layer-averaged stable ranks at a quarter of training and at the end, per optimizer
and initialization scale, the extraction check, and the verdicts of the claims table."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from stagewise.numerics.datasets import patchify
from stagewise.transformer_rank.attention_heads import extraction_error, rank_tail
from stagewise.transformer_rank.experiments import GptRun, VitRun, quarter_index

#: Tolerance of the "gradual increase" claim: checkpoint-to-checkpoint wiggle late in training.
GROWTH_TOLERANCE = 0.05
#: The learned change is "low rank" when its stable rank is below this fraction of the initial one.
LOW_RANK_FRACTION = 0.5


@dataclass
class VitSummary:
    """Stable ranks of the ViT run; ``kq``/``vo`` are Delta(W_K W_Q^T), Delta(W_V W_O^T)."""
    sr_kq: torch.Tensor          # (checkpoint, replica, layer, head)
    sr_vo: torch.Tensor
    adam: int                    # replica: Adam, scale 1
    sgd: int                     # replica: SGD, scale 1
    small: int                   # replica: Adam, smallest scale
    large: int                   # replica: Adam, largest scale
    quarter: int                 # checkpoint index nearest a quarter of training
    quarter_step: int
    init_kq: float               # mean srank of W_K W_Q^T at init (Adam, scale 1)
    init_vo: float
    final: dict[str, float]      # "adam_kq", "adam_vo", "sgd_kq", "sgd_vo": mean final srank
    growth: dict[str, float]     # same keys: mean srank at the end minus at the quarter
    small_final: dict[str, float]   # "kq", "vo": mean final srank at the smallest scale
    large_final: dict[str, float]
    low_rank_ratio: float        # final srank(Delta KQ) / srank(KQ init), Adam (claim (a))
    scale_gap: dict[str, float]  # "kq", "vo": final srank at smallest minus largest scale (claim (c))


def summarize_vit(vit: VitRun) -> VitSummary:
    """Head- and layer-averaged stable ranks of the ViT run for claims (a)-(c)."""
    sr = {"kq": vit.spectra.srank("delta_kq"), "vo": vit.spectra.srank("delta_vo")}
    a, s = vit.adam_default, vit.sgd
    init_kq, init_vo = vit.spectra.srank("init_kq")[a], vit.spectra.srank("init_vo")[a]
    q = quarter_index(vit.result.steps)
    replicas = {"adam": a, "sgd": s}
    final = {f"{o}_{m}": float(sr[m][-1, r].mean()) for o, r in replicas.items() for m in sr}
    growth = {f"{o}_{m}": float(sr[m][-1, r].mean() - sr[m][q, r].mean()) for o, r in replicas.items() for m in sr}
    adam = [r for r, o in enumerate(vit.optimizers) if o == "adam"]
    small, large = adam[0], adam[-1]
    return VitSummary(
        sr["kq"], sr["vo"], a, s, small, large, q, int(vit.result.steps[q]),
        float(init_kq.mean()), float(init_vo.mean()), final, growth,
        {m: float(sr[m][-1, small].mean()) for m in sr}, {m: float(sr[m][-1, large].mean()) for m in sr},
        float(sr["kq"][-1, a].mean() / init_kq.mean()),
        {m: float(sr[m][-1, small].mean() - sr[m][-1, large].mean()) for m in sr})


@dataclass
class GptSummary:
    """Stable ranks of the char-GPT run (replica 0)."""
    sr_kq: torch.Tensor          # (checkpoint, layer, head)
    sr_vo: torch.Tensor
    quarter: int
    quarter_step: int
    kq_quarter: float
    kq_final: float
    vo_quarter: float
    vo_final: float
    init_kq: float               # mean srank of W_Q W_K^T at init
    vo_drop: float               # srank(Delta VO) at the quarter minus at the end (claim (b), Fig 20)


def summarize_gpt(gpt: GptRun) -> GptSummary:
    """Head- and layer-averaged stable ranks of the char-GPT at a quarter of training and at the end."""
    kq, vo = gpt.spectra.srank("delta_kq")[:, 0], gpt.spectra.srank("delta_vo")[:, 0]
    q = quarter_index(gpt.result.steps)
    return GptSummary(kq, vo, q, int(gpt.result.steps[q]), float(kq[q].mean()), float(kq[-1].mean()),
                      float(vo[q].mean()), float(vo[-1].mean()), float(gpt.spectra.srank("init_kq").mean()),
                      float(vo[q].mean() - vo[-1].mean()))


@dataclass
class Extraction:
    """Checks of Proposition prop-transformer-rank-bound and eq. (1) on the trained ViT."""
    error: float                 # relative error of rebuilt first-layer logits
    rank_tail: float             # largest sigma_{d_h+1} / sigma_1 of the final W_K W_Q^T


def extraction_checks(vit: VitRun, device: torch.device | str = "cpu", count: int = 64) -> Extraction:
    """Extraction error on ``count`` test images and the rank tail of the final W_K W_Q^T (Adam, scale 1)."""
    a, cfg = vit.adam_default, vit.cfg
    patches = patchify(vit.images.x_test[:count], vit.settings.patch).to(device)
    error = extraction_error(vit.params, cfg, patches, replica=a)
    return Extraction(error, rank_tail(vit.result.qkv[-1, a], vit.result.out[-1, a], cfg.heads, cfg.head_dim))


def verdicts(vit: VitSummary, gpt: GptSummary) -> dict[str, str]:
    """The verdict column of the claims table: ``v_low``, ``v_grow``, ``v_sgd_vo``, ``v_scale``, ``v_gpt``."""
    word = lambda ok: "reproduced" if ok else "not reproduced"
    return {
        "v_low": word(vit.final["adam_kq"] < LOW_RANK_FRACTION * vit.init_kq),
        "v_grow": word(min(vit.growth["adam_kq"], vit.growth["adam_vo"], vit.growth["sgd_kq"]) >= -GROWTH_TOLERANCE),
        "v_sgd_vo": f"{vit.growth['sgd_vo']:+.2f} here; not robust across seeds",
        "v_scale": word(vit.small_final["kq"] < vit.large_final["kq"] and vit.small_final["vo"] < vit.large_final["vo"]),
        "v_gpt": word(gpt.vo_final > gpt.vo_quarter),
    }
