"""Cross-parameter constraints of the chapter (the front matter's ``stagewise: validator:``)."""
from __future__ import annotations

from stagewise.core.parameters import ParameterError


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
