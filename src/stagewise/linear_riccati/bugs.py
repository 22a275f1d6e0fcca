"""The chapter's catalogue of realistic bugs, run through the chapter by ``stagewise power``.

Each bug replaces a function of the chapter's experiment or measurement code (the gamma sweep's gradient descent
and initialization, the reduced gradient flow, the data, the whitened runs, the k = 1 dual flow, Corollary 3.1
and the Riccati closed form) by a version with one plausible slip. The target is the name the chapter's code
looks up at call time (``gamma_sweep:gd`` where :mod:`.gamma_sweep` imported :func:`gradient_descent.gd` by name;
``corollary_31:corollary_spectrum`` and ``objective_31:objective``, which the gamma sweep looks up there too).
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

from stagewise.core.checks.catalogue import Bug


def sweep_half_steps(XtX, XtY, W1, W2, eta, steps, *args, original, **kwargs):
    """The gamma sweep trains for half the stated time: ``steps // 2`` slipped in when the two step sizes were
    batched (eta/2 needs twice the steps; the count was halved instead of the step). Plausible: the records still
    end at a time that looks like the horizon once the time axis is rebuilt from ``steps * eta``."""
    return original(XtX, XtY, W1, W2, eta, steps // 2, *args, **kwargs)


def sweep_init_norm_gamma(gammas, d, k, *args, original, **kwargs):
    """The sweep starts from W1(0) = sqrt(gamma) P instead of sqrt(2 gamma) P: I_gamma read as "squared row norm
    gamma". Plausible: the paper's Section 2 and its Lemma 3.1 proof disagree on the factor (erratum 2), and the
    invariant 2 gamma I is easy to misremember as gamma I."""
    return original(np.asarray(gammas, float) / 2, d, k, *args, **kwargs)


def sweep_initial_weights(XtX, XtY, W1, W2, eta, steps, *args, original, **kwargs):
    """The sweep's GD returns the initial (W1, W2) as its final weights: the compiled loop updates copies and the
    wrapper hands back the tensors it was given. Plausible: in-place updates of numba arrays look as if they
    modified the caller's tensors; the records (beta, sigma(W1)) are right, only W1 and W2 are stale."""
    out = original(XtX, XtY, W1, W2, eta, steps, *args, **kwargs)
    out["W1"], out["W2"] = W1, W2
    out["inv"] = W1.transpose(-2, -1) @ W1 - W2 @ W2.transpose(-2, -1)
    return out


def sweep_sv_without_sqrt(XtX, XtY, W1, W2, eta, steps, *args, original, **kwargs):
    """The recorded singular values of W1 are the eigenvalues of W1 W1^T: the square root after ``eigvalsh`` of
    the Gram matrix was dropped. Plausible: the Gram matrix is recorded to save memory and its spectrum is taken
    for the spectrum of W1 (the figures' log axes hide a square)."""
    out = original(XtX, XtY, W1, W2, eta, steps, *args, **kwargs)
    out["sv_W1"] = out["sv_W1"] ** 2
    return out


def corollary_flipped_sign(sigma_star, gamma, d, *, original):
    """Corollary 3.1 with a flipped sign: sigma_i(W1)^2 = -gamma + sqrt(gamma^2 + sigma_i^2) on every branch, the
    W2 formula of Lemma C.10 put on W1. Plausible: the two formulas differ only by that sign."""
    out = np.array(original(sigma_star, gamma, d), float) ** 2
    g = np.asarray(gamma, float)[..., None] if np.ndim(gamma) else gamma
    return np.sqrt(np.clip(out - 2 * g, 0.0, None))


def hidden_values_swapped(sigma_b, gamma, *, original):
    """Lemma C.10's sigma(W1) = (gamma + sqrt(gamma^2 + sigma_b^2))^{1/2} called with its two arguments swapped.
    Plausible: both are floats of the same shape, the formula is symmetric under the square root, and the helper
    is called positionally."""
    return original(gamma, sigma_b)


def riccati_half_rate(s, gamma, t, *, original):
    """Theorem C.12 with E = exp(-sqrt(s^2 + gamma^2) t) instead of exp(-2 sqrt(s^2 + gamma^2) t): the factor 2 of
    the growth rate lost, i.e. the closed form at half the time. Plausible: the scalar Riccati equation is written
    with rate s in one normalization and 2 s in the other."""
    return original(s, gamma, np.asarray(t, float) / 2)


def whitened_modes_after_update(XtX, XtY, W1, W2, eta, steps, *args, original, **kwargs):
    """The whitened runs record diag(U^T beta V) after each update instead of before it: the mode at index m is
    that of step m + 1 (an off-by-one of the time axis t = m eta). Plausible: the record moved below the update
    when the loop was compiled."""
    out = original(XtX, XtY, W1, W2, eta, steps, *args, **kwargs)
    if "modes" in out:
        out["modes"] = np.concatenate([out["modes"][1:], out["modes"][-1:]], axis=0)
    return out


def z_flow_loose(XtX, XtY, gamma, times, rtol=1e-10, atol=1e-12, *, original):
    """The reduced gradient flow integrated with a 1000 times looser relative tolerance (1e-7 for 1e-10).
    Plausible: a tolerance relaxed to make a large-d run fast and never restored."""
    return original(XtX, XtY, gamma, times, rtol=rtol * 1000, atol=atol * 1000)


def dual_flow_gamma_not_doubled(XtX, Xty, gamma, times, rtol=1e-11, atol=1e-14, warp=True):
    """The k = 1 dual mirror flow with sqrt(gamma + ||theta||^2) for sqrt(2 gamma + ||theta||^2) (in the warp and
    in the inverse mirror map): the 2 of W1(0) = sqrt(2 gamma) P dropped. Plausible: the potential is written
    with s + gamma, s = sqrt(||beta||^2 + gamma^2), and the 2 gamma appears only after the inversion."""
    XtX, Xty = np.asarray(XtX, float), np.asarray(Xty, float).ravel()

    def rhs(_t, th_):
        c = np.sqrt(gamma + th_ @ th_)
        return (c if warp else 1.0) * (Xty - XtX @ (c * th_))
    sol = solve_ivp(rhs, (0.0, float(np.max(times))), np.zeros(len(Xty)), t_eval=np.asarray(times, float),
                    method="DOP853", rtol=rtol, atol=atol)
    th_ = sol.y.T
    return np.sqrt(gamma + (th_ ** 2).sum(1))[:, None] * th_


def regression_one_sample_dropped(n, d, k, generator, device="cpu", *, original):
    """The network is trained on the first n - 1 samples while beta_* = X^+ Y is computed from all n: a slice
    ``X[:-1]`` left from a hold-out experiment. Plausible: every shape still fits (the problem has d > n), and
    the loss still goes to zero."""
    p = original(n, d, k, generator, device=device)
    if n < 2:
        return p
    return type(p)(p.X[:-1].contiguous(), p.Y[:-1].contiguous(), p.beta_star, p.beta_gt)


def sweep_init_gamma_floor(gammas, d, k, *args, original, **kwargs):
    """The sweep starts from I_max(gamma, 1e-3): a floor on gamma, put in to keep Z1 well conditioned and the log
    det of the objective finite, silently lifts the three smallest gammas of the default sweep. Plausible: a guard
    against underflow that is harmless at gamma >= 1e-3 and changes nothing at the large-gamma end; only the bottom
    branch sqrt(2 gamma) at small gamma shows it, where an absolute tolerance cannot see it."""
    return original(np.maximum(np.asarray(gammas, float), 1e-3), d, k, *args, **kwargs)


def objective_logdet_of_w1(W1, W2, gamma, *, original):
    """The objective (3.1) with gamma log det W1 (through slogdet of the square reduced Z1) in place of gamma log
    det(W1 W1^T): the factor 2 between the two lost. Plausible: in reduced coordinates Z1 is square, and log det Z1
    is the natural thing to write."""
    import torch
    g = torch.as_tensor(np.asarray(gamma, float), dtype=W1.dtype, device=W1.device)
    val = 0.5 * (W1 ** 2).sum((-2, -1)) + 0.5 * (W2 ** 2).sum((-2, -1)) - g * torch.linalg.slogdet(W1)[1]
    return val.cpu().numpy()


BUGS = [
    Bug("sweep-half-steps", "stagewise.linear_riccati.gamma_sweep:gd", sweep_half_steps, "fewer steps"),
    Bug("init-norm-gamma", "stagewise.linear_riccati.gamma_sweep:reduced_init", sweep_init_norm_gamma,
        "wrong initialization scale", ci=True),
    Bug("initial-weights", "stagewise.linear_riccati.gamma_sweep:gd", sweep_initial_weights,
        "initial weights for final"),
    Bug("sv-without-sqrt", "stagewise.linear_riccati.gamma_sweep:gd", sweep_sv_without_sqrt, "wrong measure"),
    Bug("corollary-sign", "stagewise.linear_riccati.corollary_31:corollary_spectrum", corollary_flipped_sign,
        "sign error"),
    Bug("hidden-values-swapped", "stagewise.linear_riccati.implicit_bias:hidden_singular_values",
        hidden_values_swapped, "swapped arguments"),
    Bug("riccati-half-rate", "stagewise.linear_riccati.whitened_experiments:sigma_beta", riccati_half_rate,
        "wrong constant or exponent"),
    Bug("whitened-modes-off-by-one", "stagewise.linear_riccati.whitened_experiments:gd", whitened_modes_after_update,
        "off-by-one"),
    Bug("z-flow-loose", "stagewise.linear_riccati.reduction:z_flow", z_flow_loose, "looser solver"),
    Bug("dual-flow-gamma", "stagewise.linear_riccati.mirror_experiments:dual_flow_k1", dual_flow_gamma_not_doubled,
        "wrong constant or exponent"),
    Bug("one-sample-dropped", "stagewise.linear_riccati.data:make_regression", regression_one_sample_dropped,
        "training on a subset"),
    Bug("init-gamma-floor", "stagewise.linear_riccati.gamma_sweep:reduced_init", sweep_init_gamma_floor,
        "wrong initialization scale"),
    Bug("objective-logdet-w1", "stagewise.linear_riccati.objective_31:objective", objective_logdet_of_w1,
        "wrong constant or exponent"),
]
