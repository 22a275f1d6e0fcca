"""Gradient descent for two-layer ReLU networks on orthonormal data, in an exact log-scale form.

Each neuron is stored as ``w_j = e^{l_j} U_j`` and ``a_j = e^{l_j} b_j``. One GD step on
``L_c = c/(2n) sum_i (h(x_i) - y_i)^2`` with ``X = I_n`` and relu'(0) = 0 is

    D_j = c/n (y - h) * 1{U_j > 0},   U_j <- U_j + eta b_j D_j,   b_j <- b_j + eta <U_j, D_j>,

which is exactly GD on (w, a) because both gradients are linear in the other factor: the common
scale ``e^{l_j}`` multiplies both sides. Every ``renorm`` steps the scale is moved into ``l_j``
(exact up to rounding). The network output uses ``e^{2 l_j}``, which underflows harmlessly to 0
for the paper's lambda = e^{-1000}; the weights themselves never leave float64's range.

``gd_numba`` is the compiled loop (batched over runs: seeds, lambdas, step sizes);
``stagewise.relu_orthogonal.reference.gd_reference`` is the plain per-step NumPy reference used
by the tests and the benchmark.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from numba import njit

from stagewise.numerics.flows import assert_finite
from stagewise.numerics.roundoff import EPS, SAFETY
from stagewise.relu_orthogonal.algorithm import LimitProcess


@dataclass
class GDResult:
    """What one batch of GD runs leaves: recorded curves, event steps (Theorem 2's jumps), the balance
    of Proposition 1 and final weights (Eq. (15)'s norm)."""

    steps: np.ndarray          # (R,) steps actually taken
    rec_steps: np.ndarray      # (T,) step index of each record
    loss: np.ndarray           # (R, T) loss at recorded steps
    final_loss: np.ndarray     # (R,) loss at the last step taken
    log_norm: np.ndarray       # (R, T, m) log ||w_j||
    neuron_jump: np.ndarray    # (R, m) first step where a_j relu(w_ji) >= y_i / 2 for some i (-1: never)
    point_fit: np.ndarray      # (R, n) first step where y_i h(x_i) >= y_i^2 / 2 (-1: never)
    imbalance: np.ndarray      # (R, m) final (a_j^2 - ||w_j||^2) / (a_j^2 + ||w_j||^2)
    imbalance_max: np.ndarray  # (R, m) max over steps of |that ratio - its initial value| (only with track_balance)
    sign_flips: np.ndarray     # (R,) number of steps at which some a_j changed sign
    U: np.ndarray              # (R, m, n) final directions (scaled)
    b: np.ndarray              # (R, m)
    ell: np.ndarray            # (R, m)
    snaps_dir: np.ndarray      # (R, S, m, n) unit directions at snapshot steps
    snaps_log: np.ndarray      # (R, S, m) log-norms at snapshot steps

    def weights(self) -> tuple[np.ndarray, np.ndarray]:
        """(W, a) in natural scale, (R, m, n) and (R, m); tiny neurons underflow to 0."""
        e = np.exp(self.ell)
        return e[..., None] * self.U, e * self.b

    def outputs(self) -> np.ndarray:
        """Network outputs h(x_i) = sum_j a_j relu(w_ji) of the final weights, (R, n)."""
        W, a = self.weights()
        return np.einsum("rj,rji->ri", a, np.maximum(W, 0.0))

    def final_norm_sq(self) -> np.ndarray:
        """||theta||^2 = sum_j e^{2 l_j} (b_j^2 + ||U_j||^2) per run."""
        return np.sum(np.exp(2 * self.ell) * (self.b ** 2 + np.sum(self.U ** 2, axis=2)), axis=1)

    def fitted_sets(self, y: np.ndarray) -> list[list[np.ndarray]]:
        """Per run and neuron: points where the neuron's own output is >= half the label."""
        W, a = self.weights()
        contrib = a[..., None] * np.maximum(W, 0.0)                     # (R, m, n)
        yy = y if y.ndim == 2 else np.broadcast_to(y, (W.shape[0], W.shape[2]))
        hit = yy[:, None, :] * contrib >= 0.5 * yy[:, None, :] ** 2
        return [[np.flatnonzero(hit[r, j]) for j in range(W.shape[1])] for r in range(W.shape[0])]


#: Rounding level of one operation (stagewise.numerics.roundoff) and the smallest normal float (division guard).
ROUND = SAFETY * EPS
TINY = float(np.finfo(np.float64).tiny)


@njit(cache=True)
def _gd_kernel(y, U, b, ell, eta, c, steps, rec_every, renorm, tol, snap_steps, track,
               loss_rec, lognorm_rec, neuron_jump, point_fit, imbalance, imb_max, sign_flips, taken, final_loss,
               snaps_dir, snaps_log):
    R, m, n = U.shape
    h = np.empty(n)
    res = np.empty(n)
    scale = np.empty(m)
    nsnap = snap_steps.shape[0]
    last_sign = np.zeros(m, np.int64)
    q0 = np.zeros(m)
    for r in range(R):
        isnap = 0
        last_sign[:] = 0
        for step in range(steps[r] + 1):
            for j in range(m):
                scale[j] = np.exp(2.0 * ell[r, j])
            for i in range(n):
                h[i] = 0.0
            for j in range(m):
                sj = scale[j] * b[r, j]
                if sj == 0.0:      # exact: an underflowed neuron adds exactly 0.0; skipping it is bit-identical
                    continue
                hit = neuron_jump[r, j] < 0
                for i in range(n):
                    u = U[r, j, i]
                    if u > 0.0:    # exact: the ReLU's definition
                        v = sj * u
                        h[i] += v
                        if hit and y[r, i] * v >= 0.5 * y[r, i] * y[r, i]:
                            neuron_jump[r, j] = step
                            hit = False
            loss = 0.0
            for i in range(n):
                e = y[r, i] - h[i]
                loss += e * e
                res[i] = c / n * e
                if point_fit[r, i] < 0 and y[r, i] * h[i] >= 0.5 * y[r, i] * y[r, i]:
                    point_fit[r, i] = step
            loss *= c / (2.0 * n)
            if step % rec_every == 0:
                k = step // rec_every
                loss_rec[r, k] = loss
                for j in range(m):
                    nu = 0.0
                    for i in range(n):
                        nu += U[r, j, i] * U[r, j, i]
                    lognorm_rec[r, k, j] = ell[r, j] + 0.5 * np.log(nu)
            if track:
                for j in range(m):
                    nu = 0.0
                    for i in range(n):
                        nu += U[r, j, i] * U[r, j, i]
                    tot = nu + b[r, j] * b[r, j]
                    q = (b[r, j] * b[r, j] - nu) / max(tot, TINY)    # 0/TINY = 0 for an all-zero neuron
                    if step == 0:
                        q0[j] = q
                    q = abs(q - q0[j])                                  # the drift from the initial imbalance
                    if q > imb_max[r, j]:
                        imb_max[r, j] = q
            while isnap < nsnap and snap_steps[isnap] == step:
                for j in range(m):
                    nu = 0.0
                    for i in range(n):
                        nu += U[r, j, i] * U[r, j, i]
                    nu = np.sqrt(nu)
                    snaps_log[r, isnap, j] = ell[r, j] + np.log(nu)
                    for i in range(n):
                        snaps_dir[r, isnap, j, i] = U[r, j, i] / nu
                isnap += 1
            if step == steps[r] or loss < tol:
                taken[r] = step
                final_loss[r] = loss
                break
            if not np.isfinite(loss):
                taken[r] = -step - 1
                final_loss[r] = loss
                break
            # gradient step: one pass per neuron, the b-gradient read from the old U before updating it
            for j in range(m):
                bj = b[r, j]
                step_u = eta[r] * bj
                g = 0.0
                for i in range(n):
                    u = U[r, j, i]
                    if u > 0.0:    # exact: the ReLU's definition
                        g += u * res[i]
                        U[r, j, i] = u + step_u * res[i]
                nb = bj + eta[r] * g
                # a sign flip of a_j = e^l b_j, decided beyond rounding: the last sign that |b_j| held beyond the
                # rounding error of the neuron's scaled norm sqrt(b^2 + ||U||^2) is kept, so that a crossing
                # through the rounding band counts once and rounding noise around 0 never counts
                sg = 1 if nb > 0.0 else -1             # exact: provisional, confirmed beyond rounding below
                if sg != last_sign[j]:                   # rare: only then is the band needed
                    uu = nb * nb
                    for i in range(n):
                        uu += U[r, j, i] * U[r, j, i]
                    if abs(nb) > ROUND * n * np.sqrt(uu):
                        if last_sign[j] != 0:
                            sign_flips[r] += 1
                        last_sign[j] = sg
                b[r, j] = nb
            if (step + 1) % renorm == 0:
                for j in range(m):
                    nu = b[r, j] * b[r, j]
                    for i in range(n):
                        nu += U[r, j, i] * U[r, j, i]
                    nu = max(np.sqrt(0.5 * nu), TINY)   # an all-zero neuron stays zero (0 / TINY = 0)
                    ell[r, j] += np.log(nu)
                    b[r, j] /= nu
                    for i in range(n):
                        U[r, j, i] /= nu
        for j in range(m):
            nu = 0.0
            for i in range(n):
                nu += U[r, j, i] * U[r, j, i]
            tot = nu + b[r, j] * b[r, j]
            imbalance[r, j] = (b[r, j] * b[r, j] - nu) / max(tot, TINY)


def gd_numba(y: np.ndarray, U: np.ndarray, b: np.ndarray, ell: np.ndarray, eta: np.ndarray, c: float,
             steps: np.ndarray, rec_every: int = 100, renorm: int = 16, tol: float = 0.0,
             snap_steps: np.ndarray | None = None, eta_name: str = "eta", track_balance: bool = False) -> GDResult:
    """Batched compiled GD on L_c (eq. 2) in log-scale form (module docstring). Shapes: y (R, n),
    U (R, m, n), b and ell (R, m), eta and steps (R,). Records every ``rec_every`` steps; stops a run
    when its loss drops below ``tol``; ``track_balance`` records Proposition 1's imbalance. Raises
    ``stagewise.numerics.flows.DivergenceError`` naming ``eta_name`` on NaN/overflow."""
    U, b, ell = U.astype(float).copy(), b.astype(float).copy(), ell.astype(float).copy()
    y = np.ascontiguousarray(np.broadcast_to(y, (U.shape[0], U.shape[2])), dtype=float)
    R, m, n = U.shape
    steps = np.asarray(steps, np.int64).reshape(R)
    eta = np.asarray(eta, float).reshape(R)
    T = int(steps.max()) // rec_every + 1
    snap = np.zeros(0, np.int64) if snap_steps is None else np.sort(np.asarray(snap_steps, np.int64))
    loss = np.full((R, T), np.nan)
    lognorm = np.full((R, T, m), np.nan)
    nj = np.full((R, m), -1, np.int64)
    pf = np.full((R, n), -1, np.int64)
    imb = np.zeros((R, m))
    imb_max = np.zeros((R, m))
    flips = np.zeros(R, np.int64)
    taken = np.zeros(R, np.int64)
    final_loss = np.full(R, np.nan)
    sd = np.full((R, len(snap), m, n), np.nan)
    sl = np.full((R, len(snap), m), np.nan)
    _gd_kernel(y, U, b, ell, eta, float(c), steps, int(rec_every), int(renorm), float(tol), snap,
               bool(track_balance), loss, lognorm, nj, pf, imb, imb_max, flips, taken, final_loss, sd, sl)
    for r in np.flatnonzero(taken < 0):   # the run's loss at the step where it became NaN/inf
        assert_finite(eta_name, f"{eta[r]:g}", int(-taken[r] - 1), torch.as_tensor(final_loss[r]))
    return GDResult(steps=taken, rec_steps=np.arange(T) * rec_every, loss=loss, final_loss=final_loss, log_norm=lognorm,
                    neuron_jump=nj, point_fit=pf, imbalance=imb, imbalance_max=imb_max, sign_flips=flips, U=U, b=b, ell=ell,
                    snaps_dir=sd, snaps_log=sl)


def fit_loss(res: GDResult, y: np.ndarray, c: float) -> np.ndarray:
    """Whether the data were learned, read off the final weights (not the loop's own loss): the loss
    L_c = c/(2n) sum_i (y_i - h(x_i))^2 of each run's final network against the labels ``y`` (R, n) that the
    run was meant to fit. A run trained on other labels (a misaligned batch) fits these badly."""
    y = np.asarray(y, float)
    return c / (2 * y.shape[-1]) * np.sum((y - res.outputs()) ** 2, axis=-1)


def balanced_state(U0: np.ndarray, s: np.ndarray, log_lam: float | np.ndarray) -> tuple[np.ndarray, ...]:
    """Log-scale state (U, b, ell) of Assumption 3's balanced init w_j = lam U0_j, a_j = s_j lam
    (||U0_j|| = 1, ``log_lam`` = log lam)."""
    ell = np.broadcast_to(np.asarray(log_lam, float), s.shape).copy()
    return U0.copy(), s.astype(float).copy(), ell


def steps_for(lp: LimitProcess, log_inv_lam: float, eta: float, c: float, n: int, margin: float = 20.0) -> int:
    """Steps to pass Algorithm 1's last predicted jump (10% margin) and converge after it (``margin`` residual
    e-foldings at the slowest fitted neuron's rate c ||y_S|| / n)."""
    if lp.K == 0:
        return int(margin / eta)
    slow = min(np.linalg.norm(lp.y[S]) for S in lp.fitted_sets)
    return int(np.ceil((1.1 * lp.times[-1] * log_inv_lam + margin * n / (c * slow)) / eta))
