"""Cross-parameter constraints of the chapter (the front matter's ``stagewise: validator:``)."""
from __future__ import annotations

from stagewise.core.parameters import ParameterError


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
