"""What the chapter's figures plot, taken out of the experiments' results as plain arrays (the figures' data
sidecars). Every closed-form curve a figure draws (Corollary 3.1 on a fine gamma grid, its stable rank, the
closed form in rescaled time, the jump process, the first-order half-time prediction, Lemma C.10, the label-noise
heuristic) is evaluated here and stored. The drawing itself is in :mod:`stagewise.linear_riccati.figures`, which
never sees torch."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagewise.linear_riccati.hidden_spectrum import GaussianRuns
from stagewise.linear_riccati.implicit_bias import corollary_spectrum, hidden_singular_values
from stagewise.linear_riccati.jump_process import jump_process, jump_time
from stagewise.linear_riccati.mirror_experiments import MirrorRun
from stagewise.linear_riccati.noise_experiments import LabelNoiseRun, PureNoiseSDE
from stagewise.linear_riccati.relu_teacher import TeacherStudentRun
from stagewise.linear_riccati.riccati import sigma_beta
from stagewise.linear_riccati.gd_limit import Sweep
from stagewise.linear_riccati.whitened_experiments import JumpRates, Whitened
from stagewise.numerics.spectra import stable_rank_np

#: Most points kept of a curve recorded at every step (the whitened closed form): more are invisible at any size.
MAX_LINE_POINTS = 2000


def _f(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _thin(n: int, most: int) -> np.ndarray:
    """Indices of at most about ``most`` evenly spaced points of ``n``, the last one always kept."""
    idx = np.arange(0, n, max(1, n // most))
    return idx if idx[-1] == n - 1 else np.append(idx, n - 1)


def gamma_label(gamma: float) -> str:
    """``$\\gamma=10^{-8}$`` for a power of ten from 10^-3 down (or 10^3 up), ``$\\gamma=0.01$`` otherwise
    (Matplotlib mathtext)."""
    power = round(float(np.log10(gamma))) if gamma > 0 else 0
    if abs(power) >= 3 and np.isclose(gamma, 10.0 ** power, rtol=1e-9, atol=0):
        return f"$\\gamma=10^{{{power}}}$"
    return f"$\\gamma={gamma:g}$"


def _log_thin(t, most: int = 400) -> np.ndarray:
    """Indices of at most about ``most`` records with t > 0, evenly spaced in log t (for a log time axis)."""
    t = _f(t)
    positive = np.flatnonzero(t > 0)
    if positive.size == 0:
        return np.arange(len(t))
    wanted = np.geomspace(t[positive[0]], t[positive[-1]], most)
    idx = np.unique(np.clip(np.searchsorted(t, wanted), positive[0], positive[-1]))
    return idx if idx[-1] == positive[-1] else np.append(idx, positive[-1])


def _panel(title: str, t, sv, theory) -> dict[str, Any]:
    idx = _log_thin(t)
    return {"title": title, "t": _f(t)[idx], "sv": _f(sv)[idx], "theory": _f(theory)}


def fig1a(full: dict, gauss: GaussianRuns, sigma_star, d: int) -> dict[str, Any]:
    """The paper's Fig. 1a: top-4 sigma(W1) against time for orthogonal I_gamma (gamma = 1, 1e-4; the full-width
    records ``full``) and the first two Gaussian runs, each with Corollary 3.1's top four values (at gamma_eff for
    the Gaussian runs)."""
    g_eff = np.asarray(gauss.gamma_eff, float)
    panels = [(full, 0, "orthogonal\n$\\gamma=1$", 1.0), (full, 1, "orthogonal\n$\\gamma=10^{-4}$", 1e-4),
              (gauss.records, 0, "Gaussian std $0.01$\n($\\gamma_{\\rm eff}=%.2g$)" % g_eff[0], g_eff[0]),
              (gauss.records, 1, "Gaussian var $0.01$\n($\\gamma_{\\rm eff}=%.2g$)" % g_eff[1], g_eff[1])]
    return {"panels": {f"p{i}": _panel(title, res["t"], np.asarray(res["sv_W1"])[:, j, :4],
                                       corollary_spectrum(sigma_star, g, d)[:4])
                       for i, (res, j, title, g) in enumerate(panels)},
            "ylabel": "top-4 $\\sigma_i(W_1)$"}


def fig4(gauss: GaussianRuns, sigma_star, d: int) -> dict[str, Any]:
    """The paper's Fig. 4: all sigma(W1) when W2 also starts Gaussian (runs 2 and 3), with Corollary 3.1 at
    gamma_eff."""
    res = gauss.records
    return {"panels": {f"p{i}": _panel("$W_2$ variance $%g$\n$W_1$ variance $10^{-3}$" % gauss.var_w2[j], res["t"],
                                       np.asarray(res["sv_W1"])[:, j, :],
                                       corollary_spectrum(sigma_star, gauss.gamma_eff[j], d))
                       for i, j in enumerate([2, 3])},
            "ylabel": "$\\sigma_i(W_1)$"}


def spectrum(sweep: Sweep, sigma_star, d: int, eta: float) -> dict[str, Any]:
    """Corollary 3.1 on a fine gamma grid (half a decade past the swept range each side) and the GD limits of the
    first data set (the gammas where GD ran: those where it is stable); the stable ranks of both; the relative
    objective gap at eta and eta/2."""
    k = len(sigma_star)
    first = _first_data_set(sweep)
    gammas = _f(sweep.G)[first]
    grid = np.logspace(np.log10(_f(sweep.gammas).min()) - 0.5, np.log10(_f(sweep.gammas).max()) + 0.5, 200)
    theory = corollary_spectrum(sigma_star, grid, d)
    final = _f(sweep.coarse.sv_W1)[first]
    return {"k": int(k), "d": int(d), "gammas": gammas, "grid": grid, "theory": theory, "final": final,
            "grid_rank": stable_rank_np(theory), "final_rank": stable_rank_np(final),
            "eta": float(eta), "gap_eta": np.abs(_f(sweep.coarse.obj_gap)[first]),
            "gap_eta2": np.abs(_f(sweep.fine.obj_gap)[first])}


def _first_data_set(sweep: Sweep) -> np.ndarray:
    """The batch elements of the sweep's first data set (those of the data set of the first element)."""
    data_set = np.zeros(len(sweep.G), int) if sweep.data_set is None else np.asarray(sweep.data_set)
    return data_set == data_set[0]


def signature(w: Whitened, sweep: Sweep | None, sigma_star, gammas, d: int) -> dict[str, Any]:
    """The chapter's signature figure. Left: on whitened data, the closed form of Theorem C.12 for the smallest and
    the largest gamma of the whitened runs (at most :data:`MAX_LINE_POINTS` times), GD at the largest step for the
    smallest gamma (about 60 dots) and its exact half-times. Right: Corollary 3.1 on a fine grid over the swept
    gammas and the GD limits of the sweep's first data set (none when the sweep did not run)."""
    r = w.runs[0]
    gw = _f(w.gammas)
    small, large = int(np.argmin(gw)), int(np.argmax(gw))
    lines, dots = _thin(len(r.t), MAX_LINE_POINTS), np.arange(0, len(r.t), max(1, len(r.t) // 60))
    gammas = _f(gammas)
    grid = np.logspace(np.log10(gammas.min()) - 0.5, np.log10(gammas.max()) + 0.5, 200)
    data = {"t": _f(r.t)[lines], "small": {"label": gamma_label(gw[small]), "cf": _f(r.cf)[lines][:, small, :],
                                           "t_dots": _f(r.t)[dots], "dots": _f(r.modes)[dots][:, small, :],
                                           "t_half": _f(w.t_exact)[small]},
            "large": {"label": gamma_label(gw[large]), "cf": _f(r.cf)[lines][:, large, :]},
            "sigma_star": _f(w.sigma_star), "k": int(len(sigma_star)), "d": int(d), "grid": grid,
            "theory": corollary_spectrum(sigma_star, grid, d), "gd": None}
    if sweep is not None:
        first = _first_data_set(sweep)
        data["gd"] = {"gammas": _f(sweep.G)[first], "final": _f(sweep.coarse.sv_W1)[first]}
    return data


def mirror(m: MirrorRun) -> dict[str, Any]:
    """sigma(beta) from the beta-ODE and from GD at the smallest step (first batch element); the GD -> ODE gap
    against eta (no GD part when no step size ran: ``gd`` None)."""
    data: dict[str, Any] = {"times": _f(m.times), "sv_ode": _f(m.sv_ode), "gd": None}
    if m.etas and m.gd_finest is not None:
        data["gd"] = {"t": _f(m.gd_finest["t"]), "sv": _f(np.asarray(m.gd_finest["sv_beta"])[:, 0]),
                      "eta_finest": float(m.etas[-1]), "etas": _f(m.etas), "errs": _f(m.errs)}
    return data


def whitened(w: Whitened) -> dict[str, Any]:
    """Top: the closed form per gamma (at most :data:`MAX_LINE_POINTS` times), GD at the largest step (about 60
    dots) and the exact half-times. Bottom: the GD -> closed form gap per (eta, gamma), and for the smallest gamma
    sigma(W1) from GD against Lemma C.10 of the closed form."""
    r = w.runs[0]
    gw = _f(w.gammas)
    lines, dots = _thin(len(r.t), MAX_LINE_POINTS), np.arange(0, len(r.t), max(1, len(r.t) // 60))
    jj = int(np.argmin(gw))
    cf = _f(r.cf)[lines]
    return {"gammas": gw, "gamma_labels": [gamma_label(g) for g in gw], "t": _f(r.t)[lines], "cf": cf,
            "t_dots": _f(r.t)[dots], "modes_dots": _f(r.modes)[dots], "t_exact": _f(w.t_exact),
            "etas": _f([run.eta for run in w.runs]), "err": _f(w.err),
            "hidden": {"gamma": float(gw[jj]), "label": gamma_label(gw[jj]), "t_rec": _f(r.t_rec),
                       "sv_W1": _f(r.sv_W1)[:, jj, :], "t": _f(r.t)[lines],
                       "closed": hidden_singular_values(cf[:, jj, :], gw[jj])}}


def jump(j: JumpRates, w: Whitened) -> dict[str, Any]:
    """Left: the closed form in rescaled time tau = t / ln(1/gamma) for gamma = 10^-p (p in ``j.powers``), the jump
    process, and GD (largest step, gamma < 0.1, about 40 dots each). Right: the exact rescaled half-times against
    1/ln(1/gamma) with the first-order prediction."""
    sig = _f(w.sigma_star)
    tau = np.linspace(0, 1.2 * jump_time(sig.min()), 600)
    closed = np.stack([sigma_beta(sig[None, :], g, np.log(1 / g) * tau[:, None]) for g in _f(j.gammas)])
    r = w.runs[0]
    gd = {}
    for i, g in enumerate(_f(w.gammas)):
        if g < 0.1:
            keep = r.t / np.log(1 / g) <= tau[-1]
            sub = np.flatnonzero(keep)[::max(1, keep.sum() // 40)]
            gd[f"g{i}"] = {"tau": _f(r.t)[sub] / np.log(1 / g), "modes": _f(r.modes)[sub, i, :]}
    inv_log = 1 / _f(j.log_inv_gamma)
    xs = np.linspace(0, inv_log.max(), 50)             # x = 1/ln(1/gamma), from the jump (x = 0) to the largest gamma
    # jump_process.rescaled_half_time_first_order, written in x: 1/(2 s) + ln(2 s)/(2 s) x
    first_order = np.stack([jump_time(s) + np.log(2 * s) / (2 * s) * xs for s in sig])
    return {"sigma_star": sig, "powers": _f(j.powers), "tau": tau, "closed": closed,
            "jump": jump_process(sig[None, :], tau[:, None]), "gd": gd, "inv_log": inv_log,
            "rescaled": _f(j.rescaled), "xs": xs, "first_order": first_order}


def noise(lngd: LabelNoiseRun, sde: PureNoiseSDE, n_paths: int = 3) -> dict[str, Any]:
    """Fig. 1b: sigma(W1) under GD and under label-noise GD at the largest delta, with the heuristic decay
    exp(-eta^2 delta^2 m / 2). Fig. 3: the first ``n_paths`` paths of the pure-noise SDE and the medians over all."""
    last = len(lngd.deltas) - 1
    steps = _f(lngd.steps_axis)
    sv = _f(lngd.sv)
    p = min(n_paths, sde.ratio.shape[1])
    return {"gamma": float(lngd.gamma), "delta": float(lngd.deltas[last]), "steps": steps,
            "sv_gd": sv[:, 0, :], "sv_noisy": sv[:, last, :],
            "heuristic": np.exp(-(lngd.eta * lngd.deltas[last]) ** 2 / 2 * steps),
            "sde": {"t": _f(sde.t), "ratio": _f(sde.ratio)[:, :p], "comm": _f(sde.comm)[:, :p],
                    "med_ratio": _f(sde.med_ratio), "med_comm": _f(sde.med_comm)}}


def relu(result: TeacherStudentRun) -> dict[str, Any]:
    """Figs. 2 and 5: singular values of the student's hidden weights (first seed) at small and large scale; the
    training loss at small scale for every seed (from the first record after t = 0, for the log axis)."""
    sv = _f(result.sv)
    return {"t": _f(result.t), "sv_small": sv[:, 0, 0, :], "sv_large": sv[:, 0, 1, :],
            "loss_t": _f(result.t)[1:], "loss": _f(result.loss)[1:, :, 0]}
