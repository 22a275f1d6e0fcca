"""Cross-parameter validator of the transformer-rank chapter (front matter ``stagewise: validator:``)."""
from __future__ import annotations

from stagewise.core.parameters import ParameterError


def check_parameters(values: dict) -> None:
    """Cross-parameter constraints of the transformer-rank chapter (one-line errors)."""
    from stagewise.numerics.datasets import find_cifar_folder
    if values.get("dataset") in ("cifar10", "cifar100"):
        find_cifar_folder(values["dataset"], values.get("data_dir", ""))
    if values.get("preset", "tiny") == "paper":
        return
    for prefix in ("vit_", "gpt_"):
        width, head_dim = values.get(prefix + "width"), values.get(prefix + "head_dim")
        if width is not None and head_dim is not None and width % head_dim:
            raise ParameterError(f"parameter {prefix}head_dim: {head_dim} does not divide {prefix}width={width}; "
                                 f"allowed: a divisor of {prefix}width")
    patch, dataset = values.get("vit_patch"), values.get("dataset", "digits")
    side = 8 if dataset == "digits" else 32
    if patch is not None and side % patch:
        raise ParameterError(f"parameter vit_patch: {patch} does not divide the {side}x{side} images of "
                             f"dataset {dataset}; allowed: a divisor of {side}")
    scales = values.get("init_scales")
    if scales is not None and len(set(scales) | {1.0}) < 2:
        raise ParameterError("parameter init_scales: needs a scale other than 1 to compare with the default; "
                             "allowed: a list with a value != 1")
