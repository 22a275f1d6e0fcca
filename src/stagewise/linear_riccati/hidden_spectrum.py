"""The hidden-layer spectrum during training (the paper's Figs. 1a and 4) against Corollary 3.1.

Statement ``thm-linear-riccati-cor``: orthogonal I_gamma runs, and Gaussian initializations compared through
gamma_eff = var_w1 * width / 2.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from stagewise.linear_riccati.data import Problem
from stagewise.linear_riccati.gradient_descent import gd
from stagewise.linear_riccati.implicit_bias import corollary_spectrum, drift_bounds
from stagewise.linear_riccati.initialization import gaussian_init
from stagewise.linear_riccati.reduction import RECORDS
from stagewise.numerics.roundoff import roundoff


@dataclass
class GaussianRuns:
    """GD from Gaussian (W1, W2) with the given variances (one batch element each); ``records`` from :func:`gd`."""
    var_w1: list
    var_w2: list
    gamma_eff: np.ndarray
    records: dict


def gaussian_runs(problem: Problem, var_w1, var_w2, width: int, eta: float, steps: int,
                  generator: torch.Generator) -> GaussianRuns:
    """Fig. 1a (right) and Fig. 4: GD from Gaussian initializations, batched over the variance pairs."""
    d, k = problem.XtY.shape
    W1, W2, gamma_eff = gaussian_init(var_w1, var_w2, d, width, k, generator, device=problem.X.device)
    records = gd(problem.XtX, problem.XtY, W1, W2, eta, steps, record_every=max(1, steps // RECORDS))
    return GaussianRuns(list(var_w1), list(var_w2), gamma_eff, records)


@dataclass
class HiddenSpectrum:
    """Final sigma(W1) against Corollary 3.1 (orthogonal runs), and the gap sigma_k / sigma_{k+1} of the Fig. 4
    runs (W2 variance 1e-3 and 1e-2) and of the corollary at gamma_eff. Control: the final sigma(W1) against the
    corollary at gamma/2 (W1(0) of squared norm gamma instead of 2 gamma, ``cor_1a_control``)."""
    cor_1a: float
    gap_fig4: float
    gap_fig4_large: float
    gap_fig4_theory: float
    cor_1a_control: float = float("nan")
    cor_1a_vs_drift: float = float("nan")
    cor_1a_vs_drift_control: float = float("nan")


def hidden_spectrum(reduced: dict, gammas, gauss: GaussianRuns, sigma_star: np.ndarray) -> HiddenSpectrum:
    """Corollary 3.1 (``thm-linear-riccati-cor``): max |sigma(W1) - formula| at the end of the orthogonal runs
    ``reduced`` (one per gamma), and the low-rank gaps of the last two Gaussian runs (Fig. 4, qualitative)."""
    sv = reduced["sv_W1"][-1]
    d, k = sv.shape[-1], len(sigma_star)
    cor_1a = np.abs(sv - corollary_spectrum(sigma_star, np.array(gammas), d)).max()
    final = gauss.records["sv_W1"][-1]
    cor_eff = corollary_spectrum(sigma_star, gauss.gamma_eff[3], d)
    control = np.abs(sv - corollary_spectrum(sigma_star, np.array(gammas) / 2, d)).max()
    ratio = cor_1a_vs_drift(reduced, gammas, sigma_star)
    return HiddenSpectrum(float(cor_1a), float(final[3, k - 1] / final[3, k:].max()),
                          float(final[2, k - 1] / final[2, k:].max()), float(cor_eff[k - 1] / cor_eff[k]),
                          float(control), ratio, cor_1a_vs_drift(reduced, gammas, sigma_star, 0.5))


def cor_1a_vs_drift(reduced: dict, gammas, sigma_star: np.ndarray, gamma_factor: float = 1.0) -> float:
    """Corollary 3.1 (``thm-linear-riccati-cor``) per singular value at the end of the orthogonal Fig. 1a runs
    ``reduced`` against what the measured invariant drift explains
    (:func:`stagewise.linear_riccati.implicit_bias.drift_bounds`), largest over values and gammas;
    ``gamma_factor`` 1/2 evaluates the corollary's active branches at gamma/2 (the control; the bottom
    branch sqrt(2 gamma) as stated)."""
    g = np.asarray(gammas, float)
    Z1, inv = reduced["W1"].cpu().numpy(), reduced["inv"].cpu().numpy()
    d = Z1.shape[-1]
    steps = max(int(round(float(reduced["t"][-1]) / max(float(reduced["t"][1] - reduced["t"][0]), 1e-300))), 1)
    out = 0.0
    for i, gi in enumerate(g):
        floor = roundoff(2 * gi + float(np.max(sigma_star)), d * steps)
        formula = np.array(corollary_spectrum(sigma_star, gi * gamma_factor, d), float)
        if gamma_factor != 1.0:      # the control: active branches at gamma/2, the bottom branch as stated
            formula[len(sigma_star):] = np.sqrt(2 * gi)
        out = max(out, float(drift_bounds(Z1[i], inv[i], gi, formula, floor).max()))
    return out
