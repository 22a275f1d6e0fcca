"""The scalar observables of the chapter's observations (obs-transformer-rank-low, -growth, -scale) on the ViT and
char-GPT runs: head- and layer-averaged stable ranks at the end of the early transient and at the end of training,
per optimizer and initialization scale, their growth and trends (claim (b)), the low-rank ratio (claim (a)) and the
scale gaps (claim (c)), each also on the replicas trained on shuffled labels (the controls)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from stagewise.transformer_rank.experiments import GptRun, VitRun
from stagewise.transformer_rank.low_rank import low_rank_ratio
from stagewise.transformer_rank.rank_growth import Growth, Trend, growth_stats, mean_curve, trend
from stagewise.transformer_rank.scale_sweep import ScaleGap, scale_gap, shuffled_gap


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
    trends_shuffled: dict[str, Trend]  # same keys: the same trend of the replica trained on shuffled labels
    small_final: dict[str, float]   # "kq", "vo": mean final srank at the smallest scale
    large_final: dict[str, float]
    low_rank_ratio: float        # final srank(Delta KQ) / srank(KQ init), Adam (claim (a))
    first_step_ratio: float      # the same ratio after one Adam step (checkpoint of step 1; NaN without one)
    scale_finals: dict[str, list[float]]  # "kq", "vo": mean final srank per Adam scale of the sweep, smallest first
    scale_gap: dict[str, ScaleGap]  # "kq", "vo": final srank at smallest minus largest scale (claim (c))
    twin_gap: dict[str, ScaleGap]   # the same gap between two draws at scale 1 (the draw-to-draw noise)
    low_rank_ratio_shuffled: float  # low_rank_ratio of the replica trained on shuffled labels (its control)
    scale_gap_shuffled: dict[str, float]  # "kq", "vo": the head-mean scale gap of the shuffled-label replicas



def summarize_vit(vit: VitRun) -> VitSummary:
    """Head- and layer-averaged stable ranks of the ViT run for claims (a)-(c), and of its shuffled-label controls
    (a replica without a shuffled copy stands for its own control: the statistics are then equal)."""
    sr = {"kq": vit.spectra.srank("delta_kq"), "vo": vit.spectra.srank("delta_vo")}
    a, s = vit.adam_default, vit.sgd
    init = {"kq": vit.spectra.srank("init_kq"), "vo": vit.spectra.srank("init_vo")}
    init_kq, init_vo = init["kq"][a], init["vo"][a]
    steps = vit.result.steps
    replicas = {"adam": a, "sgd": s}
    ctl = lambda r: vit.shuffled.get(r, r)          # noqa: E731 - the shuffled-label copy of replica r
    final = {f"{o}_{m}": float(sr[m][-1, r].mean()) for o, r in replicas.items() for m in sr}
    stats = {f"{o}_{m}": growth_stats(sr[m][:, r], steps) for o, r in replicas.items() for m in sr}
    trends = {f"{o}_{m}": trend(mean_curve(sr[m][:, r]), steps) for o, r in replicas.items() for m in sr}
    shuffled = {f"{o}_{m}": trend(mean_curve(sr[m][:, ctl(r)]), steps) for o, r in replicas.items() for m in sr}
    sweep = vit.scale_replicas
    small, large = sweep[0], sweep[-1]
    size = float(init_kq.mean())
    twin = vit.twin if vit.twin >= 0 else a
    return VitSummary(
        sr["kq"], sr["vo"], a, s, small, large, vit.twin,
        float(init_kq.mean()), float(init_vo.mean()), final, {k: g.growth for k, g in stats.items()}, stats,
        trends, shuffled,
        {m: float(sr[m][-1, small].mean()) for m in sr}, {m: float(sr[m][-1, large].mean()) for m in sr},
        low_rank_ratio(vit, a),
        float(sr["kq"][steps.index(1), a].mean() / init_kq.mean()) if 1 in steps else math.nan,
        {m: [float(sr[m][-1, r].mean()) for r in sweep] for m in sr},
        {m: scale_gap(sr[m][-1, small], sr[m][-1, large], size, vit.cfg.width,
                      sr[m][-1, twin] - sr[m][-1, a] if vit.twin >= 0 else None) for m in sr},
        {m: scale_gap(sr[m][-1, twin], sr[m][-1, a], size, vit.cfg.width) for m in sr},
        low_rank_ratio(vit, ctl(a)), {m: shuffled_gap(vit, m) for m in sr})


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
    """Head- and layer-averaged stable ranks of the char-GPT (on the text, or on its shuffled characters, the
    control): the transient and the trends."""
    kq, vo = gpt.spectra.srank("delta_kq")[:, 0], gpt.spectra.srank("delta_vo")[:, 0]
    steps = gpt.result.steps
    return GptSummary(kq, vo, float(gpt.spectra.srank("init_kq").mean()), growth_stats(vo, steps),
                      growth_stats(kq, steps), trend(mean_curve(vo), steps), trend(mean_curve(kq), steps))
