"""Experiments of Section 4: label-noise GD (the paper's Fig. 1b) and the pure-noise SDE (4.1) (Fig. 3).

Statement ``thm-linear-riccati-noise`` (Proposition 4.1) and the derived label-noise decay heuristic
eta^2 delta^2 / 2 per step, the eta -> 0 limit of the decay rate; at finite eta the rate is lower by a term of
first order in eta, which :func:`decay_rates` removes by Richardson extrapolation from eta and eta/2.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from stagewise.linear_riccati.data import make_whitened
from stagewise.linear_riccati.gradient_descent import gd
from stagewise.linear_riccati.implicit_bias import hidden_singular_values
from stagewise.linear_riccati.initialization import reduced_init
from stagewise.linear_riccati.noise_sde import moments_discrete, moments_exact, sde_paths


@dataclass
class LabelNoiseRun:
    """GD (delta = 0) and label-noise GD batched over ``deltas``: record ``steps_axis`` and sigma(W1) ``sv``
    (records, delta, d); GD's largest deviation of the bottom values from sqrt(2 gamma) (``gd_bottom``); the decay
    rates of the bottom values over the heuristic eta^2 delta^2 / 2 (``rates``, for delta > 0); the step
    ``n_needed`` = ceil(4 ln 10 / (eta delta_max)^2) and the bottom value there over sqrt(2 gamma)
    (``lngd_bottom``); the final top values with and without noise and Corollary 3.1's (``top_theory``). Controls:
    the bottom deviation of the first noisy run (``gd_bottom_control``), GD's bottom value at ``n_needed``
    (``bottom_no_noise``, noise switched off) and GD's bottom decay rate over the heuristic for the largest delta
    (``rate_no_noise``)."""
    deltas: list
    gamma: float
    eta: float
    steps_axis: np.ndarray
    sv: np.ndarray
    gd_bottom: float
    rates: list
    n_needed: int
    lngd_bottom: float
    lngd_top: float
    gd_top: float
    top_theory: float
    gd_bottom_control: float = float("nan")
    bottom_no_noise: float = float("nan")
    rate_no_noise: float = float("nan")


def label_noise_gd(deltas, gamma: float, eta: float, steps: int, generator: torch.Generator,
                   device="cpu", problem=None) -> LabelNoiseRun:
    """Fig. 1b: whitened data with d = n = 5, k = 1, ||beta_*|| = 1 (from ``generator``, which then draws the
    label noise; or ``problem``, the data of an earlier run), reduced GD from I_gamma with label noise
    delta N(0, I_n) each step (Section 4)."""
    if problem is None:
        problem, _, _ = make_whitened(5, [1.0], generator, device=device)
    device = problem.X.device
    Z1, Z2 = reduced_init([gamma] * len(deltas), 5, 1, device=device)
    res = gd(problem.XtX, problem.XtY, Z1, Z2, eta, steps, record_every=max(1, steps // 200), label_noise=deltas,
             X=problem.X, generator=generator)
    sv = res["sv_W1"]
    steps_axis = res["t"] / eta
    n_needed = int(np.ceil(4 * np.log(10) / (eta * deltas[-1]) ** 2))
    out = LabelNoiseRun(list(deltas), gamma, eta, steps_axis, sv, 0.0, [], n_needed, 0.0,
                        float(sv[-1, -1, 0]), float(sv[-1, 0, 0]), float(hidden_singular_values(1.0, gamma)))
    out.steps, out.problem = steps, problem
    out.gd_bottom = bottom_deviation(out, 0)
    out.rates = [decay_rate(out, j, deltas[j]) for j in range(1, len(deltas))]
    out.lngd_bottom = bottom_at_needed(out, len(deltas) - 1)
    return out


def bottom_deviation(run: LabelNoiseRun, index: int) -> float:
    """Largest |sigma_i(W1) - sqrt(2 gamma)| of the bottom d - 1 values over the records of batch element ``index``
    (0: GD, the claim; 1: label noise delta = 0.5, the control)."""
    return float(np.abs(run.sv[:, index, 1:] - np.sqrt(2 * run.gamma)).max())


def decay_rate(run: LabelNoiseRun, index: int, delta: float) -> float:
    """Fitted decay rate of the largest bottom sigma(W1) of batch element ``index`` (after 10% of the steps, while
    above 1e-6) over the heuristic eta^2 delta^2 / 2 (``index`` 0 with the largest delta: GD, the control)."""
    lb = np.log(run.sv[:, index, 1:].max(1))
    sel = (run.steps_axis > 0.1 * run.steps) & (lb > np.log(1e-6))
    return float(-np.polyfit(run.steps_axis[sel], lb[sel], 1)[0] / ((run.eta * delta) ** 2 / 2))


@dataclass
class DecayRates:
    """The bottom values' decay rate over the heuristic eta^2 delta^2 / 2, per delta > 0: measured at step eta
    (``at_eta``, the run of Fig. 1b), at eta/2 over four times the steps (``at_half``, the same decay in log units)
    and extrapolated to eta -> 0, 2 at_half - at_eta (``extrapolated``: the first-order term in eta removed)."""
    deltas: list
    at_eta: list
    at_half: list
    extrapolated: list


def decay_rates(run: LabelNoiseRun, generator: torch.Generator, delta_factor: float = 1.0) -> DecayRates:
    """The decay rates of ``run`` and of label-noise GD at eta/2 for 4 ``run.steps`` steps on the same data (noise
    from ``generator``), each over the heuristic of its delta, and their Richardson extrapolation to eta -> 0.
    ``delta_factor`` 1/sqrt(2) runs both at delta / sqrt(2) (half the variance) and still reads them with the
    heuristic of delta: the control, about one half."""
    deltas = [float(x) for x in run.deltas[1:]]
    noisy = [0.0] + [x * delta_factor for x in deltas]
    coarse = run if delta_factor == 1.0 else label_noise_gd(noisy, run.gamma, run.eta, run.steps, generator,
                                                            problem=run.problem)
    fine = label_noise_gd(noisy, run.gamma, run.eta / 2, 4 * run.steps, generator, problem=run.problem)
    at_eta = [decay_rate(coarse, j + 1, x) for j, x in enumerate(deltas)]
    at_half = [decay_rate(fine, j + 1, x) for j, x in enumerate(deltas)]
    return DecayRates(deltas, at_eta, at_half, [2 * h - c for c, h in zip(at_eta, at_half)])


def half_variance_rate(run: LabelNoiseRun, delta: float, generator: torch.Generator) -> float:
    """Control of the decay-rate rows: label-noise GD at delta / sqrt(2), i.e. half the noise variance (a slip
    between variance and standard deviation), on the data of ``run``, at eta and eta/2 (noise from ``generator``),
    its decay rate extrapolated to eta -> 0 and read with the heuristic of delta (:func:`decay_rates`): about one
    half."""
    rates = decay_rates(run, generator, 1 / np.sqrt(2))
    return rates.extrapolated[[float(x) for x in rates.deltas].index(float(delta))]


def bottom_at_step(run: LabelNoiseRun, index: int, step: int) -> float:
    """The largest bottom sigma(W1) / sqrt(2 gamma) of batch element ``index`` at the first record at or after
    ``step`` (the last record if the run is shorter)."""
    i = min(int(np.searchsorted(run.steps_axis, step)), len(run.sv) - 1)
    return float(run.sv[i, index, 1:].max() / np.sqrt(2 * run.gamma))


def bottom_at_needed(run: LabelNoiseRun, index: int) -> float:
    """The largest bottom sigma(W1) / sqrt(2 gamma) of batch element ``index`` at step ``n_needed`` (``index`` 0:
    GD, noise off, the control)."""
    i = min(int(np.searchsorted(run.steps_axis, run.n_needed)), len(run.sv) - 1)
    return float(run.sv[i, index, 1:].max() / np.sqrt(2 * run.gamma))


@dataclass
class PureNoiseSDE:
    """Typical paths of (4.1) in d = 2 to t = 30: times, sigma_2/sigma_1 and the normalized commutator per path,
    their medians and the drops of the medians from t = 5 to t = 30; the largest |z| of the Monte Carlo moments
    against the exact Euler-Maruyama recursion at t = 0.5 and 1, and that recursion's gap to d cosh(sqrt(d) t).
    Controls: the largest |z| of the same Monte Carlo means against frozen paths (E||W||^2 = d, E||a||^2 = 0,
    ``moment_z_control``) and the median drops for uncoupled noise (W = I + B_t, a an independent Brownian motion,
    :func:`uncoupled_drops`)."""
    t: np.ndarray
    ratio: np.ndarray
    comm: np.ndarray
    med_ratio: np.ndarray
    med_comm: np.ndarray
    ratio_drop: float
    comm_drop: float
    moment_z: float
    em_vs_exact: float
    moment_z_control: float = float("nan")
    ratio_drop_control: float = float("nan")
    comm_drop_control: float = float("nan")


def pure_noise_sde(n_paths: int, n_moment_paths: int, paths_seed: int, moments_seed: int) -> PureNoiseSDE:
    """Proposition 4.1 (``thm-linear-riccati-noise``): (a) exactly in expectation (Monte Carlo vs the exact moment
    recursion of Euler-Maruyama), (c) on typical paths through medians, from W(0) = I_2, a(0) = 0, step h = 1e-3
    (records every 500 steps, so the moment records at t = 0.5 and 1 are steps 500 and 1000 of the recursion)."""
    h = 1e-3
    sde = sde_paths(2, n_paths, h, 30.0, 500, paths_seed)
    ratio = sde["sv"][:, :, 1] / sde["sv"][:, :, 0]
    i5, i30 = int(np.argmin(np.abs(sde["t"] - 5))), len(sde["t"]) - 1
    med_ratio, med_comm = np.median(ratio, axis=1), np.median(sde["comm"], axis=1)
    mc = sde_paths(2, n_moment_paths, h, 1.0, 500, moments_seed)
    u_d, v_d = moments_discrete(2, h, 1000)
    z, z_control = [], []
    for r_i, st in ((1, 500), (2, 1000)):
        for vals, ref, frozen in ((mc["sq_w"][r_i], u_d[st], 2.0), (mc["sq_a"][r_i], v_d[st], 0.0)):
            se = vals.std(ddof=1) / np.sqrt(len(vals))
            z.append(abs(vals.mean() - ref) / se)
            z_control.append(abs(vals.mean() - frozen) / se)
    out = PureNoiseSDE(sde["t"], ratio, sde["comm"], med_ratio, med_comm, float(med_ratio[i5] / med_ratio[i30]),
                       float(med_comm[i5] / med_comm[i30]), float(max(z)),
                       float(abs(u_d[1000] / moments_exact(2, 1.0)[0] - 1)), float(max(z_control)))
    out.mc, out.moments = mc, (u_d, v_d)
    out.n_paths, out.paths_seed = n_paths, paths_seed
    return out


def moment_z(sde: PureNoiseSDE, reference: str = "em") -> float:
    """Largest |z| of the Monte Carlo means of ||W||_F^2 and ||a||^2 at t = 0.5 and 1 against the exact Euler-Maruyama
    recursion (``reference`` "em") or against frozen paths, E||W||^2 = d, E||a||^2 = 0 (``reference`` "frozen", the
    control: no growth)."""
    u_d, v_d = sde.moments
    z = []
    for r_i, st in ((1, 500), (2, 1000)):
        for vals, ref, frozen in ((sde.mc["sq_w"][r_i], u_d[st], 2.0), (sde.mc["sq_a"][r_i], v_d[st], 0.0)):
            se = vals.std(ddof=1) / np.sqrt(len(vals))
            z.append(abs(vals.mean() - (ref if reference == "em" else frozen)) / se)
    return float(max(z))


def uncoupled_ratio_drop(sde: PureNoiseSDE) -> float:
    """Control of the sigma_2/sigma_1 drop of Proposition 4.1(c): the same median drop for uncoupled noise
    (:func:`uncoupled_drops`) at the record times of ``sde``."""
    return uncoupled_drops(2, sde.n_paths, sde.t, sde.paths_seed)[0]


def uncoupled_comm_drop(sde: PureNoiseSDE) -> float:
    """Control of the commutator drop of Proposition 4.1(c): the same median drop for uncoupled noise."""
    return uncoupled_drops(2, sde.n_paths, sde.t, sde.paths_seed)[1]


def uncoupled_paths(d: int, n_paths: int, t: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Control of Proposition 4.1(c) (``thm-linear-riccati-noise``): W = I + B_t (d x d Brownian motion) and a an
    independent d-dimensional Brownian motion, sampled exactly at the record times ``t``. Returns per record and
    path sigma_2/sigma_1 of W and the normalized commutator of its first row with a, (records, paths) each."""
    rng = np.random.default_rng([int(seed) % 2 ** 32, 1])
    dt = np.diff(t)[:, None, None, None]
    inc = rng.standard_normal((len(t) - 1, n_paths, d + 1, d)) * np.sqrt(dt)
    paths = np.concatenate([np.zeros((1, n_paths, d + 1, d)), np.cumsum(inc, axis=0)])
    W = paths[:, :, :d] + np.eye(d)
    a = paths[:, :, d]
    sv = np.linalg.svd(W, compute_uv=False)
    w1 = W[:, :, 0]
    c = w1[..., :, None] * a[..., None, :] - a[..., :, None] * w1[..., None, :]
    denom = np.linalg.norm(w1, axis=-1) * np.linalg.norm(a, axis=-1)
    return sv[..., -1] / sv[..., 0], np.linalg.norm(c, axis=(-2, -1)) / np.where(denom > 0, denom, np.inf)


def uncoupled_drops(d: int, n_paths: int, t: np.ndarray, seed: int) -> tuple[float, float]:
    """The drops from t = 5 to the last time of the medians of :func:`uncoupled_paths`, the quantities the coupled
    SDE must shrink by a factor 10."""
    ratio, comm = uncoupled_paths(d, n_paths, t, seed)
    i5, last = int(np.argmin(np.abs(t - 5))), len(t) - 1
    return (float(np.median(ratio[i5]) / np.median(ratio[last])),
            float(np.median(comm[i5]) / np.median(comm[last])))


def median_drop_interval(per_path: np.ndarray, t: np.ndarray, seed: int, level: float = 0.95,
                         n_boot: int = 2000) -> tuple[float, float]:
    """Percentile bootstrap interval over paths (the noise source: the paths are independent) of the drop
    median(t = 5) / median(last time) of a per-path quantity (records, paths); each resample keeps a path's two
    times together."""
    i5, last = int(np.argmin(np.abs(t - 5))), len(t) - 1
    rng = np.random.default_rng([int(seed) % 2 ** 32, 2])
    idx = rng.integers(0, per_path.shape[1], size=(n_boot, per_path.shape[1]))
    drops = np.median(per_path[i5][idx], axis=1) / np.median(per_path[last][idx], axis=1)
    lo, hi = np.quantile(drops, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def drop_low(sde: PureNoiseSDE, quantity: str, coupled: bool = True) -> float:
    """Lower end of the 95% bootstrap interval of the median drop of ``quantity`` ("ratio": sigma_2/sigma_1, or
    "comm": the normalized commutator) from t = 5 to 30, for the SDE's paths or (``coupled`` False, the control)
    for uncoupled noise (:func:`uncoupled_paths`)."""
    if coupled:
        per_path = sde.ratio if quantity == "ratio" else sde.comm
    else:
        per_path = uncoupled_paths(2, sde.n_paths, sde.t, sde.paths_seed)[0 if quantity == "ratio" else 1]
    return median_drop_interval(np.asarray(per_path), sde.t, sde.paths_seed)[0]
