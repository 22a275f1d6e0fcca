"""Tests of stagewise.transformer_rank.parameters (the chapter's cross-parameter validator)."""
import pytest

from stagewise.core.parameters import ParameterError
from stagewise.transformer_rank.parameters import check_parameters


def test_check_parameters_messages(tmp_path):
    """One-line errors naming the parameter: head_dim | width, patch | image side, a scale != 1, CIFAR folder."""
    base = dict(preset="tiny", dataset="digits", data_dir=str(tmp_path), vit_width=64, vit_head_dim=16,
                gpt_width=64, gpt_head_dim=16, vit_patch=2, init_scales=[0.1, 1.0])
    check_parameters(base)
    with pytest.raises(ParameterError, match="parameter vit_head_dim: 12 does not divide vit_width=64"):
        check_parameters({**base, "vit_head_dim": 12})
    with pytest.raises(ParameterError, match="parameter gpt_head_dim"):
        check_parameters({**base, "gpt_head_dim": 24})
    with pytest.raises(ParameterError, match="parameter vit_patch: 3 does not divide the 8x8"):
        check_parameters({**base, "vit_patch": 3})
    with pytest.raises(ParameterError, match="parameter init_scales"):
        check_parameters({**base, "init_scales": [1.0]})
    with pytest.raises(ParameterError, match=f"parameter data_dir: cifar10 not found in '{tmp_path}'"):
        check_parameters({**base, "dataset": "cifar10"})
    check_parameters({**base, "preset": "paper", "vit_head_dim": 12})   # the preset overrides the sizes
