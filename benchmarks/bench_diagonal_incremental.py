"""Benchmark of the diagonal-incremental chapter: fast paths against plain references, same problem.

On the chapter's default toy problem (N=100, 6 tokens, d=10, teacher 2 + 2, instance 2):
1. g(beta) = -grad Ltilde (eq. 4), 20 calls on 4 rows: the compiled numba loop of
   ``attention.DiagonalAttention.g`` vs plain autograd (``reference.g_reference``);
2. gradient descent on 4 alphas x 400 steps: batched over the alphas (``descent.gradient_descent``)
   vs one run at a time (``reference.gradient_descent_reference``);
3. Algorithm 1: wall time and number of stages;
4. exact log-scale gradient flow for alpha in {1e-8, ..., 1e-64}: one ODE per alpha vs one batched ODE
   (wall time, evaluations of g), against the number of plain GD steps the same alphas would need
   (tau_max * log(1/alpha) / eta); and alpha = 1e-128, 1e-256 alone.
Ratios come from the same run.
    .venv/bin/python benchmarks/bench_diagonal_incremental.py [--threads N]
"""
import math

import numpy as np
import torch

from timing import Comparison, setup, timed
from stagewise.diagonal_incremental import algorithm, attention, descent, flow, reference


def main() -> None:
    args = setup(__doc__)
    model, _ = attention.make_teacher_problem(100, 6, 10, 2, 2, 2)
    p = model.p
    beta = torch.randn(4, p, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 0.3
    model.g(beta)                                          # compile the numba loop outside the timing
    calls = 20
    with Comparison(f"g(beta), 4 rows x {calls} calls, torch threads {args.threads}") as c:
        fast = c.time("numba (DiagonalAttention.g)", lambda: [model.g(beta) for _ in range(calls)][-1])
        slow = c.time("autograd (reference)", lambda: [reference.g_reference(model, beta) for _ in range(calls)][-1])
        c.same(fast, slow, tol=1e-12)

    rng = np.random.default_rng(0)
    u0, v0 = rng.standard_normal(p), rng.standard_normal(p)
    alphas, steps = [0.1, 0.01, 1e-3, 1e-4], 400
    with Comparison(f"gradient descent, {len(alphas)} alphas x {steps} steps") as c:
        fast = c.time("batched over alphas", lambda: descent.gradient_descent(model, u0, v0, alphas, 0.05, steps,
                                                                               record_every=50))
        slow = c.time("reference loop (per run)", lambda: reference.gradient_descent_reference(
            model, u0, v0, alphas, 0.05, steps, record_every=50))
        c.same([fast.loss, fast.beta], [slow.loss, slow.beta], tol=1e-12)

    seconds, stages = timed(lambda: algorithm.algorithm1(model))
    print(f"Algorithm 1: {len(stages) - 1} stages in {seconds:.2f} s")

    tau = np.linspace(0, 1.1 * stages[-1].T + 0.3, 1500)
    flow_alphas = [1e-8, 1e-16, 1e-32, 1e-64]
    gd_steps = sum(tau[-1] * -math.log(a) / 0.05 for a in flow_alphas)
    with Comparison(f"exact log-scale flow, alphas {flow_alphas}") as c:
        per_alpha = c.time("one ODE per alpha", lambda: flow.log_scale_flow(model, flow_alphas, u0, v0, tau,
                                                                             rtol=1e-7, batched=False))
        batched = c.time("one batched ODE", lambda: flow.log_scale_flow(model, flow_alphas, u0, v0, tau,
                                                                         rtol=1e-7, batched=True))
        c.same(per_alpha["loss"], batched["loss"], tol=1e-4)   # two adaptive solvers, rtol 1e-7
    print(f"  evaluations of g: per alpha {per_alpha['nfev']}, batched {batched['nfev']}; plain GD (eta=0.05) "
          f"would need {gd_steps:.0f} steps for the same alphas (and is not gradient flow)")
    for a in (1e-128, 1e-256):
        seconds, out = timed(lambda: flow.log_scale_flow(model, [a], u0, v0, tau, rtol=1e-7))
        print(f"  alpha={a:.0e} alone: {seconds:.1f} s, {out['nfev']} evaluations of g")


if __name__ == "__main__":
    main()
