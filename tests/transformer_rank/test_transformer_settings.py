"""Tests of stagewise.transformer_rank.settings: the paper preset is the CIFAR ViT of Appendix B.2."""
from stagewise.transformer_rank.settings import PAPER_SGD_LR, GptSettings, VitSettings, apply_preset


def _settings():
    vit = VitSettings(dataset="digits", data_dir="", n_images=0, depth=2, heads=4, head_dim=16, width=64, mlp=128,
                      patch=2, steps=7, batch=64, adam_lr=1e-3, sgd_lr=0.05, init_scales=(0.1, 1.0),
                      warmup_fraction=0.1, checkpoints=4, mixed_precision=False)
    gpt = GptSettings(depth=2, heads=4, head_dim=16, width=64, block=64, steps=9, batch=16, lr=3e-3,
                      warmup_fraction=0.1, checkpoints=4, mixed_precision=False)
    return vit, gpt


def test_paper_preset():
    """App. B.2: 6 layers, 8 heads, width 512, head dim 128, MLP 512, patch 4, batch 512, Adam 1e-4; steps kept. The
    SGD step is the preset's stated difference from App. B.1 (0.03, not 0.3: with momentum 0.9, 0.3 diverged)."""
    vit, gpt = apply_preset("paper", *_settings())
    assert (vit.depth, vit.heads, vit.width, vit.head_dim, vit.mlp, vit.patch) == (6, 8, 512, 128, 512, 4)
    assert vit.batch == 512 and vit.adam_lr == 1e-4 and vit.sgd_lr == PAPER_SGD_LR == 0.03 and vit.steps == 7
    assert (gpt.depth, gpt.width, gpt.block, gpt.lr, gpt.steps) == (6, 512, 256, 3e-4, 9)


def test_tiny_preset_keeps_settings():
    """The tiny preset changes nothing."""
    assert apply_preset("tiny", *_settings()) == _settings()
