"""The empirical rows of the chapter's observations (obs-transformer-rank-low, -growth, -scale): one row per claim
of the paper, each with its control, a network trained on shuffled labels (ViT) or on the text's characters in
random order (char-GPT), which cannot learn the task; a claim counts as reproduced only when its statistic passes
and the control's does not (:class:`FailsOnControl`). Also the verdict words of the claims table, read from the row.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import torch

from stagewise.core.checks import rows as checks
from stagewise.core.checks.rows import Check, fmt
from stagewise.transformer_rank.experiments import GptRun, VitRun
from stagewise.transformer_rank.low_rank import LOW_RANK_FRACTION, low_rank_ratio
from stagewise.transformer_rank.rank_growth import GROWTH_SE, mean_curve, reproduced_rise, trend, trend_lower
from stagewise.transformer_rank.scale_sweep import shuffled_gap
from stagewise.transformer_rank.summaries import GptSummary, VitSummary


def claim_verdict(row: Check) -> str:
    """The verdict of the claims table, read from the claim's row of the checks table (one verdict per
    claim): ``reproduced`` or ``not reproduced at this budget``, with the measured value, threshold and control."""
    word = "reproduced" if row.passed else "not reproduced at this budget"
    control = f"; control {fmt(row.control.value)}" if row.control is not None and not row.control.is_none else ""
    return f"{word} ({fmt(row.value)} against {fmt(row.tolerance)}{control})"


@dataclass(frozen=True)
class FailsOnControl:
    """The criterion of a claim whose control is a network that cannot learn the task: the claim's statistic
    passes ``base`` and the control's statistic ``control`` does not. Applied to the control's own value it is
    ``base`` (so the table shows whether the control passes the claim's test)."""
    base: Callable[[float], bool]
    control: float

    def __call__(self, value: Any) -> bool:
        same = value == self.control or (_nan(value) and _nan(self.control))
        return bool(self.base(value)) if same else bool(self.base(value)) and not bool(self.base(self.control))


def _nan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


@dataclass
class ClaimRow:
    """One empirical claim as a row of the checks table (``run.empirical``); ``key`` names the verdict glued
    into the claims table, ``statement`` the observation it tests. The control is the experiment
    ``control_experiment(*control_args)`` (a network that cannot learn the task), judged by ``reproduced``."""
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
    reason: str                  # why the statistic itself does not pass
    statement: str


def record_claims(run, rows: list[ClaimRow], skip: Callable[[ClaimRow], str] | None = None) -> None:
    """Record every row with ``run.empirical``: the control is computed first (``run.control``) and the row
    is reproduced only when its statistic passes and the control's does not (:class:`FailsOnControl`). A row for
    which ``skip(row)`` gives a reason is recorded as not run (a hypothesis of the claim fails). The verdict words
    are glued under the row's key."""
    for row in rows:
        unmet = skip(row) if skip else ""
        if unmet:
            run.not_run(row.name, unmet, row.detail, kind="empirical")
            run.value(row.key, "not run (" + unmet + ")")
            continue
        control = run.control(row.control_what, row.control_experiment, *row.control_args)
        reason = row.reason
        if row.reproduced(row.value) and row.reproduced(control.value):
            reason = (f"the statistic passes ({fmt(row.value)}) but so does its control, {row.control_what} "
                      f"({fmt(control.value)}): it does not tell learning from no learning")
        run.empirical(row.name, row.value, row.tolerance, FailsOnControl(row.reproduced, control.value),
                      row.detail, relation=row.relation, statement=row.statement, reason=reason, control=control)
        run.value(row.key, claim_verdict(run.checks[-1]))


def trend_row(key: str, name: str, curve: torch.Tensor, control: torch.Tensor, steps: list[int], detail: str,
              control_what: str) -> ClaimRow:
    """A growth row: the lower end of the trend interval of ``curve`` above zero; control: ``control``."""
    tr = trend(curve, steps)
    return ClaimRow(key, name, tr.lower, 0.0, reproduced_rise, ">=", detail, control_what, trend_lower,
                    (control, steps), f"{tr.describe()}: the interval does not lie above zero",
                    "obs-transformer-rank-growth")


SHUFFLED = "the same replica trained on shuffled labels"


def claim_rows(vit: VitSummary, gpt: GptSummary, vit_run: VitRun, gpt_run: GptRun,
               gpt_control: GptSummary) -> list[ClaimRow]:
    """The empirical rows of the ViT and char-GPT, one per line of the claims table: (a) low rank of the learned
    change, (c) smaller initialization gives lower stable rank, both matrices, and (b) the gradual increase, a trend
    over all checkpoints after step 0, ViT with Adam and SGD and the char-GPT. Controls: the shuffled-label
    replicas (ViT) and the char-GPT trained on the shuffled characters (``gpt_control``)."""
    low = LOW_RANK_FRACTION
    control_of = lambda r: vit_run.shuffled.get(r, r)      # noqa: E731
    rows = [ClaimRow("v_low", "srank(Delta KQ) final / srank(KQ init), Adam", vit.low_rank_ratio, low,
                     checks.below(low), "<=",
                     "learned change of W_K W_Q^T is low-rank relative to init (Figs 1, 5)",
                     SHUFFLED, low_rank_ratio, (vit_run, control_of(vit.adam)),
                     f"ratio {vit.low_rank_ratio:.3f} is not below {low:g}", "obs-transformer-rank-low")]
    for m in ("kq", "vo"):
        gap = vit.scale_gap[m]
        threshold = gap.threshold
        rows.append(ClaimRow(
            f"v_scale_{m}", f"srank(Delta {m.upper()}): smallest minus largest scale", gap.gap, threshold,
            checks.below(threshold), "<=",
            "smaller initialization gives lower stable rank (Figs 6, 7)",
            "the same gap between the replicas trained on shuffled labels", shuffled_gap, (vit_run, m),
            f"gap {gap.gap:+.4f}, no noise estimate with a single head" if math.isinf(gap.spread) else
            f"gap {gap.gap:+.4f} is not below {threshold:.4f} (the larger of {GROWTH_SE:g} s.e. of the per-head "
            f"gaps, {gap.spread:.4f}, and of the draw-to-draw noise of a head mean, {gap.draw:.4f}; at least the "
            f"float32 rounding level {gap.floor:.1e})", "obs-transformer-rank-scale"))
    figs = {"adam": "Figs 4, 15", "sgd": "Figs 12, 13"}
    steps = vit_run.result.steps
    r = {"adam": vit.adam, "sgd": vit.sgd}
    for o, label in (("adam", "Adam"), ("sgd", "SGD")):
        for m in ("kq", "vo"):
            sr = vit.sr_kq if m == "kq" else vit.sr_vo
            rows.append(trend_row(f"v_grow_{o}_{m}", f"srank(Delta {m.upper()}) trend over training, {label}",
                                  mean_curve(sr[:, r[o]]), mean_curve(sr[:, control_of(r[o])]), steps,
                                  f"rises over all checkpoints, beyond {GROWTH_SE:g} s.e. ({figs[o]})", SHUFFLED))
    gsteps = gpt_run.result.steps
    text = "the same model trained on the text's characters in random order"
    for m, label in (("vo", "VO"), ("kq", "QK")):
        rows.append(trend_row(f"v_gpt_{m}", f"char-GPT srank(Delta {label}) trend over training",
                              mean_curve(getattr(gpt, f"sr_{m}")), mean_curve(getattr(gpt_control, f"sr_{m}")),
                              gsteps, f"rises over all checkpoints, beyond {GROWTH_SE:g} s.e. (Fig 20)", text))
    return rows
