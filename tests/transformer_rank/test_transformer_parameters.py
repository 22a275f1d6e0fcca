"""Tests of stagewise.transformer_rank.parameters (the chapter's cross-parameter validator)."""
import pytest

from stagewise.core.run.parameters import ParameterError
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


def test_checkpoint_memory_is_bounded():
    """The checkpoints hold every replica's attention weights: a count that cannot fit in memory is refused."""
    base = dict(preset="tiny", dataset="digits", vit_width=64, vit_head_dim=16, gpt_width=64, gpt_head_dim=16,
                vit_patch=2, init_scales=[0.1, 1.0], checkpoints=10 ** 4, vit_steps=10 ** 7)
    check_parameters({**base, "vit_width": 64, "vit_heads": 4})          # 10^4 small checkpoints fit
    with pytest.raises(ParameterError, match=r"parameter checkpoints: 10000 checkpoints would hold .* allowed: at most"):
        check_parameters({**base, "vit_width": 1024, "vit_heads": 16, "vit_head_dim": 64})


def test_expected_seconds_grows_with_the_cost_and_matches_the_default():
    """The cost model: about the front matter's time at the defaults, growing with steps, tokens and sizes;
    shapes32 with 2x2 patches (257 tokens) and 400 steps about the 483 s measured in issue 21."""
    from stagewise.core.run.parameters import resolve
    from stagewise.core.run.registry import get_chapter
    from stagewise.transformer_rank.parameters import expected_seconds
    chapter = get_chapter("transformer-rank")
    defaults = resolve(chapter.parameters, {}, chapter.name)
    t0 = expected_seconds(defaults)
    assert t0 > 0 and chapter.front_matter["expected_seconds"] > 0   # the shown seconds are anchored to the latter
    for name, value in (("vit_steps", 600), ("gpt_steps", 1200), ("vit_width", 128), ("gpt_block", 256),
                        ("vit_batch", 256), ("init_scales", [0.03, 0.1, 0.3, 3.0]), ("vit_depth", 4)):
        assert expected_seconds({**defaults, name: value}) > t0, name
    measured = expected_seconds({**defaults, "dataset": "shapes32", "vit_steps": 400}, controls=False)
    assert 483 / 1.5 <= measured <= 483 * 1.5          # measured without the controls (five ViT replicas)
    issue = expected_seconds({**defaults, "dataset": "shapes32", "vit_steps": 400})
    assert issue > measured                             # the controls cost extra replicas and runs
    assert expected_seconds({**defaults, "dataset": "shapes32", "vit_patch": 4}) < issue / 3
