"""Cross-parameter validator of the escape-speed chapter (named in the chapter's front matter)."""
from __future__ import annotations

from stagewise.core.parameters import ParameterError


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the escape-speed chapter (one-line errors)."""
    depths = values.get("depths", [2, 3])
    if sorted(depths) != list(depths) or len(set(depths)) != len(depths):
        raise ParameterError(f"parameter depths={depths}: must be strictly increasing; allowed: e.g. [2, 3, 4, 5]")
    if values.get("pga_eta_final", 0) > values.get("pga_eta", 1):
        raise ParameterError("parameter pga_eta_final: must not exceed pga_eta; allowed: pga_eta_final <= pga_eta")
    alphas = values.get("alphas", [0.1, 0.05])
    if len(alphas) < 2 or len(set(alphas)) < 2:
        raise ParameterError(f"parameter alphas={alphas}: need at least two distinct init scales to fit a slope")
    if values.get("mnist_depth_small", 4) >= values.get("mnist_depth", 6):
        raise ParameterError("parameter mnist_depth_small: must be below mnist_depth; allowed: mnist_depth_small < mnist_depth")
    if values.get("mnist_source", "digits") == "digits" and values.get("mnist_n", 0) > 1797:
        raise ParameterError(f"parameter mnist_n={values['mnist_n']}: scikit-learn's digits has 1797 images; "
                             "allowed: mnist_n <= 1797, or mnist_source mnist5k (up to 5000)")
