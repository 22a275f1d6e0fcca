"""Cross-parameter validator and cost model of the relu-orthogonal chapter (named in the chapter's front matter)."""
from __future__ import annotations

import math

from stagewise.core.run.parameters import ParameterError

#: Seconds of the default run (front matter's expected_seconds) not spent in the parameter-driven loops below:
#: start-up, imports, figures, the tie experiment (2-core CPU, two chapters at once).
BASE_SECONDS = 26.0
#: The longest run the validator accepts (its message names the loop that dominates).
MAX_SECONDS = 1200.0
#: Theorem 3's growth test reads n up to 2^norm_log2n_max; it tells sqrt(n) from sqrt(n ln n) from 2^14 on (its
#: exponent is about 0.17 there, 0.23 with the window ending at 2^13, against the tolerance 1/4).
NORM_TOP_MIN_LOG2N = 14
#: Draws per n the growth test needs (standard error about 0.09 / sqrt(draws), at most 0.023 against a margin of 0.08).
NORM_MIN_SEEDS = 16


def _norm_gd_work(log2n_max: int, max_steps: int, draws: int = 3) -> float:
    """Multiply-adds of Figure 5's gradient descent: per n, n * m(n) per step per draw, for the steps Algorithm 1 asks
    (about 130 n at log(1/lambda) = 30) up to the cap, plus the largest n again at four times log(1/lambda)."""
    def at(n: int, factor: float) -> float:
        m = math.ceil((math.log(n) + math.log(20)) / math.log(4 / 3))
        return n * m * draws * min(max_steps, factor * 130 * n)
    return sum(at(2 ** k, 1) for k in range(4, log2n_max + 1)) + at(2 ** log2n_max, 4)


def _costs(values: dict) -> dict[str, float]:
    """Seconds per parameter-driven part of the chapter, each scaled from its time at the defaults (measured on
    the 2-core reference machine, one run alone, times 1.3 for two chapters at once)."""
    v = values.get
    etas = v("bal_etas", [0.2, 0.1, 0.05, 0.025])
    lams = v("sweep_log_inv_lambdas", [25.0, 50.0, 100.0, 200.0, 400.0])
    n, m = v("fig1_n", 64), v("fig1_m", 6)
    fig1_work = n * m * 3 * math.sqrt(n) * v("fig1_log_inv_lambda", 1000.0) / (v("fig1_loss_c", 2.0) * v("fig1_lr", 0.01))
    sweep_work = v("sweep_seeds", 4) * sum(lams) * v("sweep_t_max", 40.0) / v("sweep_lr", 0.2)
    k, kg, seeds = v("norm_log2n_max", 14), v("norm_gd_log2n_max", 9), v("norm_seeds", 20)
    return {
        "bal_etas": 2.1 * sum(1 / e for e in etas) / 75.0,
        "fig1_lr": 0.8 * fig1_work / 4.6e8,
        "sweep_lr": 0.4 * sweep_work / 6.2e5 + 0.3,
        "mc_trials": 3.4 * v("mc_trials", 4000) / 4000,
        "cover_seeds": 2.5 * v("cover_seeds", 12) / 12,
        "norm_log2n_max": 2 * 1.2 * seeds / 20 * 2.0 ** (k - 14) * (k / 14) ** 2,
        "norm_gd_log2n_max": 3.4 * _norm_gd_work(kg, v("norm_gd_max_steps", 60000)) / _norm_gd_work(9, 60000)
        * min(1.0, v("norm_gd_log_inv_lambda", 30.0) / 30.0) ** 0.5,
        # the GD widths are trained twice: at log(1/lambda) and, for the gap closing as lambda -> 0, at four times it
        "width_gd_widths": 0.7 * seeds / 20 + 8.5 * sum(v("width_gd_widths", [16, 64, 256, 1024])) / 1360,
    }


def expected_seconds(values: dict) -> float:
    """Expected wall time (s) of a run with these parameters on the 2-core reference machine: the default's
    untouched part plus each loop scaled from its default time by the parameters that drive it (steps, sizes,
    seeds, trials). Roughly right (factor 1.5)."""
    return BASE_SECONDS + sum(_costs(values).values())


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the relu-orthogonal chapter (one-line ParameterError)."""
    lams = values.get("sweep_log_inv_lambdas", [])
    if len(lams) < 3 or len(set(lams)) != len(lams):
        raise ParameterError("parameter sweep_log_inv_lambdas: needs at least 3 distinct values for the "
                             "extrapolation to lambda -> 0; allowed: >= 3 distinct values in [10, 2000]")
    etas = values.get("bal_etas", [])
    if len(etas) < 3 or len(set(etas)) != len(etas):
        raise ParameterError("parameter bal_etas: the drift slope is fitted by least squares and needs at least 3 "
                             "distinct step sizes (through 2 a line always fits); allowed: >= 3 distinct values in (0, 0.5]")
    k_max = values.get("norm_log2n_max", 14)
    if k_max < NORM_TOP_MIN_LOG2N:
        raise ParameterError(f"parameter norm_log2n_max: Theorem 3's growth test reads the top three n of the window, "
                             f"which must reach 2^{NORM_TOP_MIN_LOG2N} (below, the ratio's creep to its limit is as fast "
                             f"as sqrt(ln n)); allowed: norm_log2n_max >= {NORM_TOP_MIN_LOG2N}")
    seeds = values.get("norm_seeds", 20)
    if seeds < NORM_MIN_SEEDS:
        raise ParameterError(f"parameter norm_seeds: {seeds} draws per n are too few for Theorem 3's growth test "
                             f"(its standard error is about 0.09/sqrt(draws)); allowed: norm_seeds >= {NORM_MIN_SEEDS}")
    if values.get("norm_gd_log2n_max", 0) > values.get("norm_log2n_max", 99):
        raise ParameterError("parameter norm_gd_log2n_max: must not exceed norm_log2n_max; "
                             f"allowed: <= {values.get('norm_log2n_max')}")
    lr, c = values.get("fig1_lr", 0.01), values.get("fig1_loss_c", 2.0)
    if lr * c * 2 >= 1.0:
        raise ParameterError(f"parameter fig1_lr: lr * loss constant = {lr * c:g} is too large for a "
                             "stable staircase; allowed: fig1_lr * fig1_loss_c < 0.5")
    if not any(w >= 1024 for w in values.get("width_gd_widths", [1024])):
        raise ParameterError("parameter width_gd_widths: the lazy-training check of the He initialisation needs a "
                             "width of at least 1024; allowed: a list with one width >= 1024, e.g. [16, 64, 256, 1024]")
    costs = _costs(values)
    total = BASE_SECONDS + sum(costs.values())
    if total > MAX_SECONDS:
        worst = max(costs, key=costs.get)
        raise ParameterError(f"parameter {worst}: the run would take about {total / 60:.0f} min, most of it in the "
                             f"loop that {worst} drives; allowed: parameters whose expected time is under "
                             f"{MAX_SECONDS / 60:.0f} min (see the chapter's cost model)")
    if "seed" in values and "fig1_n" in values:
        _check_draws(values)


def _check_draws(values: dict) -> None:
    """The draw selections of the run, done here (Algorithm 1 only, well under a second when they succeed) so that
    parameters no draw can satisfy are rejected before the run, naming the parameter that limits them."""
    from stagewise.core.run.device import stream_seed
    from stagewise.relu_orthogonal import staircase, sweep
    seed = int(values["seed"])
    staircase.predict_figure1(stream_seed(seed, "fig1"), values["fig1_n"], values["fig1_m"], values["fig1_loss_c"],
                              values["fig1_lr"], values["fig1_log_inv_lambda"])
    sweep.sweep_draws(stream_seed(seed, "sweep"), values["sweep_seeds"], values["sweep_t_max"],
                      resolve_at=max(values["sweep_log_inv_lambdas"]), eta=values["sweep_lr"])
