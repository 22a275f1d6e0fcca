"""Measurements of a gradient-descent run against Algorithm 1 (Theorem 2, Eq. 15) of the relu-orthogonal chapter.

Jump times and orders read off a run, plateau-loss and exponent errors at plateau midpoints,
and the error scales Algorithm 1 predicts (which set the chapter's tolerances). The
1/log(1/lambda) extrapolation of jump times is ``stagewise.numerics.fits.inverse_log_fit``.
"""
from __future__ import annotations

import numpy as np

from stagewise.relu_orthogonal.algorithm import LimitProcess
from stagewise.relu_orthogonal.training import GDResult


def measured_jumps(res: GDResult, r: int, eta: float, log_inv_lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 2: neurons in the order they jumped in run r, and their accelerated jump times
    eta*step/log(1/lam)."""
    steps = res.neuron_jump[r]
    order = np.flatnonzero(steps >= 0)
    order = order[np.argsort(steps[order], kind="stable")]
    return order, eta * steps[order] / log_inv_lam


def plateau_midpoints(lp: LimitProcess) -> np.ndarray:
    """Midpoints (t_k + t_{k+1})/2 of the plateaus of Algorithm 1, k = 0..K-1 (t_0 = 0), where
    Theorem 2's staircase and exponents are compared with a run."""
    t = np.concatenate([[0.0], lp.times])
    return 0.5 * (t[:-1] + t[1:])


def record_at(res: GDResult, step: float, r: int | None = None) -> int:
    """Index of the record nearest to ``step`` (for run ``r``: at most its last record)."""
    every = res.rec_steps[1] - res.rec_steps[0] if len(res.rec_steps) > 1 else 1
    last = len(res.rec_steps) - 1 if r is None else min(len(res.rec_steps) - 1, int(abs(res.steps[r])) // every)
    return int(np.clip(np.rint(step / every), 0, last))


def plateau_errors(res: GDResult, r: int, lp: LimitProcess, eta: float, log_inv_lam: float) -> np.ndarray:
    """|L_GD - L^(k)| / L^(0) at the midpoints of the plateaus (t_k, t_{k+1}), k = 0..K-1 (Theorem 2)."""
    idx = [record_at(res, tm * log_inv_lam / eta, r) for tm in plateau_midpoints(lp)]
    return np.abs(res.loss[r, idx] - lp.plateau_losses[:-1]) / lp.plateau_losses[0]


def exponent_errors(res: GDResult, r: int, lp: LimitProcess, eta: float, log_inv_lam: float) -> np.ndarray:
    """Theorem 2's exponents: max_j |tau_hat_j - tau_j| at plateau midpoints over neurons still unfitted,
    tau_hat = -log||w||/log(1/lam)."""
    out = []
    for k, tm in enumerate(plateau_midpoints(lp)):
        i = record_at(res, tm * log_inv_lam / eta, r)
        tau_hat = -res.log_norm[r, i] / log_inv_lam
        tau = lp.exponents(np.array([tm]))[0]
        live = np.ones(len(tau), bool)
        for group in lp.members[:k]:
            live[group] = False
        out.append(np.max(np.abs(tau_hat - tau)[live]) if live.any() else 0.0)
    return np.array(out)


def jump_offsets_nats(lp: LimitProcess, that: np.ndarray, log_inv_lam: float) -> np.ndarray:
    """Theorem 2: (t_hat_k - t_k) log(1/lam) r_{j_k}, the jump-time error expressed as a log-norm offset (nats).

    Theorem 2's O(1/log(1/lam)) error comes from an O(1) offset in log ||w_j|| (initial overlap with
    the predicted direction, alignment and fitting transients); dividing by the jumping neuron's rate
    before its jump turns it into time. Expressed in nats it should not depend on lambda."""
    rate = lp.rates[np.arange(lp.K), lp.neurons]
    return (np.asarray(that) - lp.times) * log_inv_lam * rate


def plateau_error_scale(lp: LimitProcess, log_inv_lam: float) -> np.ndarray:
    """Theorem 2: predicted size of the plateau-loss error at each midpoint (relative to L^(0)), k = 0..K-1.

    Two exponentials set it: the next neurons' outputs a_j ||w_j|| = lam^{2 tau_j(t)}, and the
    residual of the neuron fitted at t_k, which relaxes at rate 2 r_{j_k} in the original clock
    (linearisation of a balanced aligned neuron). Both are powers of lambda."""
    t = np.concatenate([[0.0], lp.times])
    out = []
    for k, tm in enumerate(plateau_midpoints(lp)):
        tau = lp.exponents(np.array([tm]))[0]
        live = lp.active[k]
        e_next = np.exp(-2 * log_inv_lam * tau[live].min()) if live.any() else 0.0
        e_fit = np.exp(-2 * lp.rates[k - 1, lp.neurons[k - 1]] * (tm - t[k]) * log_inv_lam) if k else 0.0
        out.append(max(e_next, e_fit))
    return np.array(out)


def norm_error_scale(lp: LimitProcess, log_inv_lam: float) -> float:
    """Eq. (15): predicted relative deviation of the final squared norm from it.

    A neuron j still live when S_k is fitted at t_k keeps components of relative size
    lam^{tau_j(t_k)} on S_k (they stop growing once the residual there vanishes); when j itself
    becomes of order one, its output on S_k is O(lam^{tau_j(t_k)}) and the fit is shared. So the
    deviation is of order lam^{min tau}, the amplitude (not the square) of the smallest exponent."""
    worst = 0.0
    for k in range(lp.K):
        tau = lp.tau[k + 1]
        live = lp.active[k].copy()
        live[lp.members[k]] = False                           # the group that jumps at t_k (tau = 0)
        if live.any():
            worst = max(worst, float(np.exp(-log_inv_lam * tau[live].min())))
    return worst
