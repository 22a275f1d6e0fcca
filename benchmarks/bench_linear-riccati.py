"""Benchmark for the linear-riccati chapter (a script, not a test).

Reports, on the Fig. 1a problem (n=5, d=10, k=3) and the chapter's gamma sweep (11 gammas):
  1. reduced d x d coordinates vs full width l (Lemma 3.1 makes them equivalent), same loop;
  2. the batched compiled loop over gammas vs a plain per-step, per-gamma NumPy loop;
  3. the batched torch loop vs a per-gamma torch loop (the path used on CUDA);
and, when CUDA is present, reduced vs full width at d=512, l=8192 on the GPU.
Usage: .venv/bin/python benchmarks/bench_linear-riccati.py [--steps N]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from stagewise.linear_riccati import network as L
from stagewise.core.device import set_threads


def timed(fn, repeat=1):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4000)
    args = ap.parse_args()
    set_threads()
    steps, eta = args.steps, 0.01
    gen = torch.Generator().manual_seed(0)
    p = L.make_regression(5, 10, 3, gen)
    gammas = np.logspace(-4, 1, 11)
    # warm the compiled kernel
    Z1, Z2 = L.reduced_init(gammas, 10, 3)
    L.gd(p.XtX, p.XtY, Z1, Z2, eta, 10, record_every=5)

    t_red, red = timed(lambda: L.gd(p.XtX, p.XtY, *L.reduced_init(gammas, 10, 3), eta, steps, record_every=100))
    W1, W2, P = L.orthogonal_init(gammas, 10, 200, gen, 3)
    t_full, full = timed(lambda: L.gd(p.XtX, p.XtY, W1, W2, eta, steps, record_every=100))
    agree = float(np.abs(red["beta"] - full["beta"]).max())
    print(f"[1] compiled, 11 gammas x {steps} steps: reduced (10x10) {t_red:.3f} s, full width l=200 {t_full:.3f} s,"
          f" ratio {t_full / t_red:.1f}x; max |beta_red - beta_full| = {agree:.1e}")

    XtX, XtY = p.XtX.numpy(), p.XtY.numpy()
    t_ref, ref = timed(lambda: [L.gd_reference_loop(XtX, XtY, g, eta, steps) for g in gammas])
    agree = float(np.abs(np.stack(ref) - red["beta"][-1]).max())
    print(f"[2] per-gamma NumPy loop {t_ref:.3f} s vs batched compiled {t_red:.3f} s: ratio {t_ref / t_red:.1f}x;"
          f" max diff {agree:.1e}")

    t_tb, tb = timed(lambda: L.gd(p.XtX, p.XtY, *L.reduced_init(gammas, 10, 3), eta, steps, record_every=100,
                                  compiled=False))
    t_tl, _ = timed(lambda: [L.gd(p.XtX, p.XtY, *L.reduced_init([g], 10, 3), eta, steps, record_every=100,
                                  compiled=False) for g in gammas])
    print(f"[3] torch (CPU): per-gamma loop {t_tl:.3f} s vs batched over gammas {t_tb:.3f} s: ratio {t_tl / t_tb:.1f}x")

    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False
        dev = torch.device("cuda")
        pg = L.make_regression(256, 512, 16, gen, device=dev)
        g12 = np.logspace(-5, 1, 12)
        st = 2000
        t_rg, rg = timed(lambda: L.gd(pg.XtX, pg.XtY, *L.reduced_init(g12, 512, 16, device=dev), 0.005, st,
                                      record_every=500))
        W1, W2, P = L.orthogonal_init(g12, 512, 8192, gen, 16, device=dev)
        t_fg, fg = timed(lambda: L.gd(pg.XtX, pg.XtY, W1, W2, 0.005, st, record_every=500))
        print(f"[4] CUDA, d=512, 12 gammas x {st} steps: reduced {t_rg:.2f} s, full width l=8192 {t_fg:.2f} s, "
              f"ratio {t_fg / t_rg:.1f}x; max |beta diff| = {np.abs(rg['beta'] - fg['beta']).max():.1e}")
    else:
        print("[4] no CUDA device: GPU comparison skipped")


if __name__ == "__main__":
    main()
