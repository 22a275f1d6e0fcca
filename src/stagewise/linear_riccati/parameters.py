"""Parameter constraints of the linear-riccati chapter: the front-matter validator and gamma > 0.

:func:`check_parameters` is the chapter's cross-parameter validator (named in the chapter's front matter);
:func:`check_gamma` enforces gamma > 0 for the I_gamma initialization (Definition ``thm-linear-riccati-init``).
"""
from __future__ import annotations

import numpy as np

from stagewise.core.run.parameters import ParameterError


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the linear-riccati chapter (one-line ParameterError)."""
    v = values
    if "n" in v and "d" in v and v["n"] > v["d"]:
        raise ParameterError(f"parameter n: n={v['n']} exceeds d={v['d']}; allowed: n <= d (overparametrized, "
                             "interpolators exist)")
    if "k" in v and "d" in v and v["k"] > v["d"]:
        raise ParameterError(f"parameter k: k={v['k']} exceeds d={v['d']}; allowed: k <= d")
    if "width" in v and "d" in v and v["width"] < v["d"]:
        raise ParameterError(f"parameter width: width={v['width']} is below d={v['d']}; allowed: width >= d "
                             "(P needs orthonormal rows)")
    if "k_white" in v and "d_white" in v and v["k_white"] > v["d_white"]:
        raise ParameterError(f"parameter k_white: k_white={v['k_white']} exceeds d_white={v['d_white']}; "
                             "allowed: k_white <= d_white")
    if v.get("k_white", 1) > 1 and "sigma_min" in v and "sigma_max" in v and not v["sigma_min"] < v["sigma_max"]:
        raise ParameterError(f"parameter sigma_min: sigma_min={v['sigma_min']} must be below sigma_max="
                             f"{v['sigma_max']}; allowed: sigma_min < sigma_max (distinct singular values)")
    if "gamma_min" in v and "gamma_max" in v and not v["gamma_min"] < v["gamma_max"]:
        raise ParameterError(f"parameter gamma_min: gamma_min={v['gamma_min']} must be below gamma_max="
                             f"{v['gamma_max']}; allowed: gamma_min < gamma_max")
    for name in ("gammas_white",):
        if name in v and len(v[name]) == 0:
            raise ParameterError(f"parameter {name}: empty list; allowed: at least one value > 0")
    check_whitened_step(v)


def check_gamma(gamma) -> None:
    """gamma must be positive: gamma = 0 is a saddle (W1 = W2 = 0 never moves) and gamma < 0 is undefined."""
    g = np.atleast_1d(np.asarray(gamma, dtype=float))
    if not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise ParameterError(f"parameter gamma: {g[(~np.isfinite(g)) | (g <= 0)][0]!r} is out of range; "
                             "allowed: gamma > 0 (the I_gamma initialization needs W1(0) = sqrt(2 gamma) P)")



# -- the eta_white stability limit and the cost model -----------------------------------------------------------
def _whitened_sharpness(v: dict) -> float:
    """Largest loss curvature at the limit of the whitened runs, 2 sqrt(sigma_max^2 + gamma_max^2) (mode i ends at
    a^2 + b^2 = 2 sqrt(sigma_i^2 + gamma^2), Lemma C.10)."""
    gmax = max(v.get("gammas_white", [1.0]) or [1.0])
    return 2.0 * float(np.hypot(v.get("sigma_max", 3.0), gmax))


def check_whitened_step(values: dict) -> None:
    """eta_white * lambda_max <= 1 on whitened data: above it the top mode's GD factor 1 - eta lambda is negative,
    GD oscillates about the closed form instead of following it (and diverges above 2)."""
    v = values
    if "eta_white" in v and ("sigma_max" in v or "gammas_white" in v):
        lam = _whitened_sharpness(v)
        if v["eta_white"] * lam > 1.0:
            raise ParameterError(f"parameter eta_white: eta_white * 2 sqrt(sigma_max^2 + max(gammas_white)^2) = "
                                 f"{v['eta_white'] * lam:.3g} exceeds 1 (GD on whitened data oscillates); allowed: "
                                 f"eta_white <= {1.0 / lam:.3g} for these sigma_max and gammas_white")


# Measured on the reference machine (one run alone, OMP_NUM_THREADS=1) at the defaults, in seconds (59 s in all);
# scaled to the front matter's expected_seconds (two chapters at once).
DEFAULTS = {"n": 5, "d": 10, "k": 3, "width": 200, "eta": 0.01, "horizon": 20.0, "n_gamma": 11, "n_seeds": 2,
            "d_white": 5, "k_white": 3, "sigma_max": 3.0, "sigma_min": 1.0, "gammas_white": [1.0, 0.01, 1e-4, 1e-8],
            "eta_white": 0.004, "noise_steps": 10000, "sde_paths": 100, "mc_paths": 4000, "relu_seeds": 3,
            "relu_steps": 30000}
# (noise: GD at eta, then at eta/2 over four times the steps for the extrapolated decay rate, and its control)
PART_SECONDS = {"fig1a": 8.0, "sweep": 3.0, "mirror": 2.0, "whitened": 3.0, "noise": 6.5, "sde": 1.5, "relu": 6.0}
BASE_SECONDS = 31.0          # kernel start, imports, figures, closed forms: does not grow with the parameters
FRONT_MATTER_SECONDS = 68.0  # the front matter's expected_seconds: the model is scaled to give it at the defaults


def _whitened_horizon(v: dict) -> float:
    """Time of the whitened runs, 1.3 t_1/2(sigma_min, gamma_min) + 2 (as in whitened_experiments)."""
    from stagewise.linear_riccati.riccati import half_time
    k = v.get("k_white", 3)
    smin = v.get("sigma_min", 1.0) if k > 1 else v.get("sigma_max", 3.0)
    return 1.3 * float(half_time(smin, min(v.get("gammas_white", [1e-8]) or [1e-8]))) + 2.0


def _step_seconds(d: int) -> float:
    """Measured time of one reduced-GD step of one batch element in d x d coordinates (numba, one core):
    about 5, 17 and 60 microseconds at d = 10, 32 and 64."""
    return 3.5e-6 * (1.0 + (d / 16.0) ** 2)


def _costs(values: dict) -> dict:
    v = {**DEFAULTS, **values}
    dflt = DEFAULTS

    def ratio(key):
        return float(v[key]) / float(dflt[key])
    sweep_time = max(v["horizon"], 56.0)         # the data decide T (56 for the default draw); horizon is a floor
    sweep_batch = v["n_gamma"] * v["n_seeds"]
    return {
        # full-width and Gaussian runs: 200 / eta steps of (d x width) matrices, six batch elements
        "fig1a": PART_SECONDS["fig1a"] / ratio("eta") * max(ratio("width") * ratio("d"), 1.0),
        # the sweep: T / eta + T / (eta / 2) steps of the whole batch
        "sweep": 3 * sweep_time / v["eta"] * sweep_batch * _step_seconds(v["d"]) + 1.0,
        "mirror": PART_SECONDS["mirror"] / ratio("eta_white") * (_step_seconds(v["d"]) / _step_seconds(10)),
        # whitened: T_w / eta + 2 T_w / eta + 4 T_w / eta steps, batched over gammas_white
        "whitened": 7 * _whitened_horizon(v) / v["eta_white"] * len(v["gammas_white"]) * _step_seconds(v["d_white"])
        + 2.5,
        "noise": PART_SECONDS["noise"] * ratio("noise_steps"),
        "sde": PART_SECONDS["sde"] * (0.5 * ratio("sde_paths") + 0.5 * ratio("mc_paths")),
        "relu": PART_SECONDS["relu"] * ratio("relu_seeds") * ratio("relu_steps"),
    }


def _default_total() -> float:
    return BASE_SECONDS + sum(_costs({}).values())


def expected_seconds(values: dict) -> float:
    """Expected wall time (s) of a run with these parameters on the 2-core reference machine: the default's
    untouched part plus each experiment scaled from its default time by the parameters that drive it (steps =
    time / step size, batch sizes, dimensions, seeds, paths). Roughly right (factor 1.5)."""
    return FRONT_MATTER_SECONDS * (BASE_SECONDS + sum(_costs(values).values())) / _default_total()
