"""Batched gradient descent against a plain per-problem Python loop (conservation-laws chapter).

Same problem, same numbers: the chapter's two-layer ReLU drift study (4 step sizes x 3 seeds
over the same time horizon), run by ``stagewise.numerics.flows.gradient_descent_batched`` and
by ``stagewise.conservation_laws.reference.gradient_descent_reference`` (one problem, one step
at a time). Prints wall times, their ratio, and the largest difference of the final parameters.
    .venv/bin/python benchmarks/bench_conservation_laws.py [--threads N] [--horizon T]
"""
import argparse

import torch

from timing import Comparison, setup
from stagewise.conservation_laws.gradient_descent import batch_over_step_sizes
from stagewise.conservation_laws.models import FAMILIES
from stagewise.conservation_laws.problem import init_params, loss, make_orthogonal_data
from stagewise.conservation_laws.reference import gradient_descent_reference
from stagewise.numerics.flows import gradient_descent_batched
from stagewise.numerics.params import flatten_batched


def main() -> None:
    args = setup(__doc__)
    parser = argparse.ArgumentParser()
    parser.add_argument("--horizon", type=float, default=5.0)
    horizon = parser.parse_known_args()[0].horizon
    g = torch.Generator().manual_seed(0)
    family, etas, seeds = FAMILIES["relu"], [0.04, 0.02, 0.01, 0.005], 3
    data = make_orthogonal_data(12, 12, 1, g)
    params0 = init_params(family, seeds, 12, 1, 8, 2, 0.5, g)

    def batched():
        params, eta = batch_over_step_sizes(params0, etas)
        _, records = gradient_descent_batched(params, lambda p: loss(family, p, data), eta, horizon,
                                              flatten_batched, n_records=1)
        return records[-1]

    steps = sum(round(horizon / e) for e in etas) * seeds
    title = (f"two-layer ReLU drift study: {len(etas)} step sizes x {seeds} seeds, horizon {horizon:g}, "
             f"{steps} problem-steps, torch threads {args.threads}")
    with Comparison(title) as c:
        fast = c.time("batched (stagewise)", batched)
        slow = c.time("reference loop (per problem)",
                      lambda: gradient_descent_reference(family, data, params0, etas, horizon))
        c.same(fast, slow, tol=1e-10)
    print(f"  per problem-step: batched {1e6 * c.times['batched (stagewise)'] / steps:.1f} us, "
          f"reference {1e6 * c.times['reference loop (per problem)'] / steps:.1f} us")


if __name__ == "__main__":
    main()
