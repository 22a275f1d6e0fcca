"""CPU against GPU on the same paper-sized step, in one call: seconds per training step of the chapters' own code.

    python tools/gpu/step_timing.py OUT.json [--cpu-threads N] [--smoke]

Times, on the CPU (``N`` torch threads, default every core) and on the CUDA device when there is one, one training
step of what the ``paper`` runs of the GPU lane train:

* transformer-rank: one replica of the paper's ViT (App. B.2: 6 layers, 8 heads, width 512, head dim 128, MLP 512,
  patch 4, batch 512; the 64 patches of a 32x32 image) under the chapter's training loop (Adam, bfloat16 autocast on
  CUDA as in the chapter's runs, float32 on the CPU);
* escape-speed: full-batch gradient descent on the 5000 real MNIST images of the width-1000, depth-6 MLP
  (float64, the chapter's ``train_digits``).

Each is warmed up, then timed over a fixed number of steps (few on the CPU, where a step takes seconds). Written to
``OUT.json``: seconds per step per device and the ratio. ``--smoke``: tiny sizes, CPU only (the test of this
script's code path).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch


def _vit_step_seconds(device: torch.device, steps: int, warm: int, smoke: bool) -> float:
    from stagewise.transformer_rank.initialization import init_params
    from stagewise.transformer_rank.model import Config
    from stagewise.transformer_rank.optimizer import ReplicaOptimizer
    from stagewise.transformer_rank.settings import PRESETS
    from stagewise.transformer_rank.training import train
    p = PRESETS["paper"]
    depth, width, head_dim, mlp, batch = (1, 32, 8, 32, 16) if smoke else (p["depth"], p["width"], p["head_dim"],
                                                                           p["mlp_dim"], 512)
    cfg = Config("vit", depth, p["heads"], width, head_dim, mlp, tokens=64, inputs=3 * p["patch"] ** 2, classes=10)
    g = torch.Generator().manual_seed(0)
    params = init_params(cfg, [1.0], g, device)
    x = torch.randn(batch, 64, cfg.inputs, generator=g).to(device)
    y = torch.randint(0, 10, (batch,), generator=g).to(device)
    opt = ReplicaOptimizer(params, [True], [1e-4])

    def run(n: int) -> float:
        start = time.perf_counter()
        train(params, cfg, lambda step: (x, y), opt, n, [], ["adam_lr"], [1e-4], mixed_precision=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start
    run(warm)
    return run(steps) / steps


def _mlp_step_seconds(device: torch.device, steps: int, warm: int, smoke: bool) -> float:
    from stagewise.escape_speed.digits import train_digits
    n, pixels, width = (200, 64, 32) if smoke else (5000, 784, 1000)
    g = torch.Generator().manual_seed(0)
    X = torch.rand(pixels, n, generator=g, dtype=torch.float64).to(device)
    Y = torch.nn.functional.one_hot(torch.randint(0, 10, (n,), generator=g), 10).T.double().to(device)

    def run(k: int) -> float:
        start = time.perf_counter()
        train_digits(X, Y, 6, width, 1e-3, k, 0.01, 1.0, k, torch.Generator().manual_seed(1))
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start
    run(warm)
    return run(steps) / steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the JSON file to write")
    parser.add_argument("--cpu-threads", type=int, default=os.cpu_count() or 1, help="torch threads on the CPU")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, CPU only")
    args = parser.parse_args(argv)
    devices = [torch.device("cpu")]
    if torch.cuda.is_available() and not args.smoke:
        devices.append(torch.device("cuda"))
    plan = {"transformer-rank: paper ViT, one replica, batch 512": (_vit_step_seconds, {"cpu": (2, 1), "cuda": (30, 5)}),
            "escape-speed: width-1000 depth-6 MLP, 5000 MNIST images": (_mlp_step_seconds,
                                                                        {"cpu": (3, 1), "cuda": (200, 20)})}
    torch.set_num_threads(args.cpu_threads)
    found: dict = {"cpu_threads": args.cpu_threads, "torch": torch.__version__, "smoke": args.smoke,
                   "gpu": torch.cuda.get_device_name(0) if len(devices) > 1 else None, "steps": {}}
    for name, (measure, counts) in plan.items():
        row = {}
        for device in devices:
            steps, warm = (1, 1) if args.smoke else counts[device.type]
            row[device.type] = {"seconds_per_step": measure(device, steps, warm, args.smoke), "timed_steps": steps}
            print(f"[timing] {name} on {device.type}: {row[device.type]['seconds_per_step']:.4g} s/step", flush=True)
        if "cuda" in row:
            row["cpu_over_gpu"] = row["cpu"]["seconds_per_step"] / row["cuda"]["seconds_per_step"]
        found["steps"][name] = row
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(found, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
