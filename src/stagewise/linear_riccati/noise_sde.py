"""The pure-noise SDE (4.1) of Section 4 (Proposition 4.1, ``thm-linear-riccati-noise``).

Label-noise GD itself is :func:`stagewise.linear_riccati.gradient_descent.gd` with ``label_noise``; this module
holds the Euler-Maruyama simulation of dW = dB a^T, da = W^T dB and its exact moment recursion."""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _em_kernel(W, a, h, steps, record_every, seed):  # pragma: no cover (compiled)
    np.random.seed(seed)
    M, d, _ = W.shape
    n_rec = steps // record_every + 1
    sv = np.zeros((n_rec, M, d))
    comm = np.zeros((n_rec, M))
    sq_w = np.zeros((n_rec, M))
    sq_a = np.zeros((n_rec, M))
    sh = np.sqrt(h)
    dB = np.zeros(d)
    b_new = np.zeros(d)
    for p in range(M):
        A, b = W[p].copy(), a[p].copy()
        r = 0
        for step in range(steps + 1):
            if step % record_every == 0:
                sv[r, p] = np.linalg.svd(A)[1]
                nw, na, c2 = 0.0, 0.0, 0.0
                for i in range(d):
                    nw += A[0, i] ** 2
                    na += b[i] ** 2
                    for j in range(d):
                        c2 += (A[0, i] * b[j] - b[i] * A[0, j]) ** 2
                comm[r, p] = np.sqrt(c2 / (nw * na)) if nw * na > 0 else 0.0
                sq_w[r, p] = (A ** 2).sum()
                sq_a[r, p] = na
                r += 1
            if step == steps:
                break
            for i in range(d):
                dB[i] = sh * np.random.standard_normal()
            for j in range(d):
                acc = b[j]
                for i in range(d):
                    acc += A[i, j] * dB[i]
                b_new[j] = acc
            for i in range(d):
                for j in range(d):
                    A[i, j] += dB[i] * b[j]
            for j in range(d):
                b[j] = b_new[j]
    return sv, comm, sq_w, sq_a


def sde_paths(d: int, n_paths: int, h: float, T: float, record_every: int, seed: int) -> dict:
    """Proposition 4.1 (``thm-linear-riccati-noise``): Euler-Maruyama for the pure-noise SDE (4.1), dW = (dB) a^T, da =
    W^T dB, from W(0) = I_d, a(0) = 0, with a constant step h (the paper's 'step ~ 1/sqrt(t)' is unclear). Records,
    per path: singular values of W, the normalized commutator ||[w_1, a]||_F / (||w_1|| ||a||) of the first row w_1
    with a (Prop. 4.1(c), where [u, v] = u v^T - v u^T), ||W||_F^2 and ||a||^2. Returns a dict with ``t`` and those
    records (``sv``, ``comm``, ``sq_w``, ``sq_a``), shaped (records, paths, ...). ``seed`` may be any
    non-negative int (a run's stream seed); it is reduced to 32 bits through ``np.random.SeedSequence``."""
    steps = int(round(T / h))
    W = np.repeat(np.eye(d)[None], n_paths, axis=0)
    a = np.zeros((n_paths, d))
    seed32 = int(np.random.SeedSequence(seed).generate_state(1)[0])   # the compiled kernel takes 32 bits
    sv, comm, sq_w, sq_a = _em_kernel(W, a, float(h), steps, int(record_every), seed32)
    t = np.arange(sv.shape[0]) * record_every * h
    return {"t": t, "sv": sv, "comm": comm, "sq_w": sq_w, "sq_a": sq_a}


def moments_discrete(d: int, h: float, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact expectations under Euler-Maruyama: u = E||W||_F^2, v = E||a||^2 obey u <- u + h d v, v <- v + h u
    (from W(0) = I, a(0) = 0), the discrete analogue of Prop. 4.1(a)'s proof (``thm-linear-riccati-noise``)."""
    u, v = np.empty(steps + 1), np.empty(steps + 1)
    u[0], v[0] = d, 0.0
    for m in range(steps):
        u[m + 1], v[m + 1] = u[m] + h * d * v[m], v[m] + h * u[m]
    return u, v


def moments_exact(d: int, t) -> tuple[np.ndarray, np.ndarray]:
    """Continuous-time moments of (4.1) from W(0) = I, a(0) = 0: E||W||_F^2 = d cosh(sqrt(d) t),
    E||a||^2 = sqrt(d) sinh(sqrt(d) t); both diverge (Prop. 4.1(a), ``thm-linear-riccati-noise``, derived)."""
    t = np.asarray(t, float)
    return d * np.cosh(np.sqrt(d) * t), np.sqrt(d) * np.sinh(np.sqrt(d) * t)

