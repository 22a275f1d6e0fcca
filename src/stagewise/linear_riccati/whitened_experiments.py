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
from stagewise.linear_riccati.jump_process import (half_time_remainder, jump_time, remainder_first_order,
                                                   remainder_second_order_scale)
from stagewise.linear_riccati.mirror_experiments import offdiagonal
from stagewise.linear_riccati.riccati import half_time, sigma_beta, sigma_beta_ode, sigma_beta_paper
from stagewise.linear_riccati.whitened_gd import whitened_mode_recursion
from stagewise.numerics.fits import first_crossing, loglog_slope
from stagewise.numerics.roundoff import roundoff

EPS = np.finfo(float).eps
FIT_BIAS = 0.01      # largest change of the local exponent by the O(gamma) term at a power used in the jump fit


@dataclass
class WhitenedRun:
    """GD at one step ``eta`` on whitened data, batched over gamma: times ``t`` of every step, the modes
    diag(U^T beta V) (steps + 1, gamma, k) and the closed form ``cf`` there; the largest gap per gamma (``err``);
    the invariant against the scalar law (``law_err``) and the bottom-direction drift (``bottom_drift``), both in
    units of eps * steps * sigma_max; GD half-learning times ``cross`` (gamma, k); sigma(W1) records. Also, in the
    same units, the largest off-diagonal entry of U^T beta V over the records (``offdiag``, Theorem C.11: static
    singular vectors) and, as a control, the invariant against the flow's constant 2 gamma (``law_control``)."""
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
    offdiag: float = 0.0
    law_control: float = 0.0


@dataclass
class Whitened:
    """Runs at step sizes ``etas`` (largest first), the gap matrix ``err`` (eta, gamma), the error constant
    err / (eta sigma_max sqrt(sigma_max^2 + gamma^2) (1 + ln+ 1/gamma)) at the smallest step (``err_const``, see
    :func:`error_scale`), fitted orders ``slopes`` (one per gamma), exact half-times ``t_exact`` (gamma, k) and
    Richardson-extrapolated GD half-times ``t_rich``, with their error over eta^2 lambda_max (1 + ln+ 1/gamma_min)
    (``rich_const``, eta the largest step). ``sharpness`` = lambda_max = 2 sqrt(sigma_max^2 + gamma_max^2), the
    largest loss curvature at the limit (GD is in its first-order regime for eta lambda_max small). Control: the
    same error constant and orders against the closed form at gamma/2 (``err_const_control``, ``slopes_control``:
    W1(0) of squared norm gamma instead of 2 gamma); the GD half-times at eta/4 without extrapolation, in the
    units of ``rich_const`` (``rich_const_control``)."""
    sigma_star: np.ndarray
    gammas: np.ndarray
    horizon: float
    runs: list
    err: np.ndarray
    err_const: np.ndarray
    slopes: np.ndarray
    t_exact: np.ndarray
    t_rich: np.ndarray
    err_const_control: np.ndarray = None
    slopes_control: np.ndarray = None
    sharpness: float = float("nan")
    rich_const: float = float("nan")
    rich_const_control: float = float("nan")


def sharpness_whitened(sigma_star, gammas) -> float:
    """Largest eigenvalue of the loss Hessian at the limit on whitened data: mode i ends at a^2 + b^2 =
    2 sqrt(sigma_i^2 + gamma^2) (Lemma C.10), so lambda_max = 2 sqrt(sigma_max^2 + gamma_max^2)."""
    return float(2 * np.sqrt(np.max(sigma_star) ** 2 + np.max(gammas) ** 2))


def error_scale(sigma_star, gammas, eta: float) -> np.ndarray:
    """The size of the GD-vs-closed-form error at step eta, per gamma (derived in the chapter):
    eta sigma_max sqrt(sigma_max^2 + gamma^2) (1 + ln+ 1/gamma). In the early exponential phase GD grows each mode
    at 2 sigma (1 - eta sigma / 2 + ...), which delays its learning time ln(1/gamma)/(2 sigma) by about
    eta ln(1/gamma)/4, an error (slope sigma^2/2) of eta sigma^2 ln(1/gamma) / 8; for gamma >~ sigma the flow is
    linear with rate 2 sqrt(sigma^2 + gamma^2) and Euler's error is at most eta sigma sqrt(sigma^2 + gamma^2)/e."""
    g = np.asarray(gammas, float)
    smax = float(np.max(sigma_star))
    return eta * smax * np.sqrt(smax ** 2 + g ** 2) * (1 + np.log(1 / np.minimum(g, 1.0)))


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
        cf_half = sigma_beta(sig[None, None, :], gw[None, :, None] / 2, t[:, None, None])
        law = np.stack([whitened_mode_recursion(sig, g, e, steps)["invariant_law"] for g in gw])
        inv_modes = torch.diagonal(Uk.T @ res["inv"] @ Uk, dim1=-2, dim2=-1).cpu().numpy()
        bottom = torch.diagonal(Up.T @ res["inv"] @ Up, dim1=-2, dim2=-1).cpu().numpy() / (2 * gw[:, None]) - 1
        unit = EPS * steps * sig.max()
        full_basis = torch.cat([Uk, Up], dim=1).cpu().numpy()
        offdiag = offdiagonal(full_basis.T @ res["beta"] @ V.cpu().numpy(), k) / unit
        runs.append(WhitenedRun(
            e, t, res["modes"], cf, np.abs(res["modes"] - cf).max(axis=(0, 2)),
            float(np.abs(inv_modes - law).max() / unit),
            float(np.abs(bottom * 2 * gw[:, None]).max() / unit) if d > k else 0.0,
            np.array([[first_crossing(t, res["modes"][:, j, i], sig[i] / 2) for i in range(k)]
                      for j in range(len(gw))]),
            res["sv_W1"], res["t"], float(offdiag), float(np.abs(inv_modes - 2 * gw[:, None]).max() / unit)))
        runs[-1].err_half = np.abs(res["modes"] - cf_half).max(axis=(0, 2))
        runs[-1].inv_modes, runs[-1].law, runs[-1].unit = inv_modes, law, unit
    err = np.array([r.err for r in runs])                                    # (eta, gamma)
    err_half = np.array([r.err_half for r in runs])
    scale = error_scale(sig, gw, etas[-1])
    slopes = np.array([loglog_slope(etas, err[:, j]) for j in range(len(gw))])
    t_exact = half_time(sig[None, :], gw[:, None])
    t_rich = 2 * runs[2].cross - runs[1].cross                                # Richardson extrapolation to eta = 0
    lam = sharpness_whitened(sig, gw)
    rich_unit = etas[0] ** 2 * lam * (1 + np.log(1 / min(float(gw.min()), 1.0)))
    return Whitened(sig, gw, T, runs, err, err[-1] / scale, slopes, t_exact, t_rich, err_half[-1] / scale,
                    np.array([loglog_slope(etas, err_half[:, j]) for j in range(len(gw))]), lam,
                    float(np.abs(t_rich - t_exact).max() / rich_unit),
                    float(np.abs(runs[-1].cross - t_exact).max() / rich_unit))


def error_constant(white: Whitened, gamma_factor: float = 1.0) -> np.ndarray:
    """The GD-vs-closed-form error at the smallest step over its derived size (:func:`error_scale`), per gamma,
    recomputed from the GD modes against the closed form at gamma * gamma_factor (1/2: the control, W1(0) of
    squared norm gamma instead of 2 gamma)."""
    r = white.runs[-1]
    cf = sigma_beta(white.sigma_star[None, None, :], white.gammas[None, :, None] * gamma_factor, r.t[:, None, None])
    return np.abs(r.modes - cf).max(axis=(0, 2)) / error_scale(white.sigma_star, white.gammas, r.eta)


def fitted_orders(white: Whitened, gamma_factor: float = 1.0) -> np.ndarray:
    """Fitted order in eta of the GD-vs-closed-form gap, per gamma, against the closed form at gamma * gamma_factor
    (1/2: the control; the gap to a wrong formula does not shrink with eta)."""
    errs = np.array([np.abs(r.modes - sigma_beta(white.sigma_star[None, None, :],
                                                 white.gammas[None, :, None] * gamma_factor,
                                                 r.t[:, None, None])).max(axis=(0, 2)) for r in white.runs])
    etas = [r.eta for r in white.runs]
    return np.array([loglog_slope(etas, errs[:, j]) for j in range(len(white.gammas))])


def law_error(white: Whitened, law: str = "gd") -> float:
    """Largest gap of the invariant's mode entries to the exact per-step law 2 gamma prod(1 - eta^2 r^2) (``law``
    "gd") or to the flow's constant 2 gamma (``law`` "flow", the control), in units eps * steps * sigma_max."""
    return float(max(np.abs(r.inv_modes - (r.law if law == "gd" else 2 * white.gammas[:, None])).max() / r.unit
                     for r in white.runs))


def richardson_error(white: Whitened, extrapolate: bool = True) -> float:
    """Largest |GD half-time - exact| in units eta^2 lambda_max (1 + ln+ 1/gamma_min) (eta the largest step): of the
    Richardson extrapolation 2 t(eta/4) - t(eta/2), or (``extrapolate`` False, the control) of t(eta/4) itself."""
    unit = white.runs[0].eta ** 2 * white.sharpness * (1 + np.log(1 / min(float(white.gammas.min()), 1.0)))
    t = 2 * white.runs[2].cross - white.runs[1].cross if extrapolate else white.runs[-1].cross
    return float(np.abs(t - white.t_exact).max() / unit)


def increasing(t: np.ndarray) -> bool:
    """Every row of half-times ``t`` (gamma, mode) strictly increases along the modes, beyond the rounding of a time of
    that size (a tie is not an order)."""
    return bool(np.all(np.diff(t, axis=1) > roundoff(np.nanmax(np.abs(t)), t.shape[1])))


def learning_order(white: Whitened, powers) -> bool:
    """Largest first (``thm-linear-riccati-jump``): the exact half-times at gamma = 10^-p and the GD crossings at
    every step of ``white`` increase as sigma_* decreases."""
    gj = 10.0 ** (-np.asarray(powers, float))
    return increasing(half_time(white.sigma_star[None, :], gj[:, None])) and all(increasing(r.cross)
                                                                                 for r in white.runs)


def crossings_unequal_init(problem: Problem, U: torch.Tensor, V: torch.Tensor, sigma_star, gammas,
                           eta: float) -> np.ndarray:
    """Control of the learning order: GD crossing times of sigma_i/2 (one row) from a reduced start that is not
    isotropic: mode i starts at a^2 = 2 gamma_i with the gamma_i spread geometrically from min(gammas) on the largest
    sigma_* to 0.1 on the smallest (a per-direction initialization scale, as a Gaussian W1 with unequal row norms
    would give); the head start lets small modes be learned first."""
    sig = np.asarray(sigma_star, float)
    d, k = problem.XtY.shape
    g_modes = np.geomspace(min(float(np.min(gammas)), 0.1), 0.1, k)
    a0 = np.full(d, np.sqrt(2 * 0.1))
    a0[:k] = np.sqrt(2 * g_modes)
    Z1 = (U @ torch.diag(torch.as_tensor(a0, dtype=torch.float64, device=U.device)) @ U.T)[None]
    Z2 = torch.zeros(1, d, k, dtype=torch.float64, device=U.device)
    T = 1.3 * float(np.max(half_time(sig, g_modes))) + 2.0
    steps = int(np.ceil(T / eta))
    res = gd(problem.XtX, problem.XtY, Z1, Z2, eta, steps, record_every=steps, basis=(U[:, :k].contiguous(), V))
    t = np.arange(steps + 1) * eta
    return np.array([[first_crossing(t, res["modes"][:, 0, i], sig[i] / 2) for i in range(k)]])


@dataclass
class ClosedFormAccuracy:
    """Stable closed form vs the scalar ODE and vs the paper's literal (C.33) (gamma >= 1e-4), and exact
    half-times vs root-finding on the ODE solution. Controls: the closed form at half the time (E = exp(-root t),
    ``cf_vs_ode_control``) against the ODE, and the small-gamma approximation ln(2 s/gamma)/(2 s) of the
    half-time against the ODE crossings (``halftime_approx_err``). ``cf_vs_paper_units``: the stable-vs-literal gap
    in units of eps (s^2 / gamma + gamma^2 / s), the cancellation error of the literal form (NaN when no
    gamma >= 1e-4)."""
    cf_vs_ode: float
    cf_vs_paper: float
    halftime_ode_err: float
    cf_vs_ode_control: float = float("nan")
    halftime_approx_err: float = float("nan")
    cf_vs_paper_units: float = float("nan")


def closed_form_accuracy(sigma_star, gammas, horizon: float) -> ClosedFormAccuracy:
    """Theorem C.12 and ``thm-linear-riccati-halftime`` without GD: the stable form against an independent DOP853
    integration and the literal formula on [0, horizon], and half_time against ODE crossings of s/2."""
    sig, gw = np.asarray(sigma_star, float), np.asarray(gammas, float)
    t_exact = half_time(sig[None, :], gw[:, None])
    t_ode = np.array([[first_crossing(tt, sigma_beta_ode(s, g, tt), s / 2) for s in sig] for g in gw
                      for tt in [np.linspace(0, 1.2 * half_time(sig.min(), g), 20001)]])
    tt = np.linspace(0, horizon, 2001)
    cf_vs_ode = max(np.abs(sigma_beta(s, g, tt) - sigma_beta_ode(s, g, tt)).max() for s in sig for g in gw)
    cf_control = max(np.abs(sigma_beta(s, g, tt / 2) - sigma_beta_ode(s, g, tt)).max() for s in sig for g in gw)
    t_approx = np.log(2 * sig[None, :] / gw[:, None]) / (2 * sig[None, :])
    # the literal form cancels: in 1 - sigma_alpha^2 ~ 2 gamma / s for gamma << s (an error of about eps s^2 /
    # gamma), and in sqrt(1 + gamma^2/s^2) (...) - gamma/s for gamma >> s (about eps gamma^2 / s)
    pairs = [(s, g) for s in sig for g in gw if g >= 1e-4]
    gaps = [np.abs(sigma_beta(s, g, tt) - sigma_beta_paper(s, g, tt)).max() for s, g in pairs]
    nan = float("nan")
    return ClosedFormAccuracy(float(cf_vs_ode), float(max(gaps, default=nan)),
                              float(np.nanmax(np.abs(t_ode - t_exact))), float(cf_control),
                              float(np.nanmax(np.abs(t_ode - t_approx))),
                              float(max((e / (EPS * (s * s / g + g * g / s)) for e, (s, g) in zip(gaps, pairs)),
                                        default=nan)))


@dataclass
class JumpRates:
    """For gamma = 10^-p (p in ``powers``): rescaled half-times t_1/2 / ln(1/gamma) (``rescaled``, (p, k)); fitted
    exponents of their deviation from 1/(2 sigma) in ln(1/gamma) (``rates``); the largest error of ln(1/gamma) x
    deviation against ln(2 sigma)/(2 sigma) beyond the first power (``scaled_err``); and whether every learning
    order is largest first (NaN exponent: a mode without two powers where the O(gamma) term is negligible, see
    :data:`FIT_BIAS`). Also the half-time remainder t_1/2 - ln(2 sigma/gamma)/(2 sigma) minus its O(gamma) term
    -gamma/(2 sigma^2), over its second-order scale, largest over every power (``remainder_err``). Controls: the
    same remainder without the O(gamma) term (``remainder_control``) and the exponents of the unrescaled deviation
    |t_1/2 - 1/(2 sigma)| (``rates_unrescaled``)."""
    powers: np.ndarray
    gammas: np.ndarray
    log_inv_gamma: np.ndarray
    rescaled: np.ndarray
    rates: list
    scaled_err: float
    order_ok: bool
    remainder_err: float = float("nan")
    remainder_control: float = float("nan")
    rates_unrescaled: list = None


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
    # The exponent -1 belongs to the 1/ln(1/gamma) term A = ln(2 sigma)/(2 sigma); the O(gamma) term B gamma,
    # B = -1/(2 sigma^2), changes the local exponent by about ln(1/gamma) gamma / (sigma |ln 2 sigma|). Each mode's
    # fit uses only the powers where that is at most FIT_BIAS; a mode with fewer than two such powers (sigma near
    # 1/2, where A vanishes) has no exponent (NaN).
    with np.errstate(divide="ignore"):
        bias = lnj[:, None] * gj[:, None] / (sig[None, :] * np.abs(np.log(2 * sig))[None, :])
    # ... and where the deviation itself, about A / ln(1/gamma), is above the rounding of the rescaled time
    usable = (bias <= FIT_BIAS) & (np.abs(target)[None, :] / lnj[:, None] > np.array([roundoff(t, 8) for t in jump_time(sig)])[None, :])

    def fit(y, i):
        return loglog_slope(lnj[usable[:, i]], y[usable[:, i]]) if usable[:, i].sum() >= 2 else float("nan")
    rates = [fit(np.abs(deviation[:, i]), i) for i in range(len(sig))]
    scaled_err = float(np.abs(deviation[1:] * lnj[1:, None] - target).max()) if len(gj) > 1 else 0.0
    # "strictly later" beyond the rounding of a time of size t_1/2 (a tie is not an order)
    def increasing(t):
        return bool(np.all(np.diff(t, axis=1) > roundoff(np.nanmax(np.abs(t)), t.shape[1])))
    order_ok = increasing(t_half) and all(increasing(r.cross) for r in whitened.runs)
    rem = half_time_remainder(sig[None, :], gj[:, None], t_half)
    scale = remainder_second_order_scale(sig[None, :], gj[:, None], t_half)
    remainder_err = float((np.abs(rem - remainder_first_order(sig[None, :], gj[:, None])) / scale).max())
    remainder_control = float((np.abs(rem) / scale).max())
    unrescaled = [fit(np.abs(t_half[:, i] - jump_time(sig[i])), i) for i in range(len(sig))]
    return JumpRates(np.asarray(powers), gj, lnj, resc, rates, scaled_err, order_ok, remainder_err,
                     remainder_control, unrescaled)


def error_constant_max(white: Whitened, gamma_factor: float = 1.0) -> float:
    """Largest of :func:`error_constant` over the gammas."""
    return float(error_constant(white, gamma_factor).max())


def fitted_order_extreme(white: Whitened, which: str, gamma_factor: float = 1.0) -> float:
    """The smallest (``which`` "min") or largest ("max") of :func:`fitted_orders` over the gammas."""
    orders = fitted_orders(white, gamma_factor)
    return float(orders.min() if which == "min" else orders.max())


def learning_order_unequal_init(problem: Problem, U: torch.Tensor, V: torch.Tensor, sigma_star, gammas,
                                eta: float) -> bool:
    """The learning-order measurement (:func:`increasing` of the GD crossings) on the run of
    :func:`crossings_unequal_init` (a non-isotropic start: the control)."""
    return increasing(crossings_unequal_init(problem, U, V, sigma_star, gammas, eta))


def early_phase_error(white: Whitened, gamma_factor: float = 1.0) -> float:
    """GD against the closed form in the exponential phase, relative and per point (derived in the chapter): over
    every step size, gamma, mode and time t > 0 where the closed form is below sigma_*/10, the largest
    |GD - closed form| / closed form over eta s (1 + s t), s = sqrt(sigma_*^2 + gamma^2). The absolute error of
    :func:`error_constant` is set by the sigmoid and cannot see this phase, where sigma_beta is as small as gamma.
    ``gamma_factor`` 1/2 compares with the closed form at gamma/2 (the control)."""
    sig, gw = white.sigma_star, white.gammas
    s = np.sqrt(sig[None, None, :] ** 2 + gw[None, :, None] ** 2)
    out = 0.0
    for r in white.runs:
        t = r.t[:, None, None]
        cf = sigma_beta(sig[None, None, :], gw[None, :, None] * gamma_factor, t)
        early = (r.cf <= sig[None, None, :] / 10) & (t > 0)
        rel = np.abs(r.modes - cf)[early] / np.abs(cf)[early]
        unit = np.broadcast_to(r.eta * s * (1 + s * t), r.cf.shape)[early]
        out = max(out, float((rel / unit).max(initial=0.0)))
    return out


def remainder_tested_powers(sigma_star, powers) -> list[int]:
    """The powers p (gamma = 10^-p) at which the half-time remainder check sees the O(gamma) term: where, for at
    least one mode, |t_1/2 - ln(2 sigma/gamma)/(2 sigma)| (the remainder without that term subtracted) exceeds the
    allowance of the check (the second-order scale plus the rounding of t_1/2). At the other powers the term is
    below the rounding allowance and the check cannot tell it from zero."""
    sig = np.asarray(sigma_star, float)
    gj = 10.0 ** (-np.asarray(powers, float))
    t_half = half_time(sig[None, :], gj[:, None])
    rem = half_time_remainder(sig[None, :], gj[:, None], t_half)
    scale = remainder_second_order_scale(sig[None, :], gj[:, None], t_half)
    return [int(p) for p, seen in zip(powers, (np.abs(rem) / scale > 1).any(1)) if seen]
