"""Benchmark of the transformer-rank chapter (a script, not a test).

On the chapter's default problem (digits ViT, width 64, 2 layers, batch 64):
  * the batched replica loop (Adam at 3 init scales + SGD, one computation,
    ``stagewise.transformer_rank.training.train``) against the plain reference that trains the
    same 4 models one after another with ``torch.optim``
    (``stagewise.transformer_rank.reference.train_reference``); same losses, time ratio is the
    speed-up of batching;
  * per-step time of the char-GPT;
  * on CUDA: throughput (images/s) of the paper's CIFAR ViT preset, float32 and bfloat16 autocast.
Usage: .venv/bin/python benchmarks/bench_transformer_rank.py [--steps N] [--threads N]
"""
from __future__ import annotations

import argparse

import torch
from timing import Comparison, setup, timed

from stagewise.numerics import datasets as data
from stagewise.transformer_rank.initialization import init_params
from stagewise.transformer_rank.model import Config
from stagewise.transformer_rank.optimizer import ReplicaOptimizer
from stagewise.transformer_rank.settings import PRESETS
from stagewise.transformer_rank.reference import train_reference
from stagewise.transformer_rank.training import train


def vit_problem(device, patch=2, width=64, depth=2, heads=4, head_dim=16, mlp=128, batch=64, dataset="digits"):
    images = data.load_images(dataset, seed=0, limit=2048)
    x = data.patchify(images.x_train, patch).to(device)
    cfg = Config("vit", depth, heads, width, head_dim, mlp, tokens=x.shape[1], inputs=x.shape[2], classes=10)
    y = images.y_train.to(device)
    idx = torch.arange(batch, device=device) % len(x)
    return cfg, (x[idx], y[idx])


def batched(cfg, batch, scales, adam, lrs, steps, device, amp=False):
    """Losses ``(steps, R)`` of the batched loop on a fixed batch (warmup 0, cosine decay)."""
    params = init_params(cfg, scales, 0, device)
    opt = ReplicaOptimizer(params, adam, lrs)
    return train(params, cfg, lambda s: batch, opt, steps, [], ["lr"] * len(scales), lrs, mixed_precision=amp).losses


def main():
    setup(__doc__.splitlines()[0])
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args, _ = parser.parse_known_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"device {device}, torch threads {torch.get_num_threads()}, {args.steps} steps")

    cfg, batch = vit_problem(device)
    scales, adam, lrs = [0.1, 0.3, 1.0, 1.0], [True, True, True, False], [1e-3, 1e-3, 1e-3, 0.05]
    batched(cfg, batch, scales, adam, lrs, 2, device)                       # warm-up
    train_reference(cfg, batch, scales, adam, lrs, 2, device=device)
    with Comparison(f"digits ViT, 4 replicas (Adam x3 scales + SGD), {args.steps} steps") as c:
        fast = c.time("batched replicas", lambda: batched(cfg, batch, scales, adam, lrs, args.steps, device))
        slow = c.time("one-at-a-time torch.optim", lambda: train_reference(cfg, batch, scales, adam, lrs,
                                                                           args.steps, device=device))
        c.same(fast, slow, tol=1e-4)
    for name in c.times:
        print(f"  {name}: {1000 * c.times[name] / args.steps:.1f} ms/step")

    text = data.load_pydoc_text()
    gcfg = Config("gpt", 2, 4, 64, 16, 256, tokens=64, inputs=len(text.alphabet))
    w = text.codes[torch.arange(16)[:, None] * 1000 + torch.arange(65)].to(device)
    gbatch = (w[:, :-1], w[:, 1:])
    batched(gcfg, gbatch, [1.0], [True], [3e-3], 2, device)
    seconds, _ = timed(lambda: batched(gcfg, gbatch, [1.0], [True], [3e-3], args.steps, device))
    print(f"char-GPT (2 layers, width 64, 16 x 64 characters): {1000 * seconds / args.steps:.1f} ms/step")

    if device.type == "cuda":
        p = PRESETS["paper"]
        pcfg, pbatch = vit_problem(device, p["patch"], p["width"], p["depth"], p["heads"], p["head_dim"],
                                   p["mlp_dim"], batch=512, dataset="shapes32")
        plrs = [1e-4, 1e-4, 1e-4, 0.3]
        for amp in (False, True):
            batched(pcfg, pbatch, scales, adam, plrs, 2, device, amp)
            seconds, _ = timed(lambda: batched(pcfg, pbatch, scales, adam, plrs, args.steps, device, amp))
            sec = seconds / args.steps
            print(f"paper CIFAR ViT, 4 replicas x batch 512, {'bf16 autocast' if amp else 'float32'}: "
                  f"{1000 * sec:.1f} ms/step, {4 * 512 / sec:.0f} images/s")
    else:
        print("no CUDA device: paper-preset throughput not measured")


if __name__ == "__main__":
    main()
