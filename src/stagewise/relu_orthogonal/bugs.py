"""Realistic bugs of the relu-orthogonal chapter's experiment and measurement code (``stagewise power``).

Each replacement is a slip that the chapter's code could plausibly contain; its docstring says what it is and
why it is plausible. The target is the name the chapter's code looks up at call time (a module that did
``from x import f`` is patched under its own name). ``stagewise power relu-orthogonal`` runs each through the
chapter at default parameters and records which theorem rows catch it.
"""
from __future__ import annotations

import numpy as np

from stagewise.core.checks.catalogue import Bug

PKG = "stagewise.relu_orthogonal"


def gradient_flow_rates(r, eta, *, original):
    """Algorithm 1, line 2, without its step-size correction: the rate r instead of log(1 + eta r)/eta, so the
    'GD-corrected' prediction silently becomes the gradient-flow one. Plausible: the two forms differ by a
    relative eta r / 2, invisible on a plot, and the corrected form is the chapter's own derivation, easy to
    drop when the function is simplified."""
    return r


def unnormalised_init(m, n, signs, rng, *, original):
    """Assumption 3's initial directions drawn as Gaussian vectors and never normalised (the ``U /= norm`` line
    lost), so w_j(0) = lam g_j has norm about lam sqrt(n) while a_j(0) = s_j lam: a wrong initialization scale
    and an unbalanced start. Plausible: the mask, and so Algorithm 1, depend only on the signs of U, so every
    prediction is unchanged."""
    U = rng.standard_normal((m, n))
    s = np.ones(m) if signs == "positive" else rng.choice([-1.0, 1.0], size=m)
    return U, s


def halved_steps(lp, log_inv_lam, eta, c, n, margin=20.0, *, original):
    """The Figure 1 run's step budget halved: ``steps // 2`` slipped in when the loop was batched (the record
    cadence was halved and the step count with it), so the run stops about halfway through the staircase.
    Plausible: the run is 1.3 million steps long and nobody watches it end; the plot's axis just ends earlier."""
    return original(lp, log_inv_lam, eta, c, n, margin=margin) // 2


def swapped_eta_c(lp, log_inv_lam, eta, c, n, margin=20.0, *, original):
    """The step size and the loss constant swapped in the Figure 1 budget (``steps_for(lp, L, c, eta, n)``):
    two adjacent float arguments of the same order of magnitude in the paper's units. Plausible: nothing
    crashes, the run just has another number of steps."""
    return original(lp, log_inv_lam, c, eta, n, margin=margin)


def misaligned_labels(y, U, b, ell, eta, c, steps, *args, original, **kwargs):
    """The label batch rolled by one draw against the weight batch in the Figure 5 and Figure 6 runs: each
    network is trained on the labels of the next draw (the two batches built by separate comprehensions, one
    of them reordered). Plausible: the loop's own loss still reaches 1e-12, because each network fits the
    labels it was given, and the norms are of the same size."""
    y = np.asarray(y, float)
    if y.ndim == 2 and y.shape[0] > 1:
        y = np.roll(y, 1, axis=0)
    return original(y, U, b, ell, eta, c, steps, *args, **kwargs)


def initial_weights_returned(y, U, b, ell, eta, c, steps, *args, original, **kwargs):
    """The Figure 5 and Figure 6 runs report their initial weights as the final ones: the wrapper hands back
    the arrays it was given instead of the kernel's working copies (the ``.copy()`` moved past the call).
    Plausible: the losses and jump steps recorded inside the loop are right; only what is read off the
    weights afterwards (norms, the fit) is wrong."""
    res = original(y, U, b, ell, eta, c, steps, *args, **kwargs)
    res.U, res.b, res.ell = (np.asarray(U, float).copy(), np.asarray(b, float).copy(),
                             np.asarray(ell, float).copy())
    return res


def exponent_sign(res, r, lp, eta, log_inv_lam, *, original):
    """The sweep's measured exponents with the sign of tau = -log||w|| / log(1/lambda) dropped. Plausible: the
    chapter writes ||w_j|| = lambda^tau_j with lambda < 1, and the minus sign is easy to lose."""
    from stagewise.relu_orthogonal.diagnostics import plateau_midpoints, record_at
    out = []
    for k, tm in enumerate(plateau_midpoints(lp)):
        i = record_at(res, tm * log_inv_lam / eta, r)
        tau_hat = res.log_norm[r, i] / log_inv_lam
        tau = lp.exponents(np.array([tm]))[0]
        live = np.ones(len(tau), bool)
        for group in lp.members[:k]:
            live[group] = False
        out.append(np.max(np.abs(tau_hat - tau)[live]) if live.any() else 0.0)
    return np.array(out)


def half_the_data(y, U, b, ell, eta, c, steps, *args, original, **kwargs):
    """The Figure 1 run trained on the first half of its points only (the labels of the rest zeroed, as a
    train/test split left in from a debugging session would). Plausible: the loss still falls in steps and
    still reaches zero."""
    y = np.array(y, float)
    y[..., y.shape[-1] // 2:] = 0.0
    return original(y, U, b, ell, eta, c, steps, *args, **kwargs)


def one_sign_min_norm(y, *, original):
    """The minimal squared norm of Theorem 3's study computed as 2 ||y|| (the formula for labels of one sign,
    right for Figure 1's positive labels) instead of 2(||y_+|| + ||y_-||). Plausible: both are 'twice the norm
    of the labels', and for Figure 1 they agree."""
    return float(2 * np.linalg.norm(y))


def plateau_before_removal(*args, original, **kwargs):
    """Algorithm 1's plateau loss L^(k) recorded before the fitted set S_k is removed from the unfitted points
    (line 6 in the wrong order): every plateau is the previous one, an off-by-one in the staircase. Plausible:
    the jump times, neurons and sets, what a first test looks at, are unchanged."""
    lp = original(*args, **kwargs)
    lp.plateau_losses = np.concatenate([lp.plateau_losses[:1], lp.plateau_losses[:-1]])
    return lp


def mse_clock_in_sweep(y, U, b, ell, eta, c, steps, *args, original, **kwargs):
    """The Theorem 2 sweep trained with PyTorch's mean-squared-error loss (c = 2) while Algorithm 1 predicts
    for c = 1: the clock runs twice as fast. Plausible: the paper's experiments use c = 2 and the Figure 1 run
    does too; the sweep's c = 1 is the chapter's choice."""
    return original(y, U, b, ell, eta, 2.0 * c, steps, *args, **kwargs)


def he_bound_without_sqrt(rng, runs, m, n, *, original):
    """PyTorch's default initialisation of Figure 6 with the uniform bound 1/fan_in instead of 1/sqrt(fan_in):
    W ~ U(-1, 1)/n and a ~ U(-1, 1)/m, a wrong initialization scale (the Kaiming-uniform bound sqrt(1/fan_in)
    written without its square root). Plausible: the lazy prediction is built from the same initial weights, so it
    follows the bug; only the regime changes."""
    W = rng.uniform(-1, 1, (runs, m, n)) / n
    a = rng.uniform(-1, 1, (runs, m)) / m
    return W, a


def mask_without_signs(W0, y, s, *, original):
    """The mask of Assumption 4 without its sign factor, M_ij = 1{<w_j(0), x_i> > 0}: every initially active neuron
    counted as able to fit a point, whatever its output sign. Plausible: with the Figure 1 convention (all signs and
    labels positive) the factor is always 1, so dropping it changes nothing there."""
    return (W0.T > 0) & (np.abs(y)[:, None] > 0)


def theta_order_swapped(W, a, W0, a0, theta_lazy, *, original):
    """The lazy-distance measurement of Figure 6 with the parameter vector built as (W, a) while the lazy solution is
    stored as (a, W): two halves of one vector in swapped order. Plausible: both orders appear in the code, and the
    norm, what every earlier check used, does not depend on the order."""
    theta = np.concatenate([W.reshape(-1), a])
    theta0 = np.concatenate([W0.reshape(-1), a0])
    return float(np.linalg.norm(theta - theta_lazy) / np.linalg.norm(theta_lazy - theta0))


BUGS = [
    Bug("gradient-flow-rates", f"{PKG}.algorithm:neuron_rates", gradient_flow_rates, "wrong constant or exponent",
        ci=True),
    Bug("unnormalised-init", f"{PKG}.data:balanced_init", unnormalised_init, "wrong initialization scale"),
    Bug("he-bound-without-sqrt", f"{PKG}.width_study:he_init", he_bound_without_sqrt, "wrong initialization scale"),
    Bug("halved-steps", f"{PKG}.staircase:steps_for", halved_steps, "fewer steps"),
    Bug("swapped-eta-c", f"{PKG}.staircase:steps_for", swapped_eta_c, "swapped arguments"),
    Bug("misaligned-labels", f"{PKG}.gd_norms:gd_numba", misaligned_labels, "wrong data"),
    Bug("initial-weights-returned", f"{PKG}.gd_norms:gd_numba", initial_weights_returned,
        "initial weights for final"),
    Bug("exponent-sign", f"{PKG}.sweep:exponent_errors", exponent_sign, "sign error"),
    Bug("half-the-data", f"{PKG}.staircase:gd_numba", half_the_data, "training on a subset"),
    Bug("one-sign-min-norm", f"{PKG}.norm_scaling:min_norm_sq", one_sign_min_norm, "wrong measure"),
    Bug("plateau-before-removal", f"{PKG}.staircase:algorithm1", plateau_before_removal, "off-by-one"),
    Bug("mse-clock-in-sweep", f"{PKG}.sweep:gd_numba", mse_clock_in_sweep, "wrong constant or exponent"),
    Bug("mask-without-signs", f"{PKG}.data:activation_mask", mask_without_signs, "wrong measure"),
    Bug("theta-order-swapped", f"{PKG}.width_study:lazy_distance", theta_order_swapped, "swapped arguments"),
]
