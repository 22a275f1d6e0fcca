"""Model-size presets of the transformer-rank chapter: ``tiny`` (CPU) and ``paper`` (the CIFAR
ViT of Appendix B.2 and a 6-layer GPT, for a GPU)."""
from __future__ import annotations

from typing import Any

#: The paper's CIFAR ViT (Section 5 "Effect of initialization scale", App. B.2).
PRESETS: dict[str, dict[str, int]] = {
    "paper": dict(depth=6, heads=8, width=512, head_dim=128, mlp_dim=512, patch=4),
}

#: GPT preset meant for a GPU (a 6-layer GPT, cf. the paper's GPT-2 run in App. B, block 256).
GPT_PAPER = dict(gpt_depth=6, gpt_heads=8, gpt_head_dim=64, gpt_width=512, gpt_block=256, gpt_lr=3e-4)


def resolve_preset(values: dict[str, Any]) -> dict[str, Any]:
    """Apply ``preset``: ``tiny`` keeps the parameters, ``paper`` swaps in the paper's CIFAR ViT
    (6 layers, 8 heads, width 512, head dim 128, MLP 512, patch 4, Adam 1e-4, SGD 0.3, batch 512;
    App. B.2) and a 6-layer width-512 GPT; step counts stay as given. Returns a new dict."""
    out = dict(values)
    if values.get("preset") == "paper":
        vit = PRESETS["paper"]
        out.update(vit_depth=vit["depth"], vit_heads=vit["heads"], vit_width=vit["width"],
                   vit_head_dim=vit["head_dim"], vit_mlp=vit["mlp_dim"], vit_patch=vit["patch"],
                   vit_batch=512, adam_lr=1e-4, sgd_lr=0.3, **GPT_PAPER)
    return out
