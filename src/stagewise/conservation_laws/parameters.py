"""Cross-parameter constraints of the chapter (the front matter's ``stagewise: validator:``)."""
from __future__ import annotations

from stagewise.core.run.parameters import ParameterError

#: The front matter's ``expected_seconds`` (the default run); :func:`expected_seconds` scales it.
DEFAULT_SECONDS = 52.0


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the conservation-laws chapter.

    Orthogonal inputs need ``n_samples <= input_dim``; the slope of Proposition
    ``prf:thm-conservation-laws-one-step`` needs at least three distinct step sizes; and
    ``horizon / min(etas)`` (gradient-descent steps) is capped at 2e6.
    """
    if values["n_samples"] > values["input_dim"]:
        raise ParameterError(f"parameter n_samples={values['n_samples']}: orthogonal inputs need "
                             f"n_samples <= input_dim={values['input_dim']}")
    if len(set(values["etas"])) < 3:
        raise ParameterError("parameter etas: at least three distinct step sizes are needed to measure the drift slope")
    steps = values["horizon"] / min(values["etas"])
    if steps > 2_000_000:
        raise ParameterError(f"parameter horizon: horizon / min(etas) = {steps:.3g} steps; allowed at most 2e6 "
                             "(raise the smallest step size or shorten the horizon)")


def _raw_seconds(values: dict) -> float:
    """Seconds of one run, by a model fitted to runs of the parameter atlas (factor 1.5): kernel, imports
    and figures (12 s); the gradient flows (6 s at the default horizon, growing with the horizon, the
    number of seeds, ``1 / ode_rtol`` (DOP853 takes ``rtol^(-1/8)`` times more steps) and the size of the
    two-layer networks; stiffness is not modelled: a wide problem with a large ``init_scale``, whose
    curvature forces small solver steps, takes longer); and gradient descent, ``horizon / min(etas)``
    steps (plus about 240 for the curvature's Hessian-vector products) of five families, each family
    step 0.25 ms plus 2 ns per multiply-add of its batch (seeds x step sizes x samples x weights)."""
    etas = values["etas"]
    d, m, depth = values["input_dim"], values["width"], values["depth"]
    weights = 2 * d + (d * m + 2 * m) + 2 * (d * m + m) + (d * m + m * m * max(depth - 2, 0) + m)
    work = values["n_seeds"] * len(set(etas)) * values["n_samples"] * weights
    steps = values["horizon"] / min(etas) + 240
    descent = steps * (5 * 0.25e-3 + 2e-9 * work)
    two_layer = values["n_seeds"] * values["n_samples"] * (d * m + m) / (3 * 12 * 104)   # 1 at the defaults
    flow = (6.0 * (values["horizon"] / 10.0) ** 0.8 * (values["n_seeds"] / 3) ** 0.7
            * (1e-10 / values["ode_rtol"]) ** 0.125 * max(1.0, two_layer) ** 0.5)
    return 12.0 + flow + descent


def expected_seconds(values: dict) -> float:
    """Expected wall time of a run with the validated ``values`` on the 2-core machine, scaled so that the
    defaults give the front matter's ``expected_seconds`` (the model: :func:`_raw_seconds`)."""
    defaults = dict(etas=[0.04, 0.02, 0.01, 0.005], horizon=10.0, n_seeds=3, n_samples=12, input_dim=12, width=8,
                    depth=4, init_scale=0.5, ode_rtol=1e-10)
    return DEFAULT_SECONDS * _raw_seconds(values) / _raw_seconds(defaults)
