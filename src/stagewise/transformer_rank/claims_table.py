"""The claims table of Assumption asm-transformer-rank-claims: one empirical row of the checks table per claim, with
its computed control and criterion (claims (a)-(c) on the ViT, claim (b) on the char-GPT), and the verdict words of
the claims table read from the claim's row."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from stagewise.core.checks import rows as checks
from stagewise.core.checks.rows import Check, fmt
from stagewise.transformer_rank.experiments import GptRun, VitRun
from stagewise.transformer_rank.low_rank import LOW_RANK_FRACTION, random_change_ratio
from stagewise.transformer_rank.rank_growth import GROWTH_SE, mean_curve, reproduced_rise, trend, trend_lower
from stagewise.transformer_rank.scale_sweep import twin_gap
from stagewise.transformer_rank.summaries import GptSummary, VitSummary


def claim_verdict(row: Check) -> str:
    """The verdict of the claims table, read from the claim's row of the checks table (one verdict per
    claim): ``reproduced`` or ``not reproduced at this budget``, with the measured value and threshold."""
    word = "reproduced" if row.passed else "not reproduced at this budget"
    return f"{word} ({fmt(row.value)} against {fmt(row.tolerance)})"


@dataclass
class ClaimRow:
    """One empirical claim of Assumption asm-transformer-rank-claims as a row of the checks table
    (``run.empirical``); ``key`` names the verdict glued into the claims table. The control is an experiment
    the chapter evaluates with ``run.control(control_what, control_experiment, *control_args)``, judged by
    the row's own criterion ``reproduced``."""
    key: str
    name: str
    value: float
    tolerance: float
    reproduced: Callable[[float], bool]
    relation: str
    detail: str
    control_what: str
    control_experiment: Callable
    control_args: tuple
    reason: str


def _trend_row(key: str, name: str, curve: torch.Tensor, full: torch.Tensor, steps: list[int],
               detail: str) -> ClaimRow:
    tr = trend(curve, steps)
    return ClaimRow(key, name, tr.lower, 0.0, reproduced_rise, ">=", detail,
                    "the same trend of the matrix itself, W(t) instead of its change (initialization not subtracted)",
                    trend_lower, (full, steps),
                    f"{tr.describe()}: the interval does not lie above zero")


def claim_rows(vit: VitSummary, gpt: GptSummary, vit_run: VitRun, gpt_run: GptRun,
               control_stream: torch.Generator) -> list[ClaimRow]:
    """The empirical rows of the chapter, one per line of the claims table: (a) low rank of the learned
    change (control: a change of the same size in a random direction), (c) smaller initialization gives lower
    stable rank, both matrices (control: the same gap between two initialization draws at the same scale),
    and (b) the gradual increase, a trend over all checkpoints after step 0, ViT with Adam and SGD and the
    char-GPT (control: the same trend of the matrix itself instead of its change)."""
    low = LOW_RANK_FRACTION
    rows = [ClaimRow("v_low", "srank(Delta KQ) final / srank(KQ init), Adam", vit.low_rank_ratio, low,
                     checks.below(low), "<=",
                     "learned change of W_K W_Q^T is low-rank relative to init (Figs 1, 5)",
                     "change of the learned size in a random direction", random_change_ratio,
                     (vit_run, control_stream), f"ratio {vit.low_rank_ratio:.3f} is not below {low:g}")]
    for m in ("kq", "vo"):
        gap = vit.scale_gap[m]
        rows.append(ClaimRow(
            f"v_scale_{m}", f"srank(Delta {m.upper()}): smallest minus largest scale", gap.gap, gap.threshold,
            checks.below(gap.threshold), "<=", "smaller initialization gives lower stable rank (Figs 6, 7)",
            "two initialization draws at the same scale 1 (the twin minus the default replica)", twin_gap,
            (vit_run, m),
            f"gap {gap.gap:+.4f}, no noise estimate with a single head" if math.isinf(gap.spread) else
            f"gap {gap.gap:+.4f} is not below {gap.threshold:.4f} (the larger of {GROWTH_SE:g} s.e. of the per-head "
            f"gaps, {gap.spread:.4f}, and of the draw-to-draw noise of a head mean, {gap.draw:.4f}; at least the "
            f"float32 rounding level {gap.floor:.1e})"))
    figs = {"adam": "Figs 4, 15", "sgd": "Figs 12, 13"}
    steps = vit_run.result.steps
    r = {"adam": vit.adam, "sgd": vit.sgd}
    for o, label in (("adam", "Adam"), ("sgd", "SGD")):
        for m in ("kq", "vo"):
            sr = vit.sr_kq if m == "kq" else vit.sr_vo
            rows.append(_trend_row(f"v_grow_{o}_{m}", f"srank(Delta {m.upper()}) trend over training, {label}",
                                   mean_curve(sr[:, r[o]]), vit.full_curves[f"{o}_{m}"], steps,
                                   f"rises over all checkpoints, beyond {GROWTH_SE:g} s.e. ({figs[o]})"))
    gsteps = gpt_run.result.steps
    rows.append(_trend_row("v_gpt_vo", "char-GPT srank(Delta VO) trend over training", mean_curve(gpt.sr_vo),
                           gpt.full_vo, gsteps, f"rises over all checkpoints, beyond {GROWTH_SE:g} s.e. (Fig 20)"))
    rows.append(_trend_row("v_gpt_kq", "char-GPT srank(Delta QK) trend over training", mean_curve(gpt.sr_kq),
                           gpt.full_kq, gsteps, f"rises over all checkpoints, beyond {GROWTH_SE:g} s.e. (Fig 20)"))
    return rows
