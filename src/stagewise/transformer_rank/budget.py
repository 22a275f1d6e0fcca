"""The verdict of the growth claims against the training budget (observation obs-transformer-rank-growth).

The default Adam and SGD replicas and their shuffled-label copies are trained again from the same initial weights
with other budgets (half and twice the run's steps, with the warmup and the cosine cycle scaled to the budget) on
minibatches of their own stream; at each budget the growth claim is decided as in the claims table: the trend of
the true-label run rises beyond its noise and the trend of its shuffled-label copy does not.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from stagewise.numerics import datasets as data
from stagewise.transformer_rank.experiments import VitRun, train_vit_replicas
from stagewise.transformer_rank.parameters import BUDGET_FRACTIONS
from stagewise.transformer_rank.rank_growth import Trend, mean_curve, reproduced_rise, trend
from stagewise.transformer_rank.spectra import checkpoint_spectra

#: The other budgets, as fractions of the run's steps (the run itself is the budget 1; kept in the torch-free cost
#: model, which counts their steps).
FRACTIONS = BUDGET_FRACTIONS
#: The growth claims of the ViT: optimizer and matrix.
KEYS = ("adam_kq", "adam_vo", "sgd_kq", "sgd_vo")


@dataclass
class BudgetPoint:
    """The growth statistics of one budget: the trend of each claim's head-mean stable-rank curve on the true
    labels and on the shuffled labels (:func:`stagewise.transformer_rank.rank_growth.trend`)."""
    steps: int
    trends: dict[str, Trend]     # KEYS -> trend of the true-label replica
    shuffled: dict[str, Trend]   # KEYS -> trend of its shuffled-label copy
    own: bool = False            # the run's own budget (its rows are the claims table's)

    def reproduced(self, key: str) -> bool:
        """The claims table's rule: the true-label trend rises beyond its noise, the shuffled-label one does not."""
        return reproduced_rise(self.trends[key].lower) and not reproduced_rise(self.shuffled[key].lower)


def _point(result, heads: int, head_dim: int, replicas: dict[str, tuple[int, int]], device) -> BudgetPoint:
    spectra = checkpoint_spectra(result, heads, head_dim, device)
    sr = {"kq": spectra.srank("delta_kq"), "vo": spectra.srank("delta_vo")}
    trends, shuffled = {}, {}
    for key in KEYS:
        optimizer, m = key.split("_")
        true, control = replicas[optimizer]
        trends[key] = trend(mean_curve(sr[m][:, true]), result.steps)
        shuffled[key] = trend(mean_curve(sr[m][:, control]), result.steps)
    return BudgetPoint(result.steps[-1], trends, shuffled)


def against_budget(vit: VitRun, generator: torch.Generator, device: torch.device, fractions=FRACTIONS,
                   progress: Callable | None = None) -> list[BudgetPoint]:
    """The growth statistics at the run's own budget and at the budgets of :func:`budget_sweep`, by budget."""
    return sorted(budget_sweep(vit, generator, device, fractions, progress) + [budget_point(vit, device)],
                  key=lambda p: (p.steps, not p.own))


def budget_point(vit: VitRun, device: torch.device | str = "cpu") -> BudgetPoint:
    """The run's own budget: the growth statistics of the default Adam and SGD replicas and their controls."""
    replicas = {"adam": (vit.adam_default, vit.shuffled.get(vit.adam_default, vit.adam_default)),
                "sgd": (vit.sgd, vit.shuffled.get(vit.sgd, vit.sgd))}
    point = _point(vit.result, vit.cfg.heads, vit.cfg.head_dim, replicas, device)
    point.own = True
    return point


def budget_sweep(vit: VitRun, generator: torch.Generator, device: torch.device, fractions=FRACTIONS,
                 progress: Callable | None = None) -> list[BudgetPoint]:
    """Train the default Adam and SGD replicas of ``vit`` and their shuffled-label copies again, from the same
    initial weights, for each budget ``round(f * steps)`` (at least 8 steps) of ``fractions``, on minibatches
    drawn from ``generator``; the growth statistics of each budget, in the order of ``fractions``."""
    s = vit.settings
    chosen = [vit.adam_default, vit.sgd] + [vit.shuffled.get(r, r) for r in (vit.adam_default, vit.sgd)]
    x_train = data.patchify(vit.images.x_train, s.patch).to(device)
    y_train = vit.images.y_train.to(device)
    y_shuffled = None if vit.y_shuffled is None else vit.y_shuffled.to(device)
    points = []
    for f in fractions:
        steps = max(8, round(f * s.steps))
        params = {k: v[chosen].clone().requires_grad_(True) for k, v in vit.initial.items()}
        result, _ = train_vit_replicas(s, steps, vit.cfg, params, [vit.optimizers[r] for r in chosen],
                                       [vit.labels[r] for r in chosen], x_train, y_train, y_shuffled, generator,
                                       device, progress)
        points.append(_point(result, vit.cfg.heads, vit.cfg.head_dim, {"adam": (0, 2), "sgd": (1, 3)}, device))
    return points


def _steps_text(steps: list[int]) -> str:
    if not steps:
        return "at no budget"
    words = [str(s) for s in steps]
    return "at " + (words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]) + " steps"


def describe(points: list[BudgetPoint], names: dict[str, str]) -> str:
    """One sentence for the story: at which budgets each growth claim is reproduced."""
    parts = [f"{names.get(key, key)} {_steps_text([p.steps for p in points if p.reproduced(key)])}" for key in KEYS]
    return "Reproduced, by claim: " + "; ".join(parts) + "."


def moving(points: list[BudgetPoint], names: dict[str, str]) -> str:
    """One sentence for the story: which claims change verdict between the budgets of the sweep."""
    moved = [names.get(key, key) for key in KEYS if len({p.reproduced(key) for p in points}) > 1]
    if not moved:
        return "No verdict changes between these budgets."
    return ("The verdict changes with the budget for " + ", ".join(moved) + ": at this size the budget, not the "
            "model, decides it.")


def default_verdict(points: list[BudgetPoint], names: dict[str, str]) -> str:
    """One sentence for the story: the ViT growth claims not reproduced at the run's own budget."""
    own = next(p for p in points if p.own)
    missing = [names.get(key, key) for key in KEYS if not own.reproduced(key)]
    if not missing:
        return f"At the default budget of {own.steps} steps all four ViT growth claims are reproduced."
    if len(missing) == len(KEYS):
        return f"At the default budget of {own.steps} steps none of the four ViT growth claims is reproduced."
    return (f"At the default budget of {own.steps} steps these ViT growth claims are not reproduced: "
            + ", ".join(missing) + ".")
