"""Parameter constraints of the linear-riccati chapter: the front-matter validator and gamma > 0.

:func:`check_parameters` is the chapter's cross-parameter validator (named in the chapter's front matter);
:func:`check_gamma` enforces gamma > 0 for the I_gamma initialization (Definition ``thm-linear-riccati-init``).
"""
from __future__ import annotations

import numpy as np

from stagewise.core.parameters import ParameterError


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


def check_gamma(gamma) -> None:
    """gamma must be positive: gamma = 0 is a saddle (W1 = W2 = 0 never moves) and gamma < 0 is undefined."""
    g = np.atleast_1d(np.asarray(gamma, dtype=float))
    if not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise ParameterError(f"parameter gamma: {g[(~np.isfinite(g)) | (g <= 0)][0]!r} is out of range; "
                             "allowed: gamma > 0 (the I_gamma initialization needs W1(0) = sqrt(2 gamma) P)")

