"""The L-BFGS certificate of V*(gamma), the closed-form minimum of the objective (3.1).

Statement ``thm-linear-riccati-varopt``: independent numerical minima of the convex reformulation, one per gamma,
against the closed form at the singular values of beta_* (control: those of the label-generating beta_gt).
"""
from __future__ import annotations

import torch

from stagewise.linear_riccati.data import Problem
from stagewise.linear_riccati.implicit_bias import variational_numeric, variational_value


def variational_minima(problem: Problem, gammas, seed: int) -> list[float]:
    """Proposition ``thm-linear-riccati-varopt``: independent L-BFGS minima of the convex reformulation, one per
    gamma (random start from ``seed``)."""
    return [variational_numeric(problem.X.cpu().numpy(), problem.Y.cpu().numpy(), float(g), seed=seed)["value"]
            for g in gammas]


def variational_gap(minima, problem: Problem, gammas, target: str = "beta_star") -> float:
    """Largest relative gap between the L-BFGS ``minima`` and the closed-form V*(gamma) at the singular values of
    ``target``: "beta_star" (X^+ Y, the proposition) or "beta_gt" (the label-generating matrix, the control: the
    wrong optimum). NaN for no gammas."""
    B = problem.beta_star if target == "beta_star" else problem.beta_gt
    sigma = torch.linalg.svdvals(B).cpu().numpy()
    d = problem.XtY.shape[0]
    gaps = [abs(v - variational_value(sigma, g, d)) / variational_value(sigma, g, d) for v, g in zip(minima, gammas)]
    return float(max(gaps)) if gaps else float("nan")


def variational_certificate(problem: Problem, gammas, seed: int) -> float:
    """Proposition ``thm-linear-riccati-varopt``: :func:`variational_gap` of the L-BFGS minima from ``seed``."""
    return variational_gap(variational_minima(problem, gammas, seed), problem, gammas)
