"""The scalar observables of the chapter's claims (Assumption asm-transformer-rank-claims) on the ViT and char-GPT
runs: head- and layer-averaged stable ranks at the end of the early transient and at the end of training, per
optimizer and initialization scale, their growth and trends (claim (b)), the low-rank ratio (claim (a)) and the
scale gaps (claim (c))."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from stagewise.transformer_rank.experiments import GptRun, VitRun
from stagewise.transformer_rank.rank_growth import Growth, Trend, growth_stats, mean_curve, trend
from stagewise.transformer_rank.scale_sweep import ScaleGap, scale_gap


@dataclass
class VitSummary:
    """Stable ranks of the ViT run; ``kq``/``vo`` are Delta(W_K W_Q^T), Delta(W_V W_O^T)."""
    sr_kq: torch.Tensor          # (checkpoint, replica, layer, head)
    sr_vo: torch.Tensor
    adam: int                    # replica: Adam, scale 1
    sgd: int                     # replica: SGD, scale 1
    small: int                   # replica: Adam, smallest scale
    large: int                   # replica: Adam, largest scale
    twin: int                    # replica: Adam, scale 1, second initialization draw (-1: none)
    init_kq: float               # mean srank of W_K W_Q^T at init (Adam, scale 1)
    init_vo: float
    final: dict[str, float]      # "adam_kq", "adam_vo", "sgd_kq", "sgd_vo": mean final srank
    growth: dict[str, float]     # same keys: mean srank at the end minus at the end of the transient
    growth_stats: dict[str, Growth]  # same keys: growth from the trough and its head-to-head spread (prose)
    trends: dict[str, Trend]     # same keys: claim (b), trend over all checkpoints after step 0
    full_curves: dict[str, torch.Tensor]  # same keys: head-mean srank of W_K W_Q^T (t) itself (the control)
    small_final: dict[str, float]   # "kq", "vo": mean final srank at the smallest scale
    large_final: dict[str, float]
    low_rank_ratio: float        # final srank(Delta KQ) / srank(KQ init), Adam (claim (a))
    first_step_ratio: float      # the same ratio after one Adam step (checkpoint of step 1; NaN without one)
    scale_finals: dict[str, list[float]]  # "kq", "vo": mean final srank per Adam scale of the sweep, smallest first
    scale_gap: dict[str, ScaleGap]  # "kq", "vo": final srank at smallest minus largest scale (claim (c))
    twin_gap: dict[str, ScaleGap]   # control of claim (c): the same gap between two draws at scale 1



def summarize_vit(vit: VitRun) -> VitSummary:
    """Head- and layer-averaged stable ranks of the ViT run for claims (a)-(c)."""
    sr = {"kq": vit.spectra.srank("delta_kq"), "vo": vit.spectra.srank("delta_vo")}
    full = {"kq": vit.spectra.srank("full_kq"), "vo": vit.spectra.srank("full_vo")}
    a, s = vit.adam_default, vit.sgd
    init = {"kq": vit.spectra.srank("init_kq"), "vo": vit.spectra.srank("init_vo")}
    init_kq, init_vo = init["kq"][a], init["vo"][a]
    steps = vit.result.steps
    replicas = {"adam": a, "sgd": s}
    final = {f"{o}_{m}": float(sr[m][-1, r].mean()) for o, r in replicas.items() for m in sr}
    stats = {f"{o}_{m}": growth_stats(sr[m][:, r], steps) for o, r in replicas.items() for m in sr}
    trends = {f"{o}_{m}": trend(mean_curve(sr[m][:, r]), steps) for o, r in replicas.items() for m in sr}
    fulls = {f"{o}_{m}": mean_curve(full[m][:, r]) for o, r in replicas.items() for m in sr}
    sweep = vit.scale_replicas
    small, large = sweep[0], sweep[-1]
    size = float(init_kq.mean())
    twin = vit.twin if vit.twin >= 0 else a
    return VitSummary(
        sr["kq"], sr["vo"], a, s, small, large, vit.twin,
        float(init_kq.mean()), float(init_vo.mean()), final, {k: g.growth for k, g in stats.items()}, stats,
        trends, fulls,
        {m: float(sr[m][-1, small].mean()) for m in sr}, {m: float(sr[m][-1, large].mean()) for m in sr},
        float(sr["kq"][-1, a].mean() / init_kq.mean()),
        float(sr["kq"][steps.index(1), a].mean() / init_kq.mean()) if 1 in steps else math.nan,
        {m: [float(sr[m][-1, r].mean()) for r in sweep] for m in sr},
        {m: scale_gap(sr[m][-1, small], sr[m][-1, large], size, vit.cfg.width,
                      sr[m][-1, twin] - sr[m][-1, a] if vit.twin >= 0 else None) for m in sr},
        {m: scale_gap(sr[m][-1, twin], sr[m][-1, a], size, vit.cfg.width) for m in sr})


@dataclass
class GptSummary:
    """Stable ranks of the char-GPT run (replica 0)."""
    sr_kq: torch.Tensor          # (checkpoint, layer, head)
    sr_vo: torch.Tensor
    init_kq: float               # mean srank of W_Q W_K^T at init
    vo_growth: Growth            # growth of srank(Delta VO) after the transient and its spread (prose)
    kq_growth: Growth
    vo_trend: Trend              # claim (b): trend over all checkpoints after step 0
    kq_trend: Trend
    full_vo: torch.Tensor        # head-mean srank of W_V W_O^T (t) itself (the control)
    full_kq: torch.Tensor

    @property
    def vo_reference(self) -> float:
        return float(self.sr_vo[self.vo_growth.reference.index].mean())

    @property
    def kq_reference(self) -> float:
        return float(self.sr_kq[self.kq_growth.reference.index].mean())

    @property
    def vo_final(self) -> float:
        return float(self.sr_vo[-1].mean())

    @property
    def kq_final(self) -> float:
        return float(self.sr_kq[-1].mean())


def summarize_gpt(gpt: GptRun) -> GptSummary:
    """Head- and layer-averaged stable ranks of the char-GPT: the transient, the trends and their controls."""
    kq, vo = gpt.spectra.srank("delta_kq")[:, 0], gpt.spectra.srank("delta_vo")[:, 0]
    steps = gpt.result.steps
    return GptSummary(kq, vo, float(gpt.spectra.srank("init_kq").mean()), growth_stats(vo, steps),
                      growth_stats(kq, steps), trend(mean_curve(vo), steps), trend(mean_curve(kq), steps),
                      mean_curve(gpt.spectra.srank("full_vo")[:, 0]), mean_curve(gpt.spectra.srank("full_kq")[:, 0]))
