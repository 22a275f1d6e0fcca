"""The catalogue of realistic bugs of the conservation-laws chapter (the mutation matrix).

Each bug replaces one function of the chapter's experiment or measurement code (the one the chapter looks up
at call time) with a version carrying a plausible slip; ``stagewise power conservation-laws`` runs the chapter
once per bug (``STAGEWISE_BUG=conservation-laws:<name>``) and records which theorem rows catch it. See
:mod:`stagewise.core.sweep.power`.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch

from stagewise.conservation_laws.problem import Data
from stagewise.core.checks.catalogue import Bug


def reversed_step_change(family, params, data, eta, original=None):
    """Sign error in the measured one-step change: ``Q(theta) - Q(theta^+)`` (the old value minus the new one,
    as in a "decrease" of a loss) instead of ``Q(theta^+) - Q(theta)``. Plausible: a change and a decrease are
    written the same way in most training code, and the prediction ``eta^2 Q(g)`` is not symmetric in it."""
    from stagewise.conservation_laws.problem import gradients
    grads = gradients(family, params, data)
    after = [p - eta * g for p, g in zip(params, grads)]
    return family.invariant(params) - family.invariant(after), eta**2 * family.invariant(grads)


def taylor_half(family, params, data, eta, original=None):
    """The one-step prediction with the factor 1/2 of a second-order Taylor term: ``eta^2 Q(g) / 2``.
    Plausible: ``f(x - eta g) = f(x) - eta f'(x) g + eta^2 g f''(x) g / 2`` is how a second-order change is
    usually written; for a quadratic form ``Q`` the Hessian is ``2 Q``, which cancels the 1/2."""
    actual, predicted = original(family, params, data, eta)
    return actual, predicted / 2


def gradient_after_step(family, params, data, eta, original=None):
    """Off-by-one in the step index: the prediction ``eta^2 Q(g)`` is evaluated with the gradient at
    ``theta^+`` (step t + 1) instead of at ``theta`` (step t). Plausible: the parameters were updated in place
    first and the gradient recomputed from them for the prediction."""
    from stagewise.conservation_laws.problem import gradients
    grads = gradients(family, params, data)
    after = [p - eta * g for p, g in zip(params, grads)]
    return family.invariant(after) - family.invariant(params), eta**2 * family.invariant(gradients(family, after, data))


def half_output_gradient(family, params, data, original=None):
    """A missing factor 2 in one layer: the gradient flow's field takes the output layer's gradient halved.
    Plausible: a hand-written gradient of ``(1/2n)||f(X) - Y||^2`` keeps the 1/2 for one layer and drops it
    (with the 2 of the square) for the others; the loss still decreases and the fit still converges."""
    grads = original(family, params, data)
    return grads[:-1] + [0.5 * grads[-1]]


def looser_solver(vector_field, y0, times, rtol=1e-10, atol=1e-12, method="DOP853", original=None):
    """The ODE solver run 1000 times looser than ``ode_rtol`` states. Plausible: a convergence study of the
    solver looped over ``rtol`` from 1e-7 to 1e-10 and the first value stayed in the call (or the tolerance
    was passed as ``rtol * 1e3`` to speed up a slow run and never put back); every flow still looks smooth."""
    return original(vector_field, y0, times, rtol=rtol * 1e3, atol=atol * 1e3, method=method)


def half_batch_loss(family, params, data, original=None):
    """Gradient descent on a subset: the descent loop's loss sees only the first half of the samples.
    Plausible: a mini-batch slice ``X[:batch]`` left from a stochastic version, with ``batch = n // 2``; the
    invariants are still conserved (any loss of a homogeneous network conserves them), so the drift is still
    proportional to eta, but the runs are no longer the flow of the chapter's loss."""
    half = max(data.X.shape[0] // 2, 1)
    return original(family, params, Data(data.X[:half], data.Y[:half]))


def sqrt_gamma_init(seeds, d, width, k, gamma, generator, dtype=torch.float64, original=None):
    """The orthogonal initialization ``I_gamma`` with ``W_1(0) = sqrt(gamma) P`` instead of
    ``sqrt(2 gamma) P``. Plausible: papers write the scale either way (``gamma`` as the squared singular value
    or as half of it), and the 2 is easy to lose in ``sqrt(2 * gamma)``."""
    (W1_0, W2_0), P = original(seeds, d, width, k, gamma, generator, dtype)
    return [W1_0 / np.sqrt(2.0), W2_0], P


def gaussian_p_init(seeds, d, width, k, gamma, generator, dtype=torch.float64, original=None):
    """``I_gamma`` with a Gaussian ``P`` (entries of variance ``1 / width``) in place of one with orthonormal rows.
    Plausible: Varre et al. remark that for a wide layer Gaussian rows are nearly orthogonal, and a random
    ``P`` without the QR step looks the same in every plot; but ``P P^T = I_d`` only up to ``sqrt(d / width)``."""
    P = torch.randn(seeds, d, width, generator=generator, dtype=dtype) / np.sqrt(width)
    return [np.sqrt(2 * gamma) * P, torch.zeros(seeds, width, k, dtype=dtype)], P


def chapter_width_for_gamma(width, input_dim, original=None):
    """``I_gamma`` at the chapter's own width (8 by default, below ``d = 12``), where ``P`` can only have orthonormal
    columns and ``P P^T = I_d`` fails. Plausible: every other network of the chapter has that width."""
    return width


def squared_norm_balance(W, signs, original=None):
    """The balanced output weights ``a_j = s_j ||w_j||^2`` instead of ``s_j ||w_j||``. Plausible: the invariant is
    ``a_j^2 - ||w_j||^2`` and ``(W**2).sum(-1)`` is on the line above in the code; for ``||w_j|| < 1`` the neuron
    is then outside the hypothesis."""
    return signs * (W**2).sum(-1)


def boundary_time_without_n(data, ratio=0.99, original=None):
    """The boundary pair's run without the ``1/n`` of the loss: the crossing time ``asinh(.) / (|x_i| |y_i|)``
    instead of ``asinh(.) n / (|x_i| |y_i|)``, ``n`` times too short. Plausible: the ``1/n`` of the loss is easy to
    drop from a hand-derived rate; the neurons then stop far from the boundary the row is about."""
    return original(data, ratio) / data.X.shape[0]


def interleaved_step_sizes(params0, etas, original=None):
    """The batch's step sizes laid out seed-major while the parameters are step-size-major: ``repeat`` where
    ``repeat_interleave`` belongs. Plausible: the two torch calls differ by one word, and every run is still a
    valid gradient descent; only the pairing of (step size, seed) with the batch rows is wrong."""
    batched, eta = original(params0, etas)
    seeds = params0[0].shape[0]
    return batched, torch.tensor(etas, dtype=eta.dtype, device=eta.device).repeat(seeds)


def _full_balancedness(p):
    """``W_l W_l^T - W_{l+1}^T W_{l+1}`` for every hidden layer, all entries (the deep *linear* invariant)."""
    return torch.cat([(W_in @ W_in.transpose(-1, -2) - W_out.transpose(-1, -2) @ W_out).flatten(1)
                      for W_in, W_out in zip(p[:-1], p[1:])], dim=-1)


def _full_magnitude(p):
    return torch.cat([(W_in.abs() @ W_in.abs().transpose(-1, -2) + W_out.abs().transpose(-1, -2) @ W_out.abs())
                      .flatten(1) for W_in, W_out in zip(p[:-1], p[1:])], dim=-1)


def deep_linear_invariant(*args, original=None, **kwargs):
    """The wrong family's conserved function: the deep ReLU network measured with the deep *linear* network's
    invariant, the full matrix ``W_l W_l^T - W_{l+1}^T W_{l+1}`` (Arora et al.), instead of its diagonal.
    Plausible: the two are the same for linear networks and the chapter states the full one too (it holds
    only where a layer acts linearly)."""
    problems = original(*args, **kwargs)
    deep = dataclasses.replace(problems.families["deep_relu"], invariant=_full_balancedness,
                               magnitude=_full_magnitude)
    return dataclasses.replace(problems, families={**problems.families, "deep_relu": deep})


def fewer_steps(params, loss_fn, etas, horizon, record_fn, n_records=100, step_size_name="etas", progress=None,
                original=None):
    """Gradient descent for half the stated number of steps, ``round(T / eta) // 2``, with the records still
    labelled over ``[0, T]``. Plausible: the record cadence was halved when the loop was batched over step
    sizes and the step count with it; every drift is still proportional to eta."""
    times, records = original(params, loss_fn, etas, horizon / 2, record_fn, n_records, step_size_name, progress)
    return np.linspace(0.0, horizon, n_records + 1), records


def same_step_count(params, loss_fn, etas, horizon, record_fn, n_records=100, step_size_name="etas", progress=None,
                    original=None):
    """Every step size takes the same number of steps, ``round(T / max(etas))`` (the step count of the first,
    largest step size), with the records still labelled over ``[0, T]``: the smaller step sizes stop at
    ``T eta / max(etas)``. Plausible: ``n_steps = round(horizon / etas[0])`` computed once when the loop was
    batched over step sizes; every drift is still proportional to eta, up to how much the flow's integral
    ``int_0^t Q(grad L)`` has saturated by then."""
    steps = torch.round(horizon / etas.max())
    _, records = original(params, loss_fn, etas, etas * steps, record_fn, n_records, step_size_name, progress)
    return np.linspace(0.0, horizon, n_records + 1), records


def records_of_initial(params, loss_fn, etas, horizon, record_fn, n_records=100, step_size_name="etas",
                       progress=None, original=None):
    """The initial weights in place of the current ones: the record function reads the batch it was built
    from, which the loop cloned before training, so every record (and the final state) is the initialization.
    Plausible: a closure over ``batched`` instead of its argument ``p`` runs without an error."""
    initial = [p.detach().clone() for p in params]

    def record_initial(_current):
        return record_fn(initial)
    return original(params, loss_fn, etas, horizon, record_initial, n_records, step_size_name, progress)


def ascending_step_sizes(x, y, original=None):
    """A wrong step size in the fit over eta: the step sizes given sorted ascending while the drifts are in
    the order the runs were made (largest step size first). Plausible: ``np.sort(etas)`` for a tidy axis, on a
    list that was sorted the other way round by the run loop."""
    return original(np.sort(np.asarray(x, dtype=float)), y)


BUGS = [
    Bug("reversed-step-change", "stagewise.conservation_laws.one_step_experiment:one_step_change", reversed_step_change,
        "sign error"),
    Bug("taylor-half", "stagewise.conservation_laws.one_step_experiment:one_step_change", taylor_half,
        "wrong constant or exponent", ci=True),
    Bug("gradient-after-step", "stagewise.conservation_laws.one_step_experiment:one_step_change", gradient_after_step,
        "off-by-one"),
    Bug("half-output-gradient", "stagewise.conservation_laws.gradient_flow:gradients", half_output_gradient,
        "wrong constant or exponent"),
    Bug("looser-solver", "stagewise.conservation_laws.gradient_flow:integrate_flow", looser_solver,
        "looser solver"),
    Bug("half-batch", "stagewise.conservation_laws.gradient_descent:loss", half_batch_loss,
        "training on a subset"),
    Bug("sqrt-gamma-init", "stagewise.conservation_laws.orthogonal_init:orthogonal_start", sqrt_gamma_init,
        "wrong initialization scale"),
    Bug("gaussian-p", "stagewise.conservation_laws.orthogonal_init:orthogonal_start", gaussian_p_init,
        "wrong initialization scale"),
    Bug("chapter-width-for-gamma", "stagewise.conservation_laws.orthogonal_init:gamma_width", chapter_width_for_gamma,
        "wrong data"),
    Bug("squared-norm-balance", "stagewise.conservation_laws.sign_experiment:balanced_output", squared_norm_balance,
        "wrong constant or exponent"),
    Bug("boundary-time-without-n", "stagewise.conservation_laws.sign_experiment:boundary_time", boundary_time_without_n,
        "wrong constant or exponent"),
    Bug("interleaved-step-sizes", "stagewise.conservation_laws.gradient_descent:batch_over_step_sizes",
        interleaved_step_sizes, "swapped arguments"),
    Bug("deep-linear-invariant", "stagewise.conservation_laws.problem_set:build_problems", deep_linear_invariant,
        "wrong measure"),
    Bug("fewer-steps", "stagewise.conservation_laws.gradient_descent:gradient_descent_batched", fewer_steps,
        "fewer steps"),
    Bug("same-step-count", "stagewise.conservation_laws.gradient_descent:gradient_descent_batched", same_step_count,
        "fewer steps"),
    Bug("records-of-initial", "stagewise.conservation_laws.gradient_descent:gradient_descent_batched",
        records_of_initial, "initial weights for final"),
    Bug("ascending-step-sizes", "stagewise.conservation_laws.drift_experiment:loglog_slope", ascending_step_sizes,
        "wrong data"),
]
