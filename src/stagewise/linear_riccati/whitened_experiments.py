"""Experiments on whitened data: GD against the Riccati closed form, exact half-times, and the jump process.

Statements ``thm-linear-riccati-closed``, ``thm-linear-riccati-halftime`` and ``thm-linear-riccati-jump``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from stagewise.linear_riccati.data import Problem
from stagewise.linear_riccati.gradient_descent import gd
from stagewise.linear_riccati.initialization import reduced_init
from stagewise.linear_riccati.jump_process import jump_time
from stagewise.linear_riccati.riccati import half_time, sigma_beta, sigma_beta_ode, sigma_beta_paper
from stagewise.linear_riccati.whitened_gd import whitened_mode_recursion
from stagewise.numerics.fits import first_crossing, loglog_slope

EPS = np.finfo(float).eps


@dataclass
class WhitenedRun:
    """GD at one step ``eta`` on whitened data, batched over gamma: times ``t`` of every step, the modes
    diag(U^T beta V) (steps + 1, gamma, k) and the closed form ``cf`` there; the largest gap per gamma (``err``);
    the invariant against the scalar law (``law_err``) and the bottom-direction drift (``bottom_drift``), both in
    units of eps * steps * sigma_max; GD half-learning times ``cross`` (gamma, k); sigma(W1) records."""
    eta: float
    t: np.ndarray
    modes: np.ndarray
    cf: np.ndarray
    err: np.ndarray
    law_err: float
    bottom_drift: float
    cross: np.ndarray
    sv_W1: np.ndarray
    t_rec: np.ndarray


@dataclass
class Whitened:
    """Runs at step sizes ``etas`` (largest first), the gap matrix ``err`` (eta, gamma), the error constant
    err / (eta (1 + ln 1/gamma)) at the smallest step, fitted orders ``slopes`` (one per gamma), exact half-times
    ``t_exact`` (gamma, k) and Richardson-extrapolated GD half-times ``t_rich``."""
    sigma_star: np.ndarray
    gammas: np.ndarray
    horizon: float
    runs: list
    err: np.ndarray
    err_const: np.ndarray
    slopes: np.ndarray
    t_exact: np.ndarray
    t_rich: np.ndarray


def gd_vs_closed_form(problem: Problem, U: torch.Tensor, V: torch.Tensor, sigma_star, gammas, etas,
                      param: str = "eta_white") -> Whitened:
    """Theorem C.12 (``thm-linear-riccati-closed``): reduced GD at each step in ``etas`` (three, largest first)
    against the closed form, the exact per-mode invariant law, and the half-times of
    ``thm-linear-riccati-halftime`` (GD crossings, Richardson 2 t(eta/4) - t(eta/2))."""
    sig, gw = np.asarray(sigma_star, float), np.asarray(gammas, float)
    d, k = problem.XtY.shape
    T = 1.3 * half_time(sig.min(), gw.min()) + 2.0
    Uk, Up = U[:, :k].contiguous(), U[:, k:]
    runs = []
    for e in etas:
        steps = int(np.ceil(T / e))
        Z1, Z2 = reduced_init(gw, d, k, device=problem.X.device)
        res = gd(problem.XtX, problem.XtY, Z1, Z2, e, steps, record_every=max(1, steps // 200), basis=(Uk, V),
                 param=param)
        t = np.arange(steps + 1) * e
        cf = sigma_beta(sig[None, None, :], gw[None, :, None], t[:, None, None])
        law = np.stack([whitened_mode_recursion(sig, g, e, steps)["invariant_law"] for g in gw])
        inv_modes = torch.diagonal(Uk.T @ res["inv"] @ Uk, dim1=-2, dim2=-1).cpu().numpy()
        bottom = torch.diagonal(Up.T @ res["inv"] @ Up, dim1=-2, dim2=-1).cpu().numpy() / (2 * gw[:, None]) - 1
        unit = EPS * steps * sig.max()
        runs.append(WhitenedRun(
            e, t, res["modes"], cf, np.abs(res["modes"] - cf).max(axis=(0, 2)),
            float(np.abs(inv_modes - law).max() / unit),
            float(np.abs(bottom * 2 * gw[:, None]).max() / unit) if d > k else 0.0,
            np.array([[first_crossing(t, res["modes"][:, j, i], sig[i] / 2) for i in range(k)]
                      for j in range(len(gw))]),
            res["sv_W1"], res["t"]))
    err = np.array([r.err for r in runs])                                    # (eta, gamma)
    err_const = err[-1] / (etas[-1] * (1 + np.log(1 / np.minimum(gw, 1.0))))
    slopes = np.array([loglog_slope(etas, err[:, j]) for j in range(len(gw))])
    t_exact = half_time(sig[None, :], gw[:, None])
    t_rich = 2 * runs[2].cross - runs[1].cross                                # Richardson extrapolation to eta = 0
    return Whitened(sig, gw, T, runs, err, err_const, slopes, t_exact, t_rich)


@dataclass
class ClosedFormAccuracy:
    """Stable closed form vs the scalar ODE and vs the paper's literal (C.33) (gamma >= 1e-4), and exact
    half-times vs root-finding on the ODE solution."""
    cf_vs_ode: float
    cf_vs_paper: float
    halftime_ode_err: float


def closed_form_accuracy(sigma_star, gammas, horizon: float) -> ClosedFormAccuracy:
    """Theorem C.12 and ``thm-linear-riccati-halftime`` without GD: the stable form against an independent DOP853
    integration and the literal formula on [0, horizon], and half_time against ODE crossings of s/2."""
    sig, gw = np.asarray(sigma_star, float), np.asarray(gammas, float)
    t_exact = half_time(sig[None, :], gw[:, None])
    t_ode = np.array([[first_crossing(tt, sigma_beta_ode(s, g, tt), s / 2) for s in sig] for g in gw
                      for tt in [np.linspace(0, 1.2 * half_time(sig.min(), g), 20001)]])
    tt = np.linspace(0, horizon, 2001)
    cf_vs_ode = max(np.abs(sigma_beta(s, g, tt) - sigma_beta_ode(s, g, tt)).max() for s in sig for g in gw)
    cf_vs_paper = max(np.abs(sigma_beta(s, g, tt) - sigma_beta_paper(s, g, tt)).max()
                      for s in sig for g in gw if g >= 1e-4)
    return ClosedFormAccuracy(float(cf_vs_ode), float(cf_vs_paper), float(np.nanmax(np.abs(t_ode - t_exact))))


@dataclass
class JumpRates:
    """For gamma = 10^-p (p in ``powers``): rescaled half-times t_1/2 / ln(1/gamma) (``rescaled``, (p, k)); fitted
    exponents of their deviation from 1/(2 sigma) in ln(1/gamma) (``rates``); the largest error of ln(1/gamma) x
    deviation against ln(2 sigma)/(2 sigma) beyond the first power (``scaled_err``); and whether every learning
    order is largest first."""
    powers: np.ndarray
    gammas: np.ndarray
    log_inv_gamma: np.ndarray
    rescaled: np.ndarray
    rates: list
    scaled_err: float
    order_ok: bool


def jump_rates(sigma_star, powers, whitened: Whitened) -> JumpRates:
    """Theorem ``thm-linear-riccati-jump`` and its derived rate, from the exact half-times; the learning order is
    also checked on the GD crossings of ``whitened`` at every step size."""
    sig = np.asarray(sigma_star, float)
    gj = 10.0 ** (-np.asarray(powers, float))
    lnj = np.log(1 / gj)
    t_half = half_time(sig[None, :], gj[:, None])
    resc = t_half / lnj[:, None]
    deviation = resc - jump_time(sig)[None, :]
    target = np.log(2 * sig) / (2 * sig)
    rates = [loglog_slope(lnj, np.abs(deviation[:, i])) for i in np.flatnonzero(np.abs(target) > 1e-3)]
    scaled_err = float(np.abs(deviation[1:] * lnj[1:, None] - target).max()) if len(gj) > 1 else 0.0
    order_ok = bool(np.all(np.diff(t_half, axis=1) > 0)) and all(np.all(np.diff(r.cross, axis=1) > 0)
                                                                 for r in whitened.runs)
    return JumpRates(np.asarray(powers), gj, lnj, resc, rates, scaled_err, order_ok)
