"""Tests of stagewise.transformer_rank.model: the replica-batched ViT and char-GPT (paper Section 5, App. B)."""
import pytest
import torch

from stagewise.transformer_rank.initialization import init_params
from stagewise.transformer_rank.model import gpt_logits, replica_loss, vit_tokens
from transformer_problem import rand as _rand, tiny as _tiny


@pytest.mark.parametrize("kind", ["vit", "gpt"])
def test_replicas_are_independent(kind):
    """Replicas are independent models (Section 5 setup): loss and gradient of a replica do not
    depend on the other replicas in the batch."""
    cfg = _tiny(kind)
    both = init_params(cfg, [1.0, 0.3], 0)
    alone = init_params(cfg, [0.3], 0)
    if kind == "vit":
        x, y = _rand(3, cfg.tokens, cfg.inputs), torch.tensor([0, 1, 3])
    else:
        x = torch.randint(0, cfg.inputs, (3, cfg.tokens), generator=torch.Generator().manual_seed(0))
        y = torch.roll(x, -1, 1)
    lb, la = replica_loss(both, cfg, x, y), replica_loss(alone, cfg, x, y)
    assert torch.allclose(lb[1], la[0], atol=1e-6)
    lb.sum().backward(); la.sum().backward()
    assert torch.allclose(both["blocks.0.qkv"].grad[1], alone["blocks.0.qkv"].grad[0], atol=1e-6)


def test_gpt_is_causal():
    """The char-GPT (App. B, GPT-2 analogue) is causal: a change of the last token changes only
    the last position's logits."""
    cfg = _tiny("gpt")
    p = init_params(cfg, [1.0], 1)
    x = torch.randint(0, cfg.inputs, (2, cfg.tokens), generator=torch.Generator().manual_seed(0))
    x2 = x.clone(); x2[:, -1] = (x[:, -1] + 1) % cfg.inputs
    with torch.no_grad():
        a, b = gpt_logits(p, cfg, x), gpt_logits(p, cfg, x2)
    assert torch.allclose(a[..., :-1, :], b[..., :-1, :], atol=1e-6)
    assert not torch.allclose(a[..., -1, :], b[..., -1, :])


def test_vit_tokens_prepend_class_token():
    """ViT tokens: class token first, then the embedded patches, plus positions (shape (R, B, T + 1, D))."""
    cfg = _tiny()
    p = init_params(cfg, [1.0, 0.5], 0)
    z = vit_tokens(p, cfg, _rand(3, cfg.tokens, cfg.inputs))
    assert z.shape == (2, 3, cfg.tokens + 1, cfg.width)
    assert torch.allclose(z[:, :, 0], (p["cls"][:, 0] + p["pos"][:, 0]).unsqueeze(1).expand(2, 3, cfg.width))
