"""Benchmark of the transformer-rank chapter (a script, not a test).

Prints, on the chapter's default problem (digits ViT, width 64, 2 layers, batch 64):
  * per-step time of the batched replica loop (Adam at 3 init scales + SGD, one computation)
    against a plain reference that trains the same 4 models one after another with
    ``torch.optim`` (the ratio is the speed-up of batching);
  * per-step time of the char-GPT;
  * on CUDA: throughput (images/s) of the paper's CIFAR ViT preset with bfloat16 autocast.
Usage: .venv/bin/python benchmarks/bench_transformer-rank.py [--steps N]
"""
from __future__ import annotations

import argparse
import time

import torch

from stagewise.numerics import datasets as D
from stagewise.transformer_rank import model as T
from stagewise.core.device import set_threads


def vit_problem(device, patch=2, width=64, depth=2, heads=4, head_dim=16, mlp=128, batch=64, dataset="digits"):
    data = D.load_images(dataset, seed=0, limit=2048)
    x = D.patchify(data.x_train, patch).to(device)
    cfg = T.Config("vit", depth, heads, width, head_dim, mlp, tokens=x.shape[1], inputs=x.shape[2], classes=10)
    y = data.y_train.to(device)
    idx = torch.arange(batch, device=device) % len(x)
    return cfg, (x[idx], y[idx])


def time_batched(cfg, batch, scales, adam, lrs, steps, device, amp=False):
    params = T.init_params(cfg, scales, 0, device)
    opt = T.ReplicaOptimizer(params, adam, lrs)
    T.train(params, cfg, lambda s: batch, opt, 2, [], ["lr"] * len(scales), lrs, mixed_precision=amp)  # warm-up
    res = T.train(params, cfg, lambda s: batch, opt, steps, [], ["lr"] * len(scales), lrs, mixed_precision=amp)
    return res.seconds_per_step


def time_reference(cfg, batch, scales, adam, lrs, steps, device):
    """The same models, one at a time, each with its own torch.optim optimizer (plain per-step loop)."""
    total = 0.0
    for scale, is_adam, lr in zip(scales, adam, lrs):
        params = T.init_params(cfg, [scale], 0, device)
        opt = (torch.optim.Adam(params.values(), lr=lr) if is_adam
               else torch.optim.SGD(params.values(), lr=lr, momentum=0.9))
        for step in range(steps + 2):
            if step == 2:
                started = time.perf_counter()
            opt.zero_grad()
            T.replica_loss(params, cfg, *batch).sum().backward()
            opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        total += (time.perf_counter() - started) / steps
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    threads = set_threads()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"device {device}, torch threads {threads}, {args.steps} timed steps")

    cfg, batch = vit_problem(device)
    scales, adam, lrs = [0.1, 0.3, 1.0, 1.0], [True, True, True, False], [1e-3, 1e-3, 1e-3, 0.05]
    batched = time_batched(cfg, batch, scales, adam, lrs, args.steps, device)
    reference = time_reference(cfg, batch, scales, adam, lrs, args.steps, device)
    print(f"digits ViT, 4 replicas: batched {1000 * batched:.1f} ms/step, "
          f"one-at-a-time torch.optim {1000 * reference:.1f} ms/step, speed-up x{reference / batched:.2f}")

    text = D.load_pydoc_text()
    gcfg = T.Config("gpt", 2, 4, 64, 16, 256, tokens=64, inputs=len(text.alphabet))
    w = text.codes[torch.arange(16)[:, None] * 1000 + torch.arange(65)].to(device)
    gpt = time_batched(gcfg, (w[:, :-1], w[:, 1:]), [1.0], [True], [3e-3], args.steps, device)
    print(f"char-GPT (2 layers, width 64, 16 x 64 characters): {1000 * gpt:.1f} ms/step")

    if device.type == "cuda":
        p = T.PRESETS["paper"]
        pcfg, pbatch = vit_problem(device, p["patch"], p["width"], p["depth"], p["heads"], p["head_dim"],
                                   p["mlp_dim"], batch=512, dataset="shapes32")
        for amp in (False, True):
            sec = time_batched(pcfg, pbatch, scales, adam, [1e-4, 1e-4, 1e-4, 0.3], args.steps, device, amp)
            print(f"paper CIFAR ViT, 4 replicas x batch 512, {'bf16 autocast' if amp else 'float32'}: "
                  f"{1000 * sec:.1f} ms/step, {4 * 512 / sec:.0f} images/s")
    else:
        print("no CUDA device: paper-preset throughput not measured")


if __name__ == "__main__":
    main()
