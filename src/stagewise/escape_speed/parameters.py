"""Cross-parameter validator of the escape-speed chapter (named in the chapter's front matter)."""
from __future__ import annotations

import math

from stagewise.core.run.parameters import ParameterError


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the escape-speed chapter (one-line errors)."""
    depths = values.get("depths", [2, 3])
    if sorted(depths) != list(depths) or len(set(depths)) != len(depths):
        raise ParameterError(f"parameter depths={depths}: must be strictly increasing; allowed: e.g. [2, 3, 4, 5]")
    widths = values.get("ex1_widths", [1, 2])
    if sorted(widths) != list(widths) or len(set(widths)) != len(widths):
        raise ParameterError(f"parameter ex1_widths={widths}: must be strictly increasing (the growth test compares the "
                             "largest widths with the smallest); allowed: e.g. [1, 2, 4, 8, 16, 32]")
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


def _digits_dim(source: str) -> int:
    return 784 if source == "mnist5k" else 64


def expected_seconds(values: dict) -> float:
    """Expected wall time (s) of one run alone on the 2-core reference machine for the validated ``values``.

    Each experiment's measured default time (seed 0, one torch thread; 48 s in all, 52 s with the width controls, 66 s with the random restarts of the Theorem 3.1
    rows) scaled by what drives its cost:
    the projected-ascent sweep by steps x batch x width^2, the depth continuation by steps x depths x restarts x
    width^2, the gradient-descent runs by the Euler steps ``log(1/alpha) / rel_step`` x batch, the digits MLPs by
    steps x images x (input x width + depth x width^2). Per-step overheads of the tiny batched networks keep half of
    each term fixed. Roughly right (a factor 1.5), as the run command's expected-time message needs.
    """
    v = values
    g = lambda name, default: v.get(name, default)
    widths = g("ex1_widths", [1, 2, 4, 8, 16, 32])
    depths = g("depths", [2, 3, 4, 5])
    fixed = 10.0                                                     # start, scans, closed forms, explosion, figures
    R = g("ex1_restarts", 24) * len(widths)
    # the width sweeps run twice: the experiment and its control with the width axis lost (issue 22)
    sweep = 2 * 3.2 * g("pga_steps", 2000) / 2000 * (0.5 + 0.5 * R * max(widths) ** 2 / (144 * 32 ** 2))
    gd_steps = lambda alpha, rel: math.log(1 / alpha) / rel
    gd_ex1 = 2 * 1.0 * gd_steps(g("ex1_gd_alpha", 1e-4), g("rel_step", 0.01)) / gd_steps(1e-4, 0.01) \
        * (0.5 + 0.5 * g("ex1_gd_inits", 16) * len(widths) * max(widths) ** 2 / (96 * 32 ** 2))
    per_depth = lambda L, w, r: L * (0.5 + 0.5 * 1.5 * r * w ** 2 / (36 * 12 ** 2))
    depth = 12.0 * g("depth_steps", 800) / 800 * sum(per_depth(L, g("depth_width", 12), g("depth_restarts", 24))
                                                     for L in depths) / sum(per_depth(L, 12, 24) for L in (2, 3, 4, 5))
    prop33 = 1.2 * g("depth_steps", 800) / 800
    # the random restarts of the low-rank rows: three circle data sets, every depth L >= 3
    n_deep = sum(1 for L in depths if L >= 3)
    ranks = 14.0 * g("pga_steps", 2000) / 2000 * n_deep / 3 \
        * (0.5 + 0.5 * g("rank_restarts", 48) * g("depth_width", 12) ** 2 / (48 * 12 ** 2))
    alphas = g("alphas", [0.04, 0.02, 0.01])
    law_steps = sum(gd_steps(a, g("rel_step", 0.01)) for a in alphas) + 3 * gd_steps(1e-3, g("rel_step", 0.01))
    law_default = sum(gd_steps(a, 0.01) for a in (0.04, 0.02, 0.01)) + 3 * gd_steps(1e-3, 0.01)
    law = 2.8 * law_steps / law_default * (0.5 + 0.5 * g("gd_inits", 16) * g("gd_width", 16) ** 2 / (16 * 16 ** 2))
    w, n = g("mnist_width", 48), g("mnist_n", 500)
    flops = lambda L: _digits_dim(g("mnist_source", "digits")) * w + (L - 2) * w * w + 10 * w
    digits = g("mnist_steps", 4000) * (2e-3 + 3.1e-10 * n * (flops(g("mnist_depth", 6)) + flops(g("mnist_depth_small", 4))))
    return fixed + sweep + gd_ex1 + depth + prop33 + ranks + law + digits
