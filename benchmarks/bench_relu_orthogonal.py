"""Benchmark for the relu-orthogonal chapter: compiled (numba) log-scale GD vs the plain NumPy loop.

Problem: the paper-scale Figure 1 run (n = d = 64, m = 6, |N(0,1)| labels, lambda = e^-1000,
learning rate 0.01, MSE-mean loss, about 1.25 million steps), the same draw as the chapter at
seed 0 (the first admissible draw of its ``fig1`` random stream).

1. Same run, same numbers: the first ``--steps`` steps of it with the compiled loop
   (``training.gd_numba``) and with the plain per-step reference
   (``stagewise.relu_orthogonal.reference.gd_reference``); ``--steps 0`` runs the whole of it
   (several minutes for the reference).
2. Throughput: the whole run compiled, once and ``--batch`` copies batched in one call.

    .venv/bin/python benchmarks/bench_relu_orthogonal.py [--steps N] [--batch R] [--threads N]
"""
from __future__ import annotations

import argparse

import numpy as np
from timing import Comparison, setup

from stagewise.core.run.device import stream_seed
from stagewise.relu_orthogonal import algorithm, reference, training


def main() -> None:
    setup(__doc__.splitlines()[0])
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100_000, help="steps of the same-run comparison (0: all)")
    ap.add_argument("--batch", type=int, default=8, help="runs batched in one compiled call")
    args, _ = ap.parse_known_args()
    L, eta, c, n, m = 1000.0, 0.01, 2.0, 64, 6
    (draw, (y, U, s, M)), = algorithm.find_instances(stream_seed(0, "fig1"), 1, n, m, "abs_gaussian", "positive",
                                                     gap=0.3, t_max=24.0)
    lp = algorithm.algorithm1(y, M, s, c=c, eta=eta)
    steps = training.steps_for(lp, L, eta, c, n)
    U0, b0, l0 = training.balanced_state(U, s, -L)
    rec = max(1, steps // 4000)
    print(f"problem: Figure 1 at paper scale, draw {draw} of stream fig1 (seed 0), {steps:,} steps, n={n}, m={m}, "
          f"log(1/lambda)={L:g}")
    training.gd_numba(y[None], U0[None], b0[None], l0[None], np.array([eta]), c, np.array([10]))  # compile / load cache

    k = steps if args.steps <= 0 else min(args.steps, steps)
    with Comparison(f"same run, first {k:,} steps (final log-scale state U, b, log-norm)") as cmp:
        fast = cmp.time("numba compiled loop", lambda: training.gd_numba(
            y[None], U0[None], b0[None], l0[None], np.array([eta]), c, np.array([k]), rec_every=rec))
        slow = cmp.time("numpy reference loop", lambda: reference.gd_reference(y, U0, b0, l0, eta, c, k, rec_every=rec))
        # gd_numba evaluates the loss at step k and stops; the reference has taken k steps: same state
        cmp.same([fast.U[0], fast.b[0], fast.ell[0]], list(slow[:3]), tol=1e-8)
        print(f"  per step: numba {1e6 * cmp.times['numba compiled loop'] / k:.2f} us, "
              f"numpy {1e6 * cmp.times['numpy reference loop'] / k:.2f} us")

    R = args.batch
    with Comparison(f"whole run ({steps:,} steps), one run vs {R} batched") as cmp:
        res = cmp.time("numba, one run", lambda: training.gd_numba(
            y[None], U0[None], b0[None], l0[None], np.array([eta]), c, np.array([steps]), rec_every=rec))
        if R > 1:
            batched = cmp.time(f"numba, {R} runs batched", lambda: training.gd_numba(
                np.tile(y, (R, 1)), np.repeat(U0[None], R, 0), np.tile(b0, (R, 1)), np.tile(l0, (R, 1)),
                np.full(R, eta), c, np.full(R, steps), rec_every=rec))
            cmp.same(batched.final_norm_sq(), np.repeat(res.final_norm_sq(), R), tol=0.0)
            print(f"  per run batched: {cmp.times[f'numba, {R} runs batched'] / R:.2f} s")
        print(f"  final loss {res.loss[0, -1]:.2e}, norm {res.final_norm_sq()[0]:.6f} (Eq. 15: {lp.norm_sq():.6f})")


if __name__ == "__main__":
    main()
