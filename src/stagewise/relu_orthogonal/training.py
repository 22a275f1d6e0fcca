"""Gradient descent for two-layer ReLU networks on orthonormal data, in an exact log-scale form.

Each neuron is stored as ``w_j = e^{l_j} U_j`` and ``a_j = e^{l_j} b_j``. One GD step on
``L_c = c/(2n) sum_i (h(x_i) - y_i)^2`` with ``X = I_n`` and relu'(0) = 0 is

    D_j = c/n (y - h) * 1{U_j > 0},   U_j <- U_j + eta b_j D_j,   b_j <- b_j + eta <U_j, D_j>,

which is exactly GD on (w, a) because both gradients are linear in the other factor: the common
scale ``e^{l_j}`` multiplies both sides. Every ``renorm`` steps the scale is moved into ``l_j``
(exact up to rounding). The network output uses ``e^{2 l_j}``, which underflows harmlessly to 0
for the paper's lambda = e^{-1000}; the weights themselves never leave float64's range.

``gd_numba`` is the compiled loop (batched over runs: seeds, lambdas, step sizes);
``gd_numpy`` is the plain per-step NumPy reference used by the tests and the benchmark.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from stagewise.core.parameters import ParameterError


@dataclass
class GDResult:
    """What one batch of runs leaves: recorded curves, event steps and final weights."""

    steps: np.ndarray          # (R,) steps actually taken
    rec_steps: np.ndarray      # (T,) step index of each record
    loss: np.ndarray           # (R, T) loss at recorded steps
    final_loss: np.ndarray     # (R,) loss at the last step taken
    log_norm: np.ndarray       # (R, T, m) log ||w_j||
    neuron_jump: np.ndarray    # (R, m) first step where a_j relu(w_ji) >= y_i / 2 for some i (-1: never)
    point_fit: np.ndarray      # (R, n) first step where y_i h(x_i) >= y_i^2 / 2 (-1: never)
    imbalance: np.ndarray      # (R, m) final (a_j^2 - ||w_j||^2) / (a_j^2 + ||w_j||^2)
    imbalance_max: np.ndarray  # (R, m) max over steps of |that ratio| (only with track_balance)
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


@njit(cache=True)
def _gd_kernel(y, U, b, ell, eta, c, steps, rec_every, renorm, tol, snap_steps, track,
               loss_rec, lognorm_rec, neuron_jump, point_fit, imbalance, imb_max, sign_flips, taken, final_loss,
               snaps_dir, snaps_log):
    R, m, n = U.shape
    h = np.empty(n)
    res = np.empty(n)
    scale = np.empty(m)
    nsnap = snap_steps.shape[0]
    for r in range(R):
        isnap = 0
        for step in range(steps[r] + 1):
            for j in range(m):
                scale[j] = np.exp(2.0 * ell[r, j])
            for i in range(n):
                h[i] = 0.0
            for j in range(m):
                sj = scale[j] * b[r, j]
                if sj == 0.0:
                    continue
                hit = neuron_jump[r, j] < 0
                for i in range(n):
                    u = U[r, j, i]
                    if u > 0.0:
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
                    q = abs(b[r, j] * b[r, j] - nu) / tot if tot > 0 else 0.0
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
                break
            # gradient step: one pass per neuron, the b-gradient read from the old U before updating it
            for j in range(m):
                bj = b[r, j]
                step_u = eta[r] * bj
                g = 0.0
                for i in range(n):
                    u = U[r, j, i]
                    if u > 0.0:
                        g += u * res[i]
                        U[r, j, i] = u + step_u * res[i]
                nb = bj + eta[r] * g
                if nb * bj < 0.0:
                    sign_flips[r] += 1
                b[r, j] = nb
            if (step + 1) % renorm == 0:
                for j in range(m):
                    nu = b[r, j] * b[r, j]
                    for i in range(n):
                        nu += U[r, j, i] * U[r, j, i]
                    nu = np.sqrt(0.5 * nu)
                    if nu > 0.0:
                        ell[r, j] += np.log(nu)
                        b[r, j] /= nu
                        for i in range(n):
                            U[r, j, i] /= nu
        for j in range(m):
            nu = 0.0
            for i in range(n):
                nu += U[r, j, i] * U[r, j, i]
            tot = nu + b[r, j] * b[r, j]
            imbalance[r, j] = (b[r, j] * b[r, j] - nu) / tot if tot > 0 else 0.0


def gd_numba(y: np.ndarray, U: np.ndarray, b: np.ndarray, ell: np.ndarray, eta: np.ndarray, c: float,
             steps: np.ndarray, rec_every: int = 100, renorm: int = 16, tol: float = 0.0,
             snap_steps: np.ndarray | None = None, eta_name: str = "eta", track_balance: bool = False) -> GDResult:
    """Batched compiled GD in log-scale form (module docstring). Shapes: y (R, n), U (R, m, n),
    b and ell (R, m), eta and steps (R,). Records every ``rec_every`` steps; stops a run when its
    loss drops below ``tol``. Raises ParameterError naming ``eta_name`` on NaN/overflow."""
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
    if (taken < 0).any():
        r = int(np.flatnonzero(taken < 0)[0])
        raise ParameterError(f"parameter {eta_name}={eta[r]:g}: gradient descent diverged (NaN/overflow) "
                             f"at step {-taken[r] - 1}; lower it")
    return GDResult(steps=taken, rec_steps=np.arange(T) * rec_every, loss=loss, final_loss=final_loss, log_norm=lognorm,
                    neuron_jump=nj, point_fit=pf, imbalance=imb, imbalance_max=imb_max, sign_flips=flips, U=U, b=b, ell=ell,
                    snaps_dir=sd, snaps_log=sl)


def gd_numpy(y: np.ndarray, U: np.ndarray, b: np.ndarray, ell: np.ndarray, eta: float, c: float, steps: int,
             renorm: int = 16, rec_every: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Plain per-step NumPy reference of the same log-scale GD, one run (U (m, n)); returns the
    final (U, b, ell) and the loss every ``rec_every`` steps. Used by tests and the benchmark."""
    U, b, ell = U.astype(float).copy(), b.astype(float).copy(), ell.astype(float).copy()
    n = U.shape[1]
    losses = []
    for step in range(steps):
        act = U > 0
        h = (np.exp(2 * ell) * b) @ (U * act)
        res = c / n * (y - h)
        if step % rec_every == 0:
            losses.append(c / (2 * n) * np.sum((y - h) ** 2))
        D = act * res
        gb = np.sum(U * D, axis=1)
        U = U + eta * b[:, None] * D
        b = b + eta * gb
        if (step + 1) % renorm == 0:
            nu = np.sqrt(0.5 * (b ** 2 + np.sum(U ** 2, axis=1)))
            ell, b, U = ell + np.log(nu), b / nu, U / nu[:, None]
    return U, b, ell, np.array(losses)


def balanced_state(U0: np.ndarray, s: np.ndarray, log_lam: float | np.ndarray) -> tuple[np.ndarray, ...]:
    """Log-scale state of the balanced init w_j = lam U0_j, a_j = s_j lam (||U0_j|| = 1)."""
    ell = np.broadcast_to(np.asarray(log_lam, float), s.shape).copy()
    return U0.copy(), s.astype(float).copy(), ell


def first_crossing(rec_steps: np.ndarray, series: np.ndarray, level: float) -> float:
    """Step (linearly interpolated between records) where ``series`` first reaches ``level``."""
    above = np.flatnonzero(series >= level)
    if above.size == 0:
        return np.nan
    k = above[0]
    if k == 0:
        return float(rec_steps[0])
    x0, x1, v0, v1 = rec_steps[k - 1], rec_steps[k], series[k - 1], series[k]
    return float(x0 + (level - v0) / (v1 - v0) * (x1 - x0))


def extrapolate(log_inv_lams: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """Least-squares line values = t0 + C / log(1/lam); returns (t0, C) (Theorem 2's 1/log rate)."""
    A = np.stack([np.ones_like(log_inv_lams), 1.0 / log_inv_lams], axis=1)
    coef, *_ = np.linalg.lstsq(A, values, rcond=None)
    return float(coef[0]), float(coef[1])


# ----------------------------------------------------------------------------- experiment helpers
def draw_instance(seed: int, n: int, m: int, labels: str, signs: str) -> tuple[np.ndarray, ...]:
    """Labels, unit init directions, output signs and mask of one seeded draw (CPU generator)."""
    from stagewise.relu_orthogonal.algorithm.algorithm import activation_mask, balanced_init, make_labels
    rng = np.random.default_rng(seed)
    y = make_labels(n, labels, rng)
    U0, s = balanced_init(m, n, signs, rng)
    return y, U0, s, activation_mask(U0, y, s)


def find_instances(base: int, count: int, n: int, m: int, labels: str, signs: str, gap: float = 0.3,
                   t_max: float = np.inf, tries: int = 2000, cover: bool = True) -> list[tuple[int, tuple]]:
    """First ``count`` seeds base, base+1, ... whose draw satisfies Assumption 4 (all points covered,
    no tie) with jumps separated by >= ``gap`` and the last jump before ``t_max`` (Algorithm 1, c = 1).
    ``cover=False`` drops the coverage requirement. Selection uses Algorithm 1 only, never training."""
    from stagewise.relu_orthogonal.algorithm.algorithm import algorithm1, merged_groups, min_gap
    found = []
    for seed in range(base, base + tries):
        inst = draw_instance(seed, n, m, labels, signs)
        lp = algorithm1(inst[0], inst[3], inst[2])
        if ((lp.uncovered.size == 0 or not cover) and lp.tie is None and merged_groups(lp) == 0 and lp.K
                and min_gap(lp) >= gap and lp.times[-1] <= t_max):
            found.append((seed, inst))
            if len(found) == count:
                break
    return found


def measured_jumps(res: GDResult, r: int, eta: float, log_inv_lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Neurons in the order they jumped in run r, and their accelerated jump times eta*step/log(1/lam)."""
    steps = res.neuron_jump[r]
    order = np.flatnonzero(steps >= 0)
    order = order[np.argsort(steps[order], kind="stable")]
    return order, eta * steps[order] / log_inv_lam


def record_at(res: GDResult, r: int, step: float) -> int:
    """Index of the record nearest to ``step``."""
    return int(np.clip(np.rint(step / (res.rec_steps[1] - res.rec_steps[0] if len(res.rec_steps) > 1 else 1)),
                       0, len(res.rec_steps) - 1))


def plateau_errors(res: GDResult, r: int, lp, eta: float, log_inv_lam: float) -> np.ndarray:
    """|L_GD - L^(k)| / L^(0) at the midpoints of the plateaus (t_k, t_{k+1}), k = 0..K-1 (Theorem 2)."""
    t = np.concatenate([[0.0], lp.times])
    mids = 0.5 * (t[:-1] + t[1:])
    idx = [record_at(res, r, tm * log_inv_lam / eta) for tm in mids]
    return np.abs(res.loss[r, idx] - lp.plateau_losses[:-1]) / lp.plateau_losses[0]


def exponent_errors(res: GDResult, r: int, lp, eta: float, log_inv_lam: float) -> np.ndarray:
    """max_j |tau_hat_j - tau_j| at plateau midpoints over neurons still unfitted, tau_hat = -log||w||/log(1/lam)."""
    t = np.concatenate([[0.0], lp.times])
    mids = 0.5 * (t[:-1] + t[1:])
    out = []
    for k, tm in enumerate(mids):
        i = record_at(res, r, tm * log_inv_lam / eta)
        tau_hat = -res.log_norm[r, i] / log_inv_lam
        tau = lp.exponents(np.array([tm]))[0]
        live = np.ones(len(tau), bool)
        for group in lp.members[:k]:
            live[group] = False
        out.append(np.max(np.abs(tau_hat - tau)[live]) if live.any() else 0.0)
    return np.array(out)


def steps_for(lp, log_inv_lam: float, eta: float, c: float, n: int, margin: float = 20.0) -> int:
    """Steps to pass the last predicted jump (10% margin) and converge after it (``margin`` residual
    e-foldings at the slowest fitted neuron's rate c ||y_S|| / n)."""
    if lp.K == 0:
        return int(margin / eta)
    slow = min(np.linalg.norm(lp.y[S]) for S in lp.fitted_sets)
    return int(np.ceil((1.1 * lp.times[-1] * log_inv_lam + margin * n / (c * slow)) / eta))


def jump_offsets_nats(lp, that: np.ndarray, log_inv_lam: float) -> np.ndarray:
    """(t_hat_k - t_k) log(1/lam) r_{j_k}: the jump-time error expressed as a log-norm offset (nats).

    Theorem 2's O(1/log(1/lam)) error comes from an O(1) offset in log ||w_j|| (initial overlap with
    the predicted direction, alignment and fitting transients); dividing by the jumping neuron's rate
    before its jump turns it into time. Expressed in nats it should not depend on lambda."""
    rate = lp.rates[np.arange(lp.K), lp.neurons]
    return (np.asarray(that) - lp.times) * log_inv_lam * rate


def plateau_error_scale(lp, log_inv_lam: float) -> np.ndarray:
    """Predicted size of the plateau-loss error at each midpoint (relative to L^(0)), k = 0..K-1.

    Two exponentials set it: the next neurons' outputs a_j ||w_j|| = lam^{2 tau_j(t)}, and the
    residual of the neuron fitted at t_k, which relaxes at rate 2 r_{j_k} in the original clock
    (linearisation of a balanced aligned neuron). Both are powers of lambda."""
    t = np.concatenate([[0.0], lp.times])
    out = []
    for k in range(lp.K):
        tm = 0.5 * (t[k] + t[k + 1])
        tau = lp.exponents(np.array([tm]))[0]
        live = lp.rates[k] > 0
        e_next = np.exp(-2 * log_inv_lam * tau[live].min()) if live.any() else 0.0
        e_fit = np.exp(-2 * lp.rates[k - 1, lp.neurons[k - 1]] * (tm - t[k]) * log_inv_lam) if k else 0.0
        out.append(max(e_next, e_fit))
    return np.array(out)


def norm_error_scale(lp, log_inv_lam: float) -> float:
    """Predicted relative deviation of the final squared norm from Eq. (15).

    A neuron j still live when S_k is fitted at t_k keeps components of relative size
    lam^{tau_j(t_k)} on S_k (they stop growing once the residual there vanishes); when j itself
    becomes of order one, its output on S_k is O(lam^{tau_j(t_k)}) and the fit is shared. So the
    deviation is of order lam^{min tau}, the amplitude (not the square) of the smallest exponent."""
    worst = 0.0
    for k in range(lp.K):
        tau = lp.tau[k + 1]
        live = (lp.rates[k] > 0) & (tau > 0)
        if live.any():
            worst = max(worst, float(np.exp(-log_inv_lam * tau[live].min())))
    return worst
