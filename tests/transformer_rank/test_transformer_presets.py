"""Tests of stagewise.transformer_rank.presets: the paper preset is the CIFAR ViT of Appendix B.2."""
from stagewise.transformer_rank.presets import resolve_preset


def test_paper_preset():
    """App. B.2: 6 layers, 8 heads, width 512, head dim 128, MLP 512, patch 4, batch 512, Adam 1e-4; steps kept."""
    P = resolve_preset({"preset": "paper", "vit_depth": 2, "vit_steps": 7})
    assert (P["vit_depth"], P["vit_heads"], P["vit_width"], P["vit_head_dim"], P["vit_mlp"], P["vit_patch"]) == \
        (6, 8, 512, 128, 512, 4)
    assert P["vit_batch"] == 512 and P["adam_lr"] == 1e-4 and P["vit_steps"] == 7
    assert resolve_preset({"preset": "tiny", "vit_depth": 2})["vit_depth"] == 2
