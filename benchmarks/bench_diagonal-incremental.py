"""Benchmark for the diagonal-incremental chapter (a script, not a test).

Prints, on the chapter's default toy problem (N=100, 6 tokens, d=10):
1. g(beta) = -grad Ltilde: compiled numba loop vs plain torch autograd (per call, batch of 4 rows);
2. gradient descent batched over 4 alphas (one tensor computation) vs a Python loop over the 4 runs;
3. Algorithm 1 wall time and its number of stages;
4. exact log-scale gradient flow for alpha in {1e-8, ..., 1e-64}, one ODE per alpha vs one batched ODE:
   wall time and function evaluations, against the number of plain GD steps the same alphas would need (tau_max * log(1/alpha) / eta).
Usage: .venv/bin/python benchmarks/bench_diagonal-incremental.py
"""
import math
import time

import numpy as np
import torch

from stagewise.diagonal_incremental import algorithm as D
from stagewise.diagonal_incremental import flow as F

torch.set_num_threads(1)


def timeit(fn, repeat=20):
    fn()
    t = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t) / repeat


def main():
    model, _ = D.make_teacher_problem(100, 6, 10, 2, 2, 2)
    p = model.p
    beta = torch.randn(4, p, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 0.3
    t_numba = timeit(lambda: model.g(beta))
    t_auto = timeit(lambda: D.DiagonalModel.g(model, beta))
    print(f"g(beta), 4 rows: numba {t_numba * 1e3:.3f} ms, torch autograd {t_auto * 1e3:.3f} ms, "
          f"ratio {t_auto / t_numba:.1f}x")

    rng = np.random.default_rng(0)
    u0, v0 = rng.standard_normal(p), rng.standard_normal(p)
    alphas, steps = [0.1, 0.01, 1e-3, 1e-4], 400
    t = time.perf_counter()
    F.gradient_descent(model, u0, v0, alphas, 0.05, steps, record_every=50)
    t_batched = time.perf_counter() - t
    t = time.perf_counter()
    for a in alphas:
        F.gradient_descent(model, u0, v0, [a], 0.05, steps, record_every=50)
    t_loop = time.perf_counter() - t
    print(f"GD, 4 alphas x {steps} steps: batched {t_batched:.2f} s, loop over runs {t_loop:.2f} s, "
          f"ratio {t_loop / t_batched:.2f}x")

    t = time.perf_counter()
    stages = D.algorithm1(model)
    print(f"Algorithm 1: {len(stages) - 1} stages in {time.perf_counter() - t:.2f} s")

    T_K = stages[-1].T
    tau = np.linspace(0, 1.1 * T_K + 0.3, 1500)
    flow_alphas = [1e-8, 1e-16, 1e-32, 1e-64]
    gd_steps = sum(tau[-1] * -math.log(a) / 0.05 for a in flow_alphas)
    for batched in (False, True):
        t = time.perf_counter()
        out = F.log_scale_flow(model, flow_alphas, u0, v0, tau, rtol=1e-7, batched=batched)
        t_flow = time.perf_counter() - t
        print(f"log-scale flow, alphas {flow_alphas}, {'one batched ODE' if batched else 'one ODE per alpha'}: "
              f"{t_flow:.1f} s, {out['nfev']} evaluations of g")
    print(f"  plain GD (eta=0.05) would need {gd_steps:.0f} steps for the same alphas (and is not gradient flow)")
    for a in (1e-128, 1e-256):
        t = time.perf_counter()
        o = F.log_scale_flow(model, [a], u0, v0, tau, rtol=1e-7)
        print(f"  alpha={a:.0e} alone: {time.perf_counter() - t:.1f} s, {o['nfev']} evaluations")


if __name__ == "__main__":
    main()
