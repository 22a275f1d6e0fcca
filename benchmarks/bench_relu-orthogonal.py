"""Benchmark for the relu-orthogonal chapter: compiled (numba) log-scale GD vs a plain NumPy per-step loop.

Problem: the paper-scale Figure 1 run (n = d = 64, m = 6, |N(0,1)| labels, lambda = e^-1000,
learning rate 0.01, MSE-mean loss, about 1.26 million steps), the same draw as the chapter with seed 0.

    .venv/bin/python benchmarks/bench_relu-orthogonal.py [--numpy-steps N] [--batch R]

--numpy-steps: steps of the NumPy reference actually run (default: all of them; a smaller number
is timed and extrapolated linearly, which is exact for a fixed-cost per-step loop).
--batch: also time R copies of the run batched in one compiled call (throughput per run).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from stagewise.relu_orthogonal.algorithm import algorithm as ro
from stagewise.relu_orthogonal.algorithm import training as rt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--numpy-steps", type=int, default=0)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    L, eta, c, n, m = 1000.0, 0.01, 2.0, 64, 6
    (seed, (y, U, s, M)), = rt.find_instances(0, 1, n, m, "abs_gaussian", "positive", gap=0.3, t_max=24.0)
    lp = ro.algorithm1(y, M, s, c=c, eta=eta)
    steps = rt.steps_for(lp, L, eta, c, n)
    U0, b0, l0 = rt.balanced_state(U, s, -L)
    print(f"problem: Figure 1 at paper scale, seed {seed}, {steps:,} steps, n={n}, m={m}, log(1/lambda)={L:g}")

    rt.gd_numba(y[None], U0[None], b0[None], l0[None], np.array([eta]), c, np.array([10]))  # compile / load cache
    t = time.perf_counter()
    res = rt.gd_numba(y[None], U0[None], b0[None], l0[None], np.array([eta]), c, np.array([steps]),
                      rec_every=max(1, steps // 4000))
    t_numba = time.perf_counter() - t
    print(f"numba compiled loop: {t_numba:.2f} s ({1e6 * t_numba / steps:.2f} us/step), "
          f"final loss {res.loss[0, -1]:.2e}, norm {res.final_norm_sq()[0]:.6f} (Eq. 15: {lp.norm_sq():.6f})")

    k = steps if args.numpy_steps <= 0 else min(args.numpy_steps, steps)
    t = time.perf_counter()
    Un, bn, ln, _ = rt.gd_numpy(y, U0, b0, l0, eta, c, k, rec_every=max(1, steps // 4000))
    t_np = (time.perf_counter() - t) * steps / k
    note = "" if k == steps else f" (timed {k:,} steps, extrapolated)"
    print(f"numpy per-step loop: {t_np:.2f} s ({1e6 * t_np / steps:.2f} us/step){note}")
    if k == steps:
        W1, a1 = res.weights()
        err = np.max(np.abs(np.exp(ln) * bn - a1[0]))
        print(f"max |a_numba - a_numpy| at the end: {err:.2e}")
    print(f"speed-up (numpy / numba, same run): {t_np / t_numba:.1f}x")

    R = args.batch
    if R > 1:
        t = time.perf_counter()
        rt.gd_numba(np.tile(y, (R, 1)), np.repeat(U0[None], R, 0), np.tile(b0, (R, 1)), np.tile(l0, (R, 1)),
                    np.full(R, eta), c, np.full(R, steps), rec_every=max(1, steps // 4000))
        t_b = time.perf_counter() - t
        print(f"numba batched x{R}: {t_b:.2f} s, {t_b / R:.2f} s per run; speed-up vs numpy per run: "
              f"{t_np * R / t_b:.1f}x")


if __name__ == "__main__":
    main()
