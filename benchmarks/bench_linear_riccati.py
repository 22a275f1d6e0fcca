"""Benchmark for the linear-riccati chapter (a script, not a test).

On the Fig. 1a problem (n=5, d=10, k=3) and the chapter's gamma sweep (11 gammas), times:
  1. the batched compiled loop over gammas vs a plain per-step, per-gamma NumPy loop
     (``stagewise.linear_riccati.reference.gd_reference``), same final beta;
  2. reduced d x d coordinates vs full width l = 200 (Lemma 3.1 makes them equivalent), same loop;
  3. the batched torch loop vs a per-gamma torch loop (the path used on CUDA);
and, when CUDA is present, reduced vs full width at d=512, l=8192 on the GPU.
Usage: .venv/bin/python benchmarks/bench_linear_riccati.py [--steps N] [--threads N]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch
from timing import Comparison, setup

from stagewise.linear_riccati import data, gradient_descent, initialization, reference


def main():
    setup(__doc__)
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4000)
    args, _ = ap.parse_known_args()
    steps, eta = args.steps, 0.01
    gen = torch.Generator().manual_seed(0)
    p = data.make_regression(5, 10, 3, gen)
    gammas = np.logspace(-4, 1, 11)
    gd = gradient_descent.gd
    # warm the compiled kernel
    gd(p.XtX, p.XtY, *initialization.reduced_init(gammas, 10, 3), eta, 10, record_every=5)

    XtX, XtY = p.XtX.numpy(), p.XtY.numpy()
    with Comparison(f"[1] 11 gammas x {steps} steps: batched compiled vs per-gamma NumPy reference") as c:
        red = c.time("batched compiled (reduced)",
                     lambda: gd(p.XtX, p.XtY, *initialization.reduced_init(gammas, 10, 3), eta, steps,
                                record_every=100))
        ref = c.time("NumPy reference loop", lambda: np.stack([reference.gd_reference(XtX, XtY, g, eta, steps)
                                                               for g in gammas]))
        c.same(red["beta"][-1], ref, tol=1e-10)

    W1, W2, P = initialization.orthogonal_init(gammas, 10, 200, gen, 3)
    with Comparison(f"[2] compiled, 11 gammas x {steps} steps: reduced (10x10) vs full width l=200") as c:
        red = c.time("reduced d x d", lambda: gd(p.XtX, p.XtY, *initialization.reduced_init(gammas, 10, 3), eta,
                                                 steps, record_every=100))
        full = c.time("full width l=200", lambda: gd(p.XtX, p.XtY, W1, W2, eta, steps, record_every=100))
        c.same(red["beta"], full["beta"], tol=1e-10)

    with Comparison(f"[3] torch (CPU), 11 gammas x {steps} steps: batched over gammas vs per-gamma loop") as c:
        tb = c.time("batched over gammas", lambda: gd(p.XtX, p.XtY, *initialization.reduced_init(gammas, 10, 3),
                                                      eta, steps, record_every=100, compiled=False))
        tl = c.time("per-gamma loop", lambda: [gd(p.XtX, p.XtY, *initialization.reduced_init([g], 10, 3), eta, steps,
                                                  record_every=100, compiled=False) for g in gammas])
        c.same(tb["beta"], np.concatenate([r["beta"] for r in tl], axis=1), tol=1e-10)

    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False
        dev = torch.device("cuda")
        pg = data.make_regression(256, 512, 16, gen, device=dev)
        g12 = np.logspace(-5, 1, 12)
        st = 2000

        def synced(fn):
            out = fn()
            torch.cuda.synchronize()
            return out
        W1, W2, P = initialization.orthogonal_init(g12, 512, 8192, gen, 16, device=dev)
        with Comparison(f"[4] CUDA, d=512, 12 gammas x {st} steps: reduced vs full width l=8192") as c:
            rg = c.time("reduced d x d", lambda: synced(lambda: gd(
                pg.XtX, pg.XtY, *initialization.reduced_init(g12, 512, 16, device=dev), 0.005, st, record_every=500)))
            fg = c.time("full width l=8192", lambda: synced(lambda: gd(pg.XtX, pg.XtY, W1, W2, 0.005, st,
                                                                       record_every=500)))
            c.same(rg["beta"], fg["beta"], tol=1e-8)
    else:
        print("[4] no CUDA device: GPU comparison skipped")


if __name__ == "__main__":
    main()
