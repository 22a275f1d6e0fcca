"""Batched gradient descent (stagewise.training) against a plain per-problem Python loop.

Same problem, same numbers: the conservation-laws chapter's two-layer ReLU drift study
(4 step sizes x 3 seeds over the same time horizon). Prints wall times and their ratio,
and checks that both give the same final parameters.
    .venv/bin/python benchmarks/bench_training.py [--threads N]
"""
import argparse
import time

import torch

from stagewise.conservation_laws import experiment as cl
from stagewise.numerics.flows import gradient_descent_batched


def reference_loop(family, data, params0, etas, horizon):
    """One problem at a time, one step at a time: what the package avoids."""
    finals = []
    for eta in etas:
        for s in range(params0[0].shape[0]):
            p = [x[s:s + 1].clone().requires_grad_(True) for x in params0]
            for _ in range(round(horizon / eta)):
                grads = torch.autograd.grad(cl.loss(family, p, data).sum(), p)
                with torch.no_grad():
                    for x, g in zip(p, grads):
                        x -= eta * g
            finals.append(torch.cat([x.detach().flatten(1) for x in p], 1))
    return torch.cat(finals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--horizon", type=float, default=5.0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    family, etas, seeds = cl.FAMILIES["relu"], [0.04, 0.02, 0.01, 0.005], 3
    data = cl.make_orthogonal_data(12, 12, 1, g)
    params0 = cl.init_params(family, seeds, 12, 1, 8, 2, 0.5, g)

    started = time.perf_counter()
    reference = reference_loop(family, data, params0, etas, args.horizon)
    t_reference = time.perf_counter() - started

    started = time.perf_counter()
    batched = [p.repeat(len(etas), *([1] * (p.dim() - 1))) for p in params0]
    eta = torch.tensor(etas, dtype=torch.float64).repeat_interleave(seeds)
    _, records = gradient_descent_batched(batched, lambda p: cl.loss(family, p, data), eta, args.horizon,
                                          lambda p: torch.cat([x.flatten(1) for x in p], 1), n_records=1)
    t_batched = time.perf_counter() - started

    error = float((records[-1] - reference).abs().max())
    steps = sum(round(args.horizon / e) for e in etas) * seeds
    print(f"problems: {len(etas)} step sizes x {seeds} seeds, {steps} problem-steps, torch threads {args.threads}")
    print(f"plain per-problem loop : {t_reference:7.2f} s  ({1e6 * t_reference / steps:6.1f} us per problem-step)")
    print(f"batched (stagewise)    : {t_batched:7.2f} s  ({1e6 * t_batched / steps:6.1f} us per problem-step)")
    print(f"speed-up               : {t_reference / t_batched:7.1f} x   (max parameter difference {error:.1e})")


if __name__ == "__main__":
    main()
