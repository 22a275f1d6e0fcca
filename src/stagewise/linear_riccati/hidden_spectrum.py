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
from stagewise.linear_riccati.implicit_bias import corollary_spectrum
from stagewise.linear_riccati.initialization import gaussian_init
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
    records = gd(problem.XtX, problem.XtY, W1, W2, eta, steps, record_every=max(1, steps // 200))
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
    # Corollary 3.1 error against what the measured invariant drift D explains, ||D||_F / (2 sqrt(2 gamma)) per
    # gamma (first order in D; derived in the gamma-sweep section), largest over the gammas; the same for the
    # corollary at gamma/2 (control)
    g = np.asarray(gammas, float)
    drift = torch.linalg.norm(reduced["inv"] - 2 * torch.as_tensor(g, device=reduced["inv"].device)[:, None, None]
                              * torch.eye(d, dtype=torch.float64, device=reduced["inv"].device),
                              dim=(-2, -1)).cpu().numpy()
    steps = max(int(round(float(reduced["t"][-1]) / max(float(reduced["t"][1] - reduced["t"][0]), 1e-300))), 1)
    drift = np.maximum(drift, [roundoff(2 * gi + float(np.max(sigma_star)), d * steps) for gi in g])
    scale = drift / (2 * np.sqrt(2 * g))
    err = np.abs(sv - corollary_spectrum(sigma_star, g, d)).max(-1)
    err_half = np.abs(sv - corollary_spectrum(sigma_star, g / 2, d)).max(-1)
    return HiddenSpectrum(float(cor_1a), float(final[3, k - 1] / final[3, k:].max()),
                          float(final[2, k - 1] / final[2, k:].max()), float(cor_eff[k - 1] / cor_eff[k]),
                          float(control), float((err / scale).max()), float((err_half / scale).max()))
