"""Cross-parameter constraints of the chapter (the front matter's ``stagewise: validator:``)."""
from __future__ import annotations

import math

from stagewise.core.run.parameters import ParameterError


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the diagonal-incremental chapter (one-line errors)."""
    alphas = values.get("alphas_flow", [])
    if len(set(alphas)) < 3:
        raise ParameterError("parameter alphas_flow: needs at least 3 distinct values for the extrapolation "
                             "in 1/log(1/alpha); allowed: a list of >= 3 distinct floats in [1e-300, 1e-4]")
    if min(alphas) > 1e-16:
        raise ParameterError("parameter alphas_flow: the smallest value must be <= 1e-16 so that stages "
                             "separate; allowed: include a value in [1e-300, 1e-16]")
    if values.get("teacher_kq", 1) + values.get("teacher_vo", 1) > 8 and values.get("scale") == "toy":
        raise ParameterError("parameter teacher_kq: teacher_kq + teacher_vo must be <= 8 at scale toy (d = 10); "
                             "allowed: a smaller sum or scale paper")


# Measured default run (scale toy, one run alone on this 2-core machine, OMP_NUM_THREADS=1: 39 s in the
# notebook), seconds per part (fixed: imports, numba compilation, Algorithm 1, assumptions, correlated example);
# each part scales with the parameters that drive its cost. The controls added later (memoryless race, stage (B)
# with noise off the support, a tighter solve at the smallest alpha, the full head from alpha = 0.1) measured
# about 3 s of CPU time together, counted in "fixed".
_DEFAULT_PARTS = {"fixed": 29.0, "flow": 11.0, "gd": 0.5, "conservation": 0.5, "full_head": 1.5}
_DEFAULTS = {"alphas_flow": [1e-8, 1e-16, 1e-32, 1e-64], "alphas_gd": [0.1, 0.01, 0.0001], "eta": 0.05,
             "full_alpha": 1e-6}


def _flow_cost(alphas, alphas_gd) -> float:
    """The exact flow's adaptive steps grow like log(1/alpha), one ODE per alpha, plus three at the largest alpha
    (the finite-alpha direction, the solver check's tighter and looser solves) and one at GD's smallest alpha
    (gradient descent against the flow)."""
    return (sum(math.log(1.0 / a) for a in alphas) + 3 * math.log(1.0 / max(alphas))
            + math.log(1.0 / min(alphas_gd)))


def expected_seconds(values: dict) -> float:
    """Expected wall time (seconds, one run alone, this 2-core machine) of a run with ``values``: the default's
    measured parts scaled by their cost drivers (number and size of ``log(1/alpha)`` of the simulated alphas,
    gradient-descent steps ``log(1/min alphas_gd) / eta``, ``1/eta`` for the conservation study,
    ``log(1/full_alpha)`` for the full head); ``scale = "paper"`` is about 100 times the toy's work per step."""
    v = {**_DEFAULTS, **values}
    parts = dict(_DEFAULT_PARTS)
    parts["flow"] *= (_flow_cost(v["alphas_flow"], v["alphas_gd"])
                      / _flow_cost(_DEFAULTS["alphas_flow"], _DEFAULTS["alphas_gd"]))
    parts["gd"] *= (len(v["alphas_gd"]) * math.log(1 / min(v["alphas_gd"])) / v["eta"]) / \
        (len(_DEFAULTS["alphas_gd"]) * math.log(1 / min(_DEFAULTS["alphas_gd"])) / _DEFAULTS["eta"])
    parts["conservation"] *= _DEFAULTS["eta"] / v["eta"]
    parts["full_head"] *= math.log(1 / v["full_alpha"]) / math.log(1 / _DEFAULTS["full_alpha"])
    total = sum(parts.values())
    return total * (100.0 if v.get("scale") == "paper" else 1.0)
