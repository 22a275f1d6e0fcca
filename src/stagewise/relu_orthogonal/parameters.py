"""Cross-parameter validator of the relu-orthogonal chapter (named in the chapter's front matter)."""
from __future__ import annotations

from stagewise.core.parameters import ParameterError


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the relu-orthogonal chapter (one-line ParameterError)."""
    lams = values.get("sweep_log_inv_lambdas", [])
    if len(lams) < 3 or len(set(lams)) != len(lams):
        raise ParameterError("parameter sweep_log_inv_lambdas: needs at least 3 distinct values for the "
                             "extrapolation to lambda -> 0; allowed: >= 3 distinct values in [10, 2000]")
    etas = values.get("bal_etas", [])
    if len(etas) < 2 or len(set(etas)) != len(etas):
        raise ParameterError("parameter bal_etas: needs at least 2 distinct step sizes to measure the drift "
                             "slope; allowed: >= 2 distinct values in (0, 0.5]")
    if values.get("norm_gd_log2n_max", 0) > values.get("norm_log2n_max", 99):
        raise ParameterError("parameter norm_gd_log2n_max: must not exceed norm_log2n_max; "
                             f"allowed: <= {values.get('norm_log2n_max')}")
    lr, c = values.get("fig1_lr", 0.01), values.get("fig1_loss_c", 2.0)
    if lr * c * 2 >= 1.0:
        raise ParameterError(f"parameter fig1_lr: lr * loss constant = {lr * c:g} is too large for a "
                             "stable staircase; allowed: fig1_lr * fig1_loss_c < 0.5")
    if not any(w >= 256 for w in values.get("width_gd_widths", [256])):
        raise ParameterError("parameter width_gd_widths: the lazy-training check of the He initialisation needs a "
                             "width of at least 256; allowed: a list with one width >= 256, e.g. [16, 64, 256]")
