"""The chapter's catalogue of realistic bugs (issue 22, item 2), run through the chapter by ``stagewise power``.

Each bug replaces a function of the chapter's experiment or measurement code (Algorithm 1's race and stage (B),
the exact log-scale flow, gradient descent, the transition and plateau detectors, the teacher problem, the
finite-alpha thresholds) by a version with one plausible slip. The target is the name the chapter's code
looks up at call time (``staircase:log_scale_flow`` where :mod:`.staircase` imported the function by name).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from stagewise.core.checks.catalogue import Bug


def race_factor_two(gamma, b, support, g_tol, b_hi=None, *, original):
    """Eq. (10) with the factor 2 of ``d(u^2 - v^2)/dt = 2 u v g - 2 v u g`` carried into the race:
    ``Delta(i) = (b_i - 1 + sgn g_i) / (2 g_i)``, every stage time halved. Plausible: the paper drops that
    factor in Lemma 4.2 ("harmless"), and a reader who restores it in one place and not the other gets this."""
    return 0.5 * original(gamma, b, support, g_tol, b_hi)


def gd_time_alpha_squared(model, u0, v0, alphas, etas, n_steps, *args, original, **kwargs):
    """Gradient descent's rescaled time divided by ``log(1/alpha^2)`` instead of ``log(1/alpha)``: the time
    axis of the GD curves is squeezed by 2. Plausible: ``theta(0) = alpha theta_0`` puts ``alpha^2`` in
    ``beta = u v``, and the rescaling was written with the scale of ``beta``."""
    out = original(model, u0, v0, alphas, etas, n_steps, *args, **kwargs)
    out.tau = out.tau / 2.0
    return out


def gd_init_alpha_squared(model, u0, v0, alphas, etas, n_steps, *args, original, **kwargs):
    """Gradient descent started from ``alpha^2 theta_0`` while its time is still rescaled by ``log(1/alpha)``.
    Plausible: the initialization was written for ``beta(0) = alpha^2 u_0 v_0`` and then applied to ``u`` and
    ``v`` separately (the scale squared)."""
    alphas = np.asarray(alphas, float)
    out = original(model, u0, v0, alphas ** 2, etas, n_steps, *args, **kwargs)
    out.tau = out.t / -np.log(np.broadcast_to(alphas, out.t.shape[:1]))[:, None]
    return out


def gd_half_steps(model, u0, v0, alphas, etas, n_steps, *args, original, **kwargs):
    """Gradient descent runs half the stated number of steps: ``n_steps // 2`` slipped in when the records were
    thinned to every other step. Plausible: the step count and the record cadence are computed together."""
    return original(model, u0, v0, alphas, etas, n_steps // 2, *args, **kwargs)


def gd_alpha_eta_swapped(model, u0, v0, alphas, etas, n_steps, *args, original, **kwargs):
    """``gradient_descent(model, u0, v0, etas, alphas, ...)``: the initialization scales and the step sizes,
    two lists of small floats next to each other in the signature, passed in the wrong order."""
    return original(model, u0, v0, etas, alphas, n_steps, *args, **kwargs)


def gd_subset(model, u0, v0, alphas, etas, n_steps, *args, original, **kwargs):
    """Gradient descent on the first half of the samples only: a debugging mini-batch ``X[:N // 2]`` left in
    the descent code, while Algorithm 1 and the exact flow use all samples."""
    from stagewise.diagonal_incremental.attention import DiagonalAttention
    if isinstance(model, DiagonalAttention):
        half = model.X.shape[0] // 2
        model = DiagonalAttention(model.X[:half], model.Y[:half])
    return original(model, u0, v0, alphas, etas, n_steps, *args, **kwargs)


def eta_twice(model, U0, V0, etas, n_steps, *args, original, **kwargs):
    """The step applied with ``eta`` twice (``u + eta * (eta * v * g)``: the gradient was already scaled by the
    step size where it was computed) while time is still counted as ``eta * step``."""
    etas_arr = np.asarray(etas, float)
    out = original(model, U0, V0, etas_arr ** 2, n_steps, *args, **kwargs)
    out.t = out.t / np.broadcast_to(etas_arr, out.t.shape[:1])[:, None]
    return out


def descend_initial_weights(model, U0, V0, etas, n_steps, *args, original, **kwargs):
    """Gradient descent reports the weights it started from as its final ``u, v`` (and ``c = u^2 - v^2``):
    the loop rebinds ``u, v`` to new tensors and the result was read from the input arrays."""
    out = original(model, U0, V0, etas, n_steps, *args, **kwargs)
    out.u, out.v = np.array(U0, float), np.array(V0, float)
    out.c = out.u * out.u - out.v * out.v
    return out


def stage_b_looser(model, beta0, active, *, original, g_tol=1e-9, **kwargs):
    """Stage (B)'s stationarity tolerance 1000 times looser (``1e-6`` instead of ``1e-9``): the solver's default
    of another part of the code copied into Algorithm 1's call."""
    return original(model, beta0, active, g_tol=1000.0 * g_tol, **kwargs)


def _merged(parts, tau):
    out = {key: np.concatenate([q[key] for q in parts], axis=1) for key in ("b", "beta", "loss")}

    def dense(t):
        return torch.cat([q["dense"](t) for q in parts], dim=0)

    out.update(tau=tau, nfev=sum(q["nfev"] for q in parts), dense=dense,
               L=np.concatenate([q["L"] for q in parts]), b0=np.concatenate([q["b0"] for q in parts]))
    return out


def second_direction_prescaled(model, alphas, u0, v0, tau, *args, original, **kwargs):
    """The finite-alpha study's second exact flow started from ``alpha^2 theta_0'``: the caller passed the
    initial weights ``alpha theta_0'`` where the function expects the direction ``theta_0'`` and scales it by
    ``alpha`` itself, so the initialization scale is squared while time is still rescaled by ``log(1/alpha)``."""
    parts = [original(model, [a], a * np.asarray(u0), a * np.asarray(v0), tau, *args, **kwargs) for a in alphas]
    return parts[0] if len(parts) == 1 else _merged(parts, tau)


def flow_rtol_looser(model, alphas, u0, v0, tau, *args, original, rtol=1e-8, atol=1e-10, **kwargs):
    """The exact flow integrated with tolerances 1000 times looser than asked (``rtol * 1000``): a units slip
    (a tolerance given per mille) in the call of the ODE solver."""
    return original(model, alphas, u0, v0, tau, *args, rtol=1000.0 * rtol, atol=1000.0 * atol, **kwargs)


def transition_level_off_by_one(tau, loss, levels, dense_loss=None, iters=40, *, original):
    """The k-th transition detected at the midpoint of plateaus ``k`` and ``k + 1`` instead of ``k - 1`` and
    ``k``: the level list indexed from 1 where the loop counts from 0 (the last level is the last plateau)."""
    levels = list(levels)
    shifted = levels[1:] + [levels[-1] - (levels[-2] - levels[-1]) if len(levels) > 1 else levels[-1]]
    return original(tau, loss, shifted, dense_loss, iters)


def count_plateaus_absolute(tau, loss, levels, window=0.05, floor=1e-8):
    """The plateau detector with its drop measured relative to the initial loss ``L(0)`` instead of the current
    loss: a drop of the threshold times ``L(0)`` is needed, so the small late drops are not counted (an absolute
    tolerance where the quantity spans orders of magnitude)."""
    from stagewise.diagonal_incremental.plateaus import drop_threshold
    step = max(1, int(round(window / (tau[1] - tau[0]))))
    drop = ((loss[:-step] - loss[step:]) > drop_threshold(levels) * loss[0]) & (loss[:-step] > floor * loss[0])
    return int(np.flatnonzero(np.diff(drop.astype(int)) == 1).size + int(drop[0]) + 1)


def descend_v_sign(model, U0, V0, etas, n_steps, record_every=10, device="cpu", param_name="eta"):
    """Gradient descent with a sign error in the ``v`` update: ``v <- v - eta u g`` where ``-dL/dv = +u g``
    (``g`` is already minus the gradient, and the minus was written once more). The pair then rotates,
    ``u^2 + v^2`` is conserved instead of ``u^2 - v^2``, and nothing is learned."""
    from stagewise.diagonal_incremental.descent import DescentRun
    from stagewise.numerics.flows import assert_finite
    u = torch.from_numpy(np.ascontiguousarray(U0, dtype=float)).to(device)
    v = torch.from_numpy(np.ascontiguousarray(V0, dtype=float)).to(device)
    etas = np.broadcast_to(np.asarray(etas, float), (u.shape[0],))
    eta = torch.from_numpy(etas[:, None].copy()).to(device)
    c0, factor, scale = u * u - v * v, torch.ones_like(u), u * u + v * v
    ts, losses, betas = [], [], []
    for step in range(n_steps + 1):
        if step % record_every == 0 or step == n_steps:
            ts.append(etas * step)
            losses.append(model.loss(u * v).cpu().numpy())
            betas.append((u * v).cpu().numpy())
        if step == n_steps:
            break
        g = model.g(u * v)
        factor = factor * (1 - eta * eta * g * g)
        u, v = u + eta * v * g, v - eta * u * g
        scale = torch.maximum(scale, u * u + v * v)
    assert_finite(param_name, float(etas.max()), n_steps, u, v)
    return DescentRun(t=np.array(ts).T, loss=np.array(losses).T, beta=np.array(betas).transpose(1, 0, 2),
                      c=(u * u - v * v).cpu().numpy(), c_pred=(c0 * factor).cpu().numpy(), c0=c0.cpu().numpy(),
                      scale=scale.cpu().numpy(), u=u.cpu().numpy(), v=v.cpu().numpy())


def labels_other_teacher(n_samples, n_tokens, d, n_kq, n_vo, seed, *args, original, **kwargs):
    """The labels come from another teacher than the one reported: ``Y`` was generated by the instance's teacher,
    then the teacher was drawn a second time (the next seed of a shared generator) and that draw is returned as
    ``beta*``. Every staircase measurement is consistent, since it uses only the data; only the check that the
    flow ends at the reported teacher (the data learned) can see it."""
    model, _ = original(n_samples, n_tokens, d, n_kq, n_vo, seed, *args, **kwargs)
    _, other = original(n_samples, n_tokens, d, n_kq, n_vo, seed + 1, *args, **kwargs)
    return model, other


def b_hi_sign(u0, v0, alpha, *, original):
    """The finite-alpha upper threshold with the wrong sign: ``b_hi = 2 + x log(u_0^2 - v_0^2)`` (``log_alpha``
    of ``alpha^2 c_0`` with ``log alpha`` taken positive), the correction pushed the wrong way."""
    b0, b_hi = original(u0, v0, alpha)
    return b0, 4.0 - b_hi


def race_memoryless(gamma, b, support, g_tol, b_hi=None, *, original):
    """Eq. (10) with the bookkeeping forgotten: every race starts from ``b = 1`` (``b^0``) instead of ``b^k``,
    as if each stage were an escape from ``theta^0``. Plausible: the race is written once for the first stage
    and reused, and ``b^{k+1}`` of eq. (12) is computed but never passed back in."""
    return original(gamma, np.ones_like(b), support, g_tol, b_hi)


def conservation_same_steps(model, u0, v0, etas, t_end, *args, original, same_steps=False, **kwargs):
    """The conservation study runs every step size for the number of steps the largest one needs
    (``n = t_end / etas[0]`` for all), so the smaller steps stop at ``t_end / 2`` and ``t_end / 4``: the step
    count was hoisted out of the loop over step sizes."""
    return original(model, u0, v0, etas, t_end, *args, same_steps=True, **kwargs)


_P = "stagewise.diagonal_incremental."
BUGS = [
    Bug("race-factor-two", _P + "algorithm:time_until_active", race_factor_two, "wrong constant or exponent", ci=True),
    Bug("gd-time-alpha-squared", _P + "descent:gradient_descent", gd_time_alpha_squared, "wrong constant or exponent"),
    Bug("gd-init-alpha-squared", _P + "descent:gradient_descent", gd_init_alpha_squared, "wrong initialization scale"),
    Bug("second-direction-prescaled", _P + "finite_alpha:log_scale_flow", second_direction_prescaled,
        "wrong initialization scale"),
    Bug("gd-half-steps", _P + "descent:gradient_descent", gd_half_steps, "fewer steps"),
    Bug("eta-twice", _P + "descent:descend", eta_twice, "wrong constant or exponent"),
    Bug("stage-b-looser", _P + "algorithm:train_active", stage_b_looser, "looser solver"),
    Bug("flow-rtol-looser", _P + "staircase:log_scale_flow", flow_rtol_looser, "looser solver"),
    Bug("transition-level-off-by-one", _P + "transitions:transition_times", transition_level_off_by_one, "off-by-one"),
    Bug("gd-alpha-eta-swapped", _P + "descent:gradient_descent", gd_alpha_eta_swapped, "swapped arguments"),
    Bug("gd-subset", _P + "descent:gradient_descent", gd_subset, "training on a subset"),
    Bug("descend-initial-weights", _P + "descent:descend", descend_initial_weights, "initial weights for final"),
    Bug("count-plateaus-absolute", _P + "plateau_states:count_plateaus", count_plateaus_absolute, "wrong measure"),
    Bug("descend-v-sign", _P + "descent:descend", descend_v_sign, "sign error"),
    Bug("b-hi-sign", _P + "finite_alpha:log_scale_thresholds", b_hi_sign, "sign error"),
    Bug("labels-other-teacher", _P + "attention:make_teacher_problem", labels_other_teacher, "wrong data"),
    Bug("race-memoryless", _P + "algorithm:time_until_active", race_memoryless, "wrong measure"),
    Bug("conservation-same-steps", _P + "descent:conservation_study", conservation_same_steps, "fewer steps"),
]
